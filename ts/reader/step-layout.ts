/** Where a run's steps are: only `steps.parquet`, only parts, both (or absorbed leftovers), none. */
export type StepLayout = 'compacted' | 'parts' | 'mixed' | 'empty';

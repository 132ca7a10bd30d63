/** Event kinds the recorder itself writes. */
export const RECORDER_EVENT_KINDS = {
  badRecord: 'bad_record',
  drops: 'recorder_drops',
  error: 'recorder_error',
  crash: 'crash',
  signal: 'signal',
  processExit: 'process_exit',
  close: 'recorder_close',
  resume: 'recorder_resume',
  /** A slower path taken because this runtime forbids the fast one (data.fallback says which). */
  fallback: 'recorder_fallback',
} as const;

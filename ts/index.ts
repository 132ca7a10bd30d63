/**
 * rlprobe: a crash-safe flight recorder for RL fine-tuning of language models.
 *
 *   const rec = new Recorder('runs/exp1', { algorithm: 'grpo' });
 *   rec.logStep({ step, loss, reward_mean, kl_mean });
 *   rec.close();
 *
 *   const run = RunReader.open('runs/exp1');
 *   run.view().series('kl_mean');
 */
export { Recorder } from './recorder/recorder.js';
export type { CloseSummary, EventOptions, RecorderCounters } from './recorder/recorder.js';
export type { RecorderOptions } from './recorder/options.js';
export { RunReader } from './reader/run-reader.js';
export type { StepFileInfo, StepLayout } from './reader/run-reader.js';
export { RunView } from './reader/run-view.js';
export { compactRun } from './compact.js';
export { diagnose } from './doctor/diagnose.js';
export type { Diagnosis, DiagnoseOptions, SkippedDetector } from './doctor/diagnose.js';
export type { EvidenceSample, Finding, Severity } from './doctor/finding.js';
export { formatDiagnosis, formatFinding } from './doctor/format.js';
export { RunWatcher } from './doctor/watch.js';
export { diffRuns } from './diff/run-diff.js';
export type { RunDiff } from './diff/run-diff.js';
export type { MetricComparison } from './diff/metric-diff.js';
export { formatRunDiff } from './diff/format.js';
export { buildReport } from './report/build-report.js';
export type { ChartMark, ReportChart, ReportEvent, ReportOptions, RunReport, SeriesSummary } from './report/build-report.js';
export { renderHtml } from './report/html.js';
export { renderMarkdown } from './report/markdown.js';
export type { MarkdownOptions } from './report/markdown.js';
export type { HaltAction, TickResult, WatchOptions } from './doctor/watch.js';
export { importTrl } from './import/trl.js';
export { importVerl } from './import/verl.js';
export { importJsonl } from './import/jsonl.js';
export type { JsonlImportOptions, JsonlMap } from './import/jsonl.js';
export type { ImportFormat, ImportOptions, ImportResult, ImportSource } from './import/write-import.js';
export { RlprobeError } from './errors.js';
export type { RlprobeErrorCode } from './errors.js';
export { SCHEMA_VERSION, RunManifestSchema } from './schema/manifest.js';
export type { RunManifest } from './schema/manifest.js';
export { RunEventSchema } from './schema/event.js';
export type { RunEvent } from './schema/event.js';
export { STEP_FIELDS } from './schema/step-record.js';
export type { StepRecord, StoredStepRecord } from './schema/step-record.js';
export type { SampleRecord, StoredSampleRecord, CaptureReason } from './schema/sample-record.js';
export { CAPTURE_REASONS } from './schema/sample-record.js';
export type { LogSamplesOptions, SamplingOptions } from './recorder/sampling.js';
export type { SampleQuery } from './reader/sample-stream.js';
export type { Migration } from './reader/migrations.js';
export { MIGRATIONS } from './reader/migrations.js';
export type { OpenOptions, SampleFileInfo } from './reader/run-reader.js';
export type { CompactResult, CompactProgress, RunCompaction } from './compact.js';

/**
 * The native binding, loaded through the napi-generated loader (native/index.js picks
 * the prebuilt package for this platform, or a locally built `.node` file).
 */
export {
  NativeRecorder,
  pushStep,
  compactSteps,
  compactSamples,
  compactSpans,
  readSpans,
  spanCounts,
  selectSamplesSync,
  selectSamplesAsync,
  sampleFiles,
  NativeSampleCursor,
  readSteps,
  stepColumns,
  stepFiles,
  stepFieldSpecs,
  writeFileAtomic,
  debugPanic,
  diagnoseRun,
  diagnoseRunAsync,
  doctorDetectors,
} from '../native/index.js';
export type {
  NativeCloseReport,
  NativeColumn,
  NativeCompactReport,
  NativeCounters,
  NativeRecorderOptions,
  NativeStepTable,
  NativeStepFiles,
  NativeSampleBatch,
  NativeSampleColumn,
  NativeSampleFiles,
  NativeSpanFilter,
  NativeSpanRead,
  NativeSpanKindCount,
  NativeDiagnosis,
  NativeDoctorOptions,
  NativeFinding,
} from '../native/index.js';

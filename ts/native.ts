/**
 * The native binding, loaded through the napi-generated loader (native/index.js picks
 * the prebuilt package for this platform, or a locally built `.node` file).
 */
export {
  NativeRecorder,
  pushStep,
  compactRun,
  readSteps,
  stepColumns,
  stepFiles,
  stepFieldSpecs,
  writeFileAtomic,
  debugPanic,
} from '../native/index.js';
export type {
  NativeCloseReport,
  NativeColumn,
  NativeCompactReport,
  NativeCounters,
  NativeRecorderOptions,
  NativeStepTable,
  NativeStepFiles,
} from '../native/index.js';

/**
 * `captureTrial`: copies a finished (or failed, or unfinished) Harbor trial directory into
 * a run, keyed to the training step, and expands its trajectory into spans. Capturing the
 * same trial again replaces the capture in place. Nothing from the trial is executed: files
 * are read as bytes, JSON is parsed as data.
 *
 * For a guarantee that covers the sandbox too, call it from the producer's own lifecycle
 * hook before the environment is torn down (after Harbor has downloaded the agent logs,
 * verifier output and artifacts into the trial directory): what is not in the trial
 * directory at that moment is what the ledger calls unknown.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';

import { RlprobeError } from '../errors.js';
import { CaptureOptionsSchema, parseOptions } from './capture-options.js';
import type { CaptureOptions } from './capture-options.js';
import { withCaptureLock, withCaptureLockSync } from './capture-lock.js';
import { collectTrial, copyCollected, outputInside, pruneTo } from './collect.js';
import { allLedgerEntries } from './ledger-file.js';
import { CAPTURE_FILE } from './manifest.js';
import type { CaptureManifest } from './manifest.js';
import { beginCapture, captureDir, captureFilesDir, finishCapture, finishedCaptureOf, readCaptureManifest, runIdOf, supersedeUnfinished } from './run-store.js';

export { readCaptureManifest };
import { safeRelative, stepsProblem } from './safe-path.js';
import { trialStepOf } from './trajectories.js';

export async function captureTrial(trialDir: string, options: CaptureOptions): Promise<CaptureManifest> {
  const o = parseOptions(CaptureOptionsSchema, 'capture', options);
  runIdOf(o.run); // a run directory, before anything is copied into it
  const trial = collectTrial(trialDir, o.maxFileBytes, outputInside(o.run, 'the run directory this capture writes into'));
  const finished = finishedCaptureOf(o.run, trial.info);
  if (finished !== null) {
    throw new RlprobeError('RLPROBE_STATE', `${trialDir} has no result.json, but the run already holds the finished capture of this trial (${finished}): not captured again unfinished`);
  }
  return withCaptureLock(o.run, trial.key, async () => {
    beginCapture(o.run, trial.key);
    const filesRoot = captureFilesDir(o.run, trial.key);
    mkdirSync(filesRoot, { recursive: true });
    // clear what an earlier capture left that this one will not write (a file that became a
    // directory, or the reverse, would block the copy), then copy, then drop failed copies
    pruneTo(filesRoot, new Set(trial.files));
    const entries = await copyCollected(trial, filesRoot);
    pruneTo(filesRoot, new Set(entries.filter((e) => e.status === 'collected').map((e) => e.path)));
    supersedeUnfinished(o.run, trial.key, trial.info, path.basename(trial.root));
    return finishCapture(o.run, {
      key: trial.key,
      step: o.step,
      sampleId: o.sampleId ?? null,
      groupId: o.groupId ?? null,
      context: o.context ?? {},
      trialDir: path.resolve(trialDir),
      stagedAt: null,
      info: trial.info,
      entries,
      maxSpans: o.maxSpans,
    });
  });
}


/**
 * Re-expands a capture's trajectories from its stored files with the parsers registered now
 * (`registerTrajectoryParser`): a trajectory captured raw becomes spans, and ids stay the
 * same, so expanding twice changes nothing. The files expanded are the ones the capture
 * recorded; `file` (a collected file) replaces the one of its agent directory — or is added
 * — and the choice is recorded, so a later expand keeps it.
 */
export function expandCapture(runDir: string, key: string, file?: string): CaptureManifest {
  const m = readCaptureManifest(runDir, key);
  // the manifest decides what is read and rewritten: it must be this capture's, and sane
  const problem = m.capture_key !== key ? `capture_key ${JSON.stringify(m.capture_key)} is not its directory's` : stepsProblem(m.trial?.steps);
  if (problem !== null) throw new RlprobeError('RLPROBE_BAD_MANIFEST', `${path.join(captureDir(runDir, key), CAPTURE_FILE)}: ${problem}`);
  // every entry: the manifest lists only the first of each reason when there are many
  const entries = [...allLedgerEntries(captureDir(runDir, key), m.ledger)];
  const collected = new Set(entries.filter((e) => e.status === 'collected').map((e) => e.path));
  let chosen: string[] | undefined = m.trajectories.map((t) => t.path).filter((p) => collected.has(p));
  if (chosen.length === 0) chosen = undefined;
  if (file !== undefined) {
    const safe = safeRelative(file);
    if (!safe.ok) throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid expand option file: ${safe.reason}`);
    if (!collected.has(safe.path)) {
      throw new RlprobeError('RLPROBE_INVALID_OPTION', `invalid expand option file: ${JSON.stringify(file)} is not a collected file of capture ${key}`);
    }
    const step = trialStepOf(safe.path);
    chosen = [...(chosen ?? []).filter((p) => trialStepOf(p) !== step), safe.path].sort();
  }
  const facts = {
    key: m.capture_key,
    step: m.step,
    sampleId: m.sample_id,
    groupId: m.group_id,
    context: m.source.context,
    trialDir: m.source.trial_dir,
    stagedAt: m.source.staged_at,
    info: m.trial,
    entries,
    maxSpans: m.spans.limit,
  };
  return withCaptureLockSync(runDir, key, () => finishCapture(runDir, facts, chosen));
}

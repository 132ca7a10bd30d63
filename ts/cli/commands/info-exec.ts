/** `probe info`, loaded only when it runs: info.ts declares its options and help. */
import path from 'node:path';

import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { runStatus, settleRunStatus } from '../../reader/run-status.js';
import { SurfaceReads } from '../../reader/surface-reads.js';
import { writerLock } from '../../reader/writer-lock.js';
import { RECORDER_EVENT_KINDS } from '../../schema/event-kinds.js';
import { ago, bytes, isoSeconds, table } from '../format.js';

export interface InfoArgs {
  run: string;
  json: boolean;
  context: BaseContext;
}

export async function execInfo(command: InfoArgs): Promise<number> {
  const reader = RunReader.open(command.run);
  const m = reader.manifest;
  // one damaged part of the run is reported, and the rest still shown
  const reads = new SurfaceReads();
  // one listing for the damaged, the foreign and the sample files: at a million steps the
  // samples are thousands of shards, each listing opening every footer
  const listed = reader.fileListing();
  for (const d of listed.damaged) reads.mark(d.surface, d.reason);
  const storage = reads.attempt('steps', null, () => reader.storage());
  const { files, absorbedLeftovers: leftovers, layout } = storage ?? { files: [], absorbedLeftovers: 0, layout: 'damaged' };
  const steps = reads.attempt('steps', null, () => reader.view(['step']).steps);
  let min = Infinity;
  let max = -Infinity;
  for (const s of steps ?? []) {
    if (s < min) min = s;
    if (s > max) max = s;
  }
  const columns = reads.attempt('steps', [] as string[], () => reader.stepColumns().map((c) => c.name));
  const eventsRead = reads.attempt('events', null, () => reader.eventsWithDiagnostics());
  const { events, skippedLines } = eventsRead ?? { events: [], skippedLines: 0 };
  const byKind: Record<string, number> = {};
  let dropped = 0;
  let droppedSamples = 0;
  // why rows were dropped: a full queue (older recorders give no reason), or failed writes
  const dropReasons = new Set<string>();
  for (const e of events) {
    byKind[e.kind] = (byKind[e.kind] ?? 0) + 1;
    if (e.kind === RECORDER_EVENT_KINDS.drops && typeof e.data.count === 'number') {
      dropReasons.add(e.data.reason === 'write_failed' ? 'failed writes' : 'queue full');
      if (e.data.record === 'sample') droppedSamples += e.data.count;
      else if (e.data.record !== 'span') dropped += e.data.count;
    }
  }
  const sampleFiles = reads.isDamaged('samples') ? null : listed.sampleFiles;
  const sampleRows = sampleFiles?.reduce((a, f) => a + f.rows, 0) ?? 0;
  const sampleRanks = [...new Set((sampleFiles ?? []).map((f) => f.rank))];
  const spanKinds = reads.attempt('spans', null, () => reader.spanCounts());
  const spanTotal = spanKinds?.reduce((a, c) => a + c.spans, 0) ?? 0;
  const trials = reads.attempt('trials', [], () => reader.trials());
  const unfinishedTrials = reads.attempt('trials', [], () => reader.unfinishedTrials());
  const foreign = listed.foreign;
  let droppedSpans = 0;
  for (const e of events) if (e.kind === RECORDER_EVENT_KINDS.drops && e.data.record === 'span' && typeof e.data.count === 'number') droppedSpans += e.data.count;
  // a damaged step layout settles nothing: the events alone say what they say
  const status = storage ? settleRunStatus(runStatus(events), { layout: storage.layout, lock: writerLock(reader.runDir) }) : runStatus(events);
  const last = events.at(-1) ?? null;
  const lastWrite = reads.attempt('steps', null, () => reader.lastWriteMs());
  const info = {
    run_dir: reader.runDir,
    manifest: m,
    layout,
    step_files: files.length,
    absorbed_leftovers: leftovers,
    bytes: files.reduce((a, f) => a + f.bytes, 0),
    // null: that part of the run is damaged (see `damaged`)
    rows: steps ? steps.length : null,
    first_step: steps?.length ? min : null,
    last_step: steps?.length ? max : null,
    columns,
    events: eventsRead ? events.length : null,
    events_by_kind: byKind,
    unreadable_event_lines: skippedLines,
    dropped_steps: dropped,
    samples: sampleFiles ? sampleRows : null,
    sample_files: sampleFiles?.length ?? 0,
    sample_bytes: sampleFiles?.reduce((a, f) => a + f.bytes, 0) ?? 0,
    sample_ranks: sampleRanks,
    rank_dirs: reader.rankDirs().length,
    dropped_samples: droppedSamples,
    spans: spanKinds ? spanTotal : null,
    spans_by_kind: spanKinds ?? [],
    dropped_spans: droppedSpans,
    trials: trials.length,
    trials_failed: trials.filter((t) => t.trial.exception !== null).length,
    trials_unfinished: unfinishedTrials.length,
    migrated_from: reader.adapter.migrated ? reader.adapter.fromVersion : null,
    bad_records: byKind[RECORDER_EVENT_KINDS.badRecord] ?? 0,
    status: { state: status.state, summary: status.summary },
    last_event: last,
    last_write: lastWrite === null ? null : new Date(lastWrite).toISOString(),
    /** Parts of the run that could not be read, with the error naming the file. */
    damaged: reads.damaged,
    /** Files skipped as not the recorder's (or copies), with why. */
    foreign_files: foreign,
  };
  // a damaged part is a failure to summarise the run: exit 1, after showing the rest
  const code = reads.damaged.length ? 1 : 0;
  if (command.json) {
    command.context.stdout.write(`${JSON.stringify(info, null, 2)}\n`);
    return code;
  }
  const damagedText = (surface: string) => (reads.isDamaged(surface) ? 'damaged (see below)' : null);
  const kinds = Object.entries(byKind)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const rows: Array<[string, string]> = [
    ['run', `${m.run_id}  (${m.algorithm}${m.model_name ? `, ${m.model_name}` : ''}, world size ${m.world_size})`],
    ['directory', reader.runDir],
    ['created', m.created_at],
    ['format', reader.adapter.migrated ? `schema_version ${reader.adapter.fromVersion}, migrated on read to ${m.schema_version}` : `schema_version ${m.schema_version}`],
    ['layout', storage ? `${layout}: ${files.length} file${files.length === 1 ? '' : 's'}, ${bytes(info.bytes)}${leftovers ? `, ${leftovers} absorbed part(s) awaiting cleanup` : ''}` : 'damaged (see below)'],
    ['steps', damagedText('steps') ?? (steps?.length ? `${min} … ${max}  (${steps.length} rows, ${columns.length} columns)` : 'none yet')],
    ['samples', damagedText('samples') ?? (sampleRows ? `${sampleRows} in ${info.sample_files} file${info.sample_files === 1 ? '' : 's'} (${bytes(info.sample_bytes)})${sampleRanks.length > 1 || sampleRanks[0] !== 0 ? `, ranks ${sampleRanks.join(', ')}` : ''}` : 'none')],
    ['spans', damagedText('spans') ?? (spanTotal ? (spanKinds ?? []).map((c) => `${c.kind} ${c.spans}${c.error ? ` (${c.error} error)` : ''}${c.open ? ` (${c.open} open)` : ''}`).join(', ') : 'none')],
    [
      'trials',
      trials.length || unfinishedTrials.length
        ? `${trials.length} captured${trials.length ? ` at ${new Set(trials.map((t) => t.step)).size} step(s)` : ''}${info.trials_failed ? `, ${info.trials_failed} failed` : ''}${unfinishedTrials.length ? `, ${unfinishedTrials.length} capture(s) unfinished` : ''}`
        : 'none',
    ],
    ['status', status.summary],
    ['events', damagedText('events') ?? `${events.length}${kinds ? `  (${kinds})` : ''}${skippedLines ? `; ${skippedLines} unreadable line(s) skipped` : ''}`],
    ['drops', dropped || droppedSamples || droppedSpans ? [dropped ? `${dropped} step records` : '', droppedSamples ? `${droppedSamples} samples` : '', droppedSpans ? `${droppedSpans} span writes` : ''].filter(Boolean).join(', ') + ` dropped (${[...dropReasons].sort().join('; ')})` : 'none'],
    ['bad records', String(info.bad_records || 'none')],
  ];
  if (last) rows.push(['last event', `${isoSeconds(last.timestamp)}  ${last.kind}${last.step !== null ? ` @ step ${last.step}` : ''}  ${last.message}`]);
  if (lastWrite !== null) rows.push(['last write', `${new Date(lastWrite).toISOString()} (${ago(Date.now() - lastWrite)})`]);
  for (const d of reads.damaged) rows.push(['damaged', `${d.surface}: ${d.error}`]);
  if (foreign.length) {
    const listed = foreign.map((f) => `${path.relative(reader.runDir, f.path)} (${f.surface}${f.rank ? `, rank ${f.rank}` : ''}): ${f.reason}`);
    rows.push(['foreign files', `${foreign.length} skipped: ${listed.join('; ')}`]);
  }
  command.context.stdout.write(`${table(rows)}\n`);
  return code;
}

import { Command, Option } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { RECORDER_EVENT_KINDS } from '../../schema/event.js';
import { ProbeCommand } from '../base-command.js';
import { ago, bytes, isoSeconds, table } from '../format.js';
import { runStatus } from '../run-status.js';

export class InfoCommand extends ProbeCommand {
  static paths = [['info']];
  static usage = Command.Usage({
    description: 'Summarise a recording: manifest, layout, step range, counts, drops, how it ended',
    examples: [
      ['Summarise a run', '$0 info runs/exp1'],
      ['The same as JSON', '$0 info runs/exp1 --json'],
    ],
  });

  run = Option.String({ name: 'run' });
  json = Option.Boolean('--json', false, { description: 'Print JSON instead of text' });

  async exec(): Promise<number> {
    const reader = RunReader.open(this.run);
    const m = reader.manifest;
    const { files, absorbedLeftovers: leftovers, layout } = reader.storage();
    const steps = reader.view(['step']).steps;
    let min = Infinity;
    let max = -Infinity;
    for (const s of steps) {
      if (s < min) min = s;
      if (s > max) max = s;
    }
    const columns = reader.stepColumns().map((c) => c.name);
    const { events, skippedLines } = reader.eventsWithDiagnostics();
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
    const sampleFiles = reader.sampleFiles();
    const sampleRows = sampleFiles.reduce((a, f) => a + f.rows, 0);
    const sampleRanks = [...new Set(sampleFiles.map((f) => f.rank))];
    const spanKinds = reader.spanCounts();
    const spanTotal = spanKinds.reduce((a, c) => a + c.spans, 0);
    const trials = reader.trials();
    const unfinishedTrials = reader.unfinishedTrials();
    let droppedSpans = 0;
    for (const e of events) if (e.kind === RECORDER_EVENT_KINDS.drops && e.data.record === 'span' && typeof e.data.count === 'number') droppedSpans += e.data.count;
    const status = runStatus(events);
    const last = events.at(-1) ?? null;
    const lastWrite = reader.lastWriteMs();
    const info = {
      run_dir: reader.runDir,
      manifest: m,
      layout,
      step_files: files.length,
      absorbed_leftovers: leftovers,
      bytes: files.reduce((a, f) => a + f.bytes, 0),
      rows: steps.length,
      first_step: steps.length ? min : null,
      last_step: steps.length ? max : null,
      columns,
      events: events.length,
      events_by_kind: byKind,
      unreadable_event_lines: skippedLines,
      dropped_steps: dropped,
      samples: sampleRows,
      sample_files: sampleFiles.length,
      sample_bytes: sampleFiles.reduce((a, f) => a + f.bytes, 0),
      sample_ranks: sampleRanks,
      rank_dirs: reader.rankDirs().length,
      dropped_samples: droppedSamples,
      spans: spanTotal,
      spans_by_kind: spanKinds,
      dropped_spans: droppedSpans,
      trials: trials.length,
      trials_failed: trials.filter((t) => t.trial.exception !== null).length,
      trials_unfinished: unfinishedTrials.length,
      migrated_from: reader.adapter.migrated ? reader.adapter.fromVersion : null,
      bad_records: byKind[RECORDER_EVENT_KINDS.badRecord] ?? 0,
      status: { state: status.state, summary: status.summary },
      last_event: last,
      last_write: lastWrite === null ? null : new Date(lastWrite).toISOString(),
    };
    if (this.json) {
      this.context.stdout.write(`${JSON.stringify(info, null, 2)}\n`);
      return 0;
    }
    const kinds = Object.entries(byKind)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    const rows: Array<[string, string]> = [
      ['run', `${m.run_id}  (${m.algorithm}${m.model_name ? `, ${m.model_name}` : ''}, world size ${m.world_size})`],
      ['directory', reader.runDir],
      ['created', m.created_at],
      ['format', reader.adapter.migrated ? `schema_version ${reader.adapter.fromVersion}, migrated on read to ${m.schema_version}` : `schema_version ${m.schema_version}`],
      ['layout', `${layout}: ${files.length} file${files.length === 1 ? '' : 's'}, ${bytes(info.bytes)}${leftovers ? `, ${leftovers} absorbed part(s) awaiting cleanup` : ''}`],
      ['steps', steps.length ? `${min} … ${max}  (${steps.length} rows, ${columns.length} columns)` : 'none yet'],
      ['samples', sampleRows ? `${sampleRows} in ${sampleFiles.length} file${sampleFiles.length === 1 ? '' : 's'} (${bytes(info.sample_bytes)})${sampleRanks.length > 1 || sampleRanks[0] !== 0 ? `, ranks ${sampleRanks.join(', ')}` : ''}` : 'none'],
      ['spans', spanTotal ? spanKinds.map((c) => `${c.kind} ${c.spans}${c.error ? ` (${c.error} error)` : ''}${c.open ? ` (${c.open} open)` : ''}`).join(', ') : 'none'],
      [
        'trials',
        trials.length || unfinishedTrials.length
          ? `${trials.length} captured${trials.length ? ` at ${new Set(trials.map((t) => t.step)).size} step(s)` : ''}${info.trials_failed ? `, ${info.trials_failed} failed` : ''}${unfinishedTrials.length ? `, ${unfinishedTrials.length} capture(s) unfinished` : ''}`
          : 'none',
      ],
      ['status', status.summary],
      ['events', `${events.length}${kinds ? `  (${kinds})` : ''}${skippedLines ? `; ${skippedLines} unreadable line(s) skipped` : ''}`],
      ['drops', dropped || droppedSamples || droppedSpans ? [dropped ? `${dropped} step records` : '', droppedSamples ? `${droppedSamples} samples` : '', droppedSpans ? `${droppedSpans} span writes` : ''].filter(Boolean).join(', ') + ` dropped (${[...dropReasons].sort().join('; ')})` : 'none'],
      ['bad records', String(info.bad_records || 'none')],
    ];
    if (last) rows.push(['last event', `${isoSeconds(last.timestamp)}  ${last.kind}${last.step !== null ? ` @ step ${last.step}` : ''}  ${last.message}`]);
    if (lastWrite !== null) rows.push(['last write', `${new Date(lastWrite).toISOString()} (${ago(Date.now() - lastWrite)})`]);
    this.context.stdout.write(`${table(rows)}\n`);
    return 0;
  }
}

/** `probe report`, loaded only when it runs: report.ts declares its options and help. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import type { BaseContext } from 'clipanion';

import { RunReader } from '../../reader/run-reader.js';
import { buildReport } from '../../report/build-report.js';
import { renderHtml } from '../../report/html.js';
import { renderMarkdown } from '../../report/markdown.js';
import { buildRunsReport } from '../../report/runs-report.js';
import { renderRunsHtml } from '../../report/runs-html.js';
import { renderRunsMarkdown } from '../../report/runs-markdown.js';
import { bytes } from '../format.js';
import { Progress } from '../progress.js';
import { terminalLine } from '../terminal-text.js';

/** A report rendered: HTML and Markdown (links relative to `linkBase`), and what it holds. */
interface Rendered {
  html: (linkBase: string) => string;
  md: (linkBase: string, htmlLink: string | undefined) => string;
  summary: string;
}

export interface ReportArgs {
  runs: string[];
  out: string | undefined;
  format: 'html' | 'md' | 'both';
  /** Only with one run (report.ts checks). */
  against: string | undefined;
  steps: number[] | undefined;
  perReason: number;
  buckets: number;
  samples: boolean;
  link: string | undefined;
  context: BaseContext;
}

export async function execReport(command: ReportArgs): Promise<number> {
  const readers = command.runs.map((r) => RunReader.open(r));
  const progress = new Progress(command.context.stderr, 'report');
  let stages = 0;
  const onProgress = (done: number, total: number, stage: string) => {
    stages = total;
    progress.update(done, total, stage);
  };
  const options = { steps: command.steps, samplesPerReason: command.perReason, buckets: command.buckets, samples: command.samples, onProgress };
  const rendered = readers.length === 1 ? await oneRun(command, readers[0], options) : await severalRuns(readers, options);
  progress.update(stages, stages, 'done');
  progress.done();
  if (command.format === 'md') {
    // links from standard output are relative to the current directory
    const md = rendered.md(command.out === undefined ? process.cwd() : path.dirname(path.resolve(command.out)), command.link);
    if (command.out === undefined) command.context.stdout.write(md);
    else {
      writeFileSync(command.out, md);
      command.context.stdout.write(`${terminalLine(`wrote ${command.out} (${bytes(Buffer.byteLength(md))}): ${rendered.summary}`)}\n`);
    }
    return 0;
  }
  const htmlPath = command.out ?? 'report.html';
  const base = path.dirname(path.resolve(htmlPath));
  const html = rendered.html(base);
  writeFileSync(htmlPath, html);
  command.context.stdout.write(`${terminalLine(`wrote ${htmlPath} (${bytes(Buffer.byteLength(html))}): ${rendered.summary}`)}\n`);
  if (command.format === 'both') {
    const mdPath = htmlPath.replace(/\.html?$/i, '') + '.md';
    // the Markdown sits beside the HTML, so a relative link survives moving both
    writeFileSync(mdPath, rendered.md(base, command.link ?? encodeURI(path.basename(htmlPath))));
    command.context.stdout.write(`${terminalLine(`wrote ${mdPath}`)}\n`);
  }
  return 0;
}

async function oneRun(command: ReportArgs, reader: RunReader, options: Parameters<typeof buildReport>[1]): Promise<Rendered> {
  const against = command.against === undefined ? undefined : RunReader.open(command.against);
  const report = await buildReport(reader, { ...options, against });
  return {
    html: (linkBase) => renderHtml(report, { linkBase }),
    md: (linkBase, htmlLink) => renderMarkdown(report, { htmlLink, linkBase }),
    summary: `${report.charts.length} charts, ${report.diagnosis.findings.length} findings, ${report.forensics.length} sample steps, ${report.events.total} events`,
  };
}

async function severalRuns(readers: RunReader[], options: Parameters<typeof buildRunsReport>[1]): Promise<Rendered> {
  const report = await buildRunsReport(readers, options);
  const sum = (f: (r: (typeof report.runs)[number]['report']) => number) => report.runs.reduce((n, r) => n + f(r.report), 0);
  return {
    html: (linkBase) => renderRunsHtml(report, { linkBase }),
    md: (linkBase, htmlLink) => renderRunsMarkdown(report, { htmlLink, linkBase }),
    summary: `${report.runs.length} runs, ${report.charts.length} charts, ${sum((r) => r.diagnosis.findings.length)} findings, ${sum((r) => r.forensics.length)} sample steps, ${sum((r) => r.events.total)} events`,
  };
}

/**
 * `probe` loads only what the command it runs needs: `probe --version`, `probe --help`,
 * a command's `--help` and `probe info` load none of the heavy parts of the library (zod,
 * the report and the uPlot it inlines, the MCP server and its SDK, the doctor's diagnosis,
 * the importers, DuckDB), and `--version` and `--help` not even the native addon. Every
 * module load costs start-up time on every command (issue 21: `probe info` ≤ 300 ms).
 *
 * The CLI runs as a child (`node --import tsx --import <tracer> ts/cli/bin.ts …`); the
 * tracer is a module-resolution hook (node:module `register`) that records every module
 * resolved, with the module that imported it, plus the CommonJS modules (the native addon
 * is one) found in require.cache at exit. Timing is left to `probe scale-bench`.
 */
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';

import * as nativeLoader from '../native/index.js';
import { Recorder } from '../ts/index.js';
import { QUIET, ROOT, cleanupTempDirs, runNode, tempDir } from './helpers/fixtures.js';
import type { ChildResult } from './helpers/fixtures.js';

/** The hooks: run on the loader's thread, so they append to the trace file themselves. */
const HOOKS = `
import { appendFileSync } from 'node:fs';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  // a machine without the native addon: its loader replaced by one that throws as it would
  if (process.env.RLPROBE_TEST_NO_ADDON && /\\/native\\/index\\.js$/.test(result.url)) {
    appendFileSync(out, (context.parentURL ?? '') + '\\t' + result.url + '\\n');
    return { url: process.env.RLPROBE_TEST_NO_ADDON, shortCircuit: true };
  }
  appendFileSync(out, (context.parentURL ?? '') + '\\t' + result.url + '\\n');
  return result;
}
`;

/** The preload (`--import`): registers the hooks, and lists the CommonJS modules at exit. */
function preload(hooksUrl: string): string {
  return `
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
const out = process.env.RLPROBE_TEST_TRACE;
register(${JSON.stringify(hooksUrl)}, { data: { out } });
const require = createRequire(import.meta.url);
process.on('exit', () => {
  for (const file of Object.keys(require.cache)) appendFileSync(out, 'require.cache\\t' + file + '\\n');
});
`;
}

interface Traced extends ChildResult {
  /** Every module resolved or found in require.cache: file URL or path → what loaded it. */
  loaded: Map<string, string>;
}

/** What must not load at start-up: a name for the message, and how its modules look. */
const HEAVY: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  { name: 'zod', pattern: /\/node_modules\/zod\// },
  // uPlot is read (not imported) by ts/report/html.ts: that module is the sign of it
  { name: 'uPlot', pattern: /\/node_modules\/uplot\// },
  { name: 'the MCP SDK', pattern: /\/node_modules\/@modelcontextprotocol\// },
  { name: 'DuckDB', pattern: /\/node_modules\/@duckdb\// },
  { name: 'the report (ts/report)', pattern: /\/ts\/report\// },
  // mcp/budget.ts is two constants and pure functions (probe mcp's --max-bytes default)
  { name: 'the MCP server (ts/mcp)', pattern: /\/ts\/mcp\/(?!budget\.ts$)/ },
  { name: "the doctor's diagnosis (ts/doctor/diagnose*)", pattern: /\/ts\/doctor\/diagnose/ },
  { name: 'the importers (ts/import)', pattern: /\/ts\/import\// },
  { name: 'the diff (ts/diff)', pattern: /\/ts\/diff\// },
  { name: 'the benchmarks (ts/bench)', pattern: /\/ts\/bench\// },
  { name: 'the dashboard server (ts/serve)', pattern: /\/ts\/serve\// },
];

/** The capture machinery (collecting, ledgers, trajectories): listing a run's trials reads only capture-files.ts. */
const TRIAL_CAPTURE = { name: 'the trial capture (ts/trials beyond its read side)', pattern: /\/ts\/trials\/(?!(capture-files|manifest|safe-path)\.ts$)/ };

/** The native addon: its loader and the .node file. `probe info` needs it, `--version` does not. */
const NATIVE_ADDON = { name: 'the native addon', pattern: /\/native\/index\.js$|\.node$/ };

let root: string;
let run: string;
let tracer: string;
/** native/index.js as it is on a machine without the addon: the same exports, and its error. */
let noAddon: string;

before(() => {
  root = tempDir('rlprobe-cli-startup-');
  const hooks = path.join(root, 'hooks.mjs');
  writeFileSync(hooks, HOOKS);
  tracer = path.join(root, 'trace.mjs');
  writeFileSync(tracer, preload(pathToFileURL(hooks).href));
  noAddon = path.join(root, 'no-addon.mjs');
  writeFileSync(
    noAddon,
    "const e = new Error('rlprobe: no native addon loads on this machine: test-platform.');\n" +
      "e.code = 'RLPROBE_NATIVE_MISSING';\nthrow e;\n" +
      `export let ${Object.keys(nativeLoader).join(', ')};\n`,
  );
  run = path.join(root, 'run');
  const rec = new Recorder(run, { ...QUIET, runId: 'startup', algorithm: 'grpo', captureEnvironment: false });
  for (let step = 0; step < 20; step++) rec.logStep({ step, reward_mean: step / 20, kl_mean: 0.01 });
  rec.logSamples([{ prompt_text: 'p', completion_text: 'c', reward_total: 1 }], { step: 19 });
  rec.close();
});

after(cleanupTempDirs);

let traces = 0;

async function traced(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Traced> {
  const out = path.join(root, `trace-${traces++}.txt`);
  writeFileSync(out, '');
  const r = await runNode(['--import', pathToFileURL(tracer).href, 'ts/cli/bin.ts', ...args], { cwd: ROOT, env: { ...env, RLPROBE_TEST_TRACE: out } });
  const loaded = new Map<string, string>();
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const url = line.slice(tab + 1);
    if (!loaded.has(url)) loaded.set(url, line.slice(0, tab));
  }
  return { ...r, loaded };
}

/** `a → b → c`: how a module came to be loaded, from the entry point (repository-relative). */
function chain(t: Traced, url: string): string {
  const shown = (u: string) => (u.startsWith('file:') ? path.relative(ROOT, new URL(u).pathname) : u === 'require.cache' ? '(require.cache)' : path.relative(ROOT, u));
  const steps = [shown(url)];
  const seen = new Set([url]);
  for (let at = t.loaded.get(url); at && !seen.has(at); at = t.loaded.get(at)) {
    seen.add(at);
    steps.unshift(shown(at));
  }
  return steps.join(' → ');
}

/** The forbidden modules `t` loaded, each with the chain of imports that loaded it. */
function violations(t: Traced, forbidden: ReadonlyArray<{ name: string; pattern: RegExp }>): string[] {
  const found: string[] = [];
  for (const { name, pattern } of forbidden) {
    const hit = [...t.loaded.keys()].find((url) => pattern.test(url.startsWith('file:') ? new URL(url).pathname : url));
    if (hit) found.push(`${name}: ${chain(t, hit)}`);
  }
  return found;
}

function assertOk(r: ChildResult, what: string): void {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

describe('probe start-up loads only what the command needs', () => {
  test('the tracer sees modules loaded on demand (so the checks below can fail)', async () => {
    const r = await traced(['doctor', run, '--json']);
    assertOk(r, 'probe doctor');
    assert.ok([...r.loaded.keys()].some((u) => u.includes('/node_modules/clipanion/')), 'clipanion is traced');
    const found = violations(r, [...HEAVY, NATIVE_ADDON]);
    assert.ok(found.some((v) => v.startsWith("the doctor's diagnosis")), `the tracer saw ts/doctor/diagnose.ts load:\n  ${found.join('\n  ')}`);
    assert.ok(found.some((v) => v.startsWith('the native addon')), `the tracer saw the native addon load:\n  ${found.join('\n  ')}`);
  });

  for (const args of [['--version'], ['--help'], ['report', '--help'], ['mcp', '--help'], ['serve', '--help'], ['import', 'tensorboard', '--help'], ['sql', '--help']]) {
    test(`probe ${args.join(' ')}: no heavy module, not even the native addon`, async () => {
      const r = await traced(args);
      assertOk(r, `probe ${args.join(' ')}`);
      assert.ok(r.stdout.length > 0);
      const found = violations(r, [...HEAVY, NATIVE_ADDON]);
      assert.deepEqual(found, [], `probe ${args.join(' ')} loaded:\n  ${found.join('\n  ')}`);
    });
  }

  test('probe --version: of the library, only the leaf modules that registration and help read', async () => {
    // what a command's declaration may import: constants in its help and options, the base
    // command's error type; each imports nothing heavy. A new one belongs here only if so.
    const allowed = ['errors.ts', 'version.ts', 'text/control-chars.ts', 'schema/sample-record.ts', 'mcp/budget.ts', 'sql/duckdb-loader.ts'];
    const r = await traced(['--version']);
    assertOk(r, 'probe --version');
    const library = [...r.loaded.keys()]
      .filter((u) => u.startsWith(pathToFileURL(path.join(ROOT, 'ts')).href + '/') && !u.includes('/ts/cli/'))
      .map((u) => path.relative(path.join(ROOT, 'ts'), new URL(u).pathname));
    const extra = library.filter((m) => !allowed.includes(m));
    assert.deepEqual(extra, [], `probe --version loaded library modules beyond the declarations' own:\n  ${extra.map((m) => chain(r, pathToFileURL(path.join(ROOT, 'ts', m)).href)).join('\n  ')}`);
  });

  test('probe info: the reader and nothing else heavy (no zod, report, MCP, doctor, importers, DuckDB)', async () => {
    const r = await traced(['info', run]);
    assertOk(r, 'probe info');
    assert.match(r.stdout, /^steps +0 … 19 {2}\(20 rows/m);
    assert.match(r.stdout, /^samples +1 in 1 file/m);
    assert.match(r.stdout, /^events +1 {2}\(recorder_close 1\)/m);
    // a well-formed manifest, events and an empty trial query pass their hand-written checks:
    // zod loads only to word what those checks reject (ts/schema/manifest-check.ts)
    const found = violations(r, [...HEAVY, TRIAL_CAPTURE]);
    assert.deepEqual(found, [], `probe info loaded:\n  ${found.join('\n  ')}`);
  });

  test('probe info on a wrong manifest: zod loads on demand and words the error (the tracer sees it)', async () => {
    const bad = path.join(root, 'bad-manifest');
    cpSync(run, bad, { recursive: true });
    const file = path.join(bad, 'manifest.json');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), world_size: 0 }));
    const r = await traced(['info', bad]);
    assert.equal(r.code, 1, `probe info: exit ${r.code}\n${r.stderr}`);
    assert.equal(r.stderr, `probe: ${file}: world_size: Too small: expected number to be >=1\n`);
    const found = violations(r, HEAVY);
    assert.ok(found.some((v) => v.startsWith('zod: ')), `the tracer saw zod load on demand:\n  ${found.join('\n  ')}`);
  });

  test('without the native addon: --version still answers, info fails with the loader\'s one line (no stack)', async () => {
    const version = await traced(['--version'], { RLPROBE_TEST_NO_ADDON: pathToFileURL(noAddon).href });
    assertOk(version, 'probe --version without the addon');
    const info = await traced(['info', run], { RLPROBE_TEST_NO_ADDON: pathToFileURL(noAddon).href });
    assert.equal(info.code, 1, `probe info without the addon: exit ${info.code}\n${info.stderr}`);
    assert.equal(info.stderr, 'probe: rlprobe: no native addon loads on this machine: test-platform.\n');
    assert.equal(info.stdout, '');
  });
});

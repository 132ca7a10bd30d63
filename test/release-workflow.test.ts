/**
 * The release workflow needs macOS and Windows runners and an npm token, so it cannot run here.
 * It is checked statically instead:
 *  - actionlint, with shellcheck on every `run:` script, finds nothing in .github/workflows/,
 *  - the build matrix builds exactly package.json's napi.targets, one for each npm/<platform>
 *    package the publish job publishes, and the test matrix only tests targets that were built,
 *  - the lint is shown to bite: copies of release.yml with one deliberate mistake each (an
 *    undefined job in `needs`, a matrix property that does not exist, an unquoted variable in a
 *    script) are each reported, so a clean result above is not a linter that checks nothing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { parseTriple } from '@napi-rs/cli';
import { load } from 'js-yaml';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const WORKFLOW_DIR = path.join(ROOT, '.github', 'workflows');
const RELEASE_WORKFLOW = path.join(WORKFLOW_DIR, 'release.yml');
const INSTALL_TIMEOUT = 300_000; // a cold `go install` downloads and compiles actionlint

interface LintResult {
  status: number | null;
  output: string;
}

/** Installs (or reuses) the pinned actionlint through the project's script; returns its path. */
function installActionlint(): string {
  const script = path.join(ROOT, 'scripts', 'install-actionlint.mjs');
  const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: INSTALL_TIMEOUT });
  assert.equal(r.status, 0, `${script} failed (exit ${r.status}, ${r.error?.message ?? 'no spawn error'}):\n${r.stderr}`);
  const binary = r.stdout.trim().split('\n').at(-1) ?? '';
  assert.ok(path.isAbsolute(binary), `${script} should print the binary's absolute path, printed: ${JSON.stringify(r.stdout)}`);
  return binary;
}

/** actionlint skips the `run:` scripts silently when shellcheck is missing; we want them checked. */
function assertShellcheckOnPath(): void {
  const r = spawnSync('shellcheck', ['--version'], { encoding: 'utf8' });
  assert.equal(
    r.status,
    0,
    `shellcheck is not on PATH (${r.error?.message ?? `exit ${r.status}`}): without it actionlint does not check the ` +
      'workflows\' run: scripts. Install it: apt-get install shellcheck (Debian/Ubuntu) or brew install shellcheck.',
  );
}

function lint(actionlint: string, files: string[], cwd: string): LintResult {
  const r = spawnSync(actionlint, ['-no-color', '-oneline', ...files], { cwd, encoding: 'utf8' });
  if (r.error) throw new Error(`running ${actionlint}: ${r.error.message}`);
  return { status: r.status, output: `${r.stdout}${r.stderr}`.trim() };
}

// ---- reading the workflow and the package layout ----

type Yaml = Record<string, unknown>;

/** The value at `keys` under `node`; fails naming the first key that is missing. */
function at(node: unknown, keys: string[], where: string): unknown {
  for (const [i, key] of keys.entries()) {
    assert.ok(node !== null && typeof node === 'object' && key in node, `${where}: missing ${keys.slice(0, i + 1).join('.')}`);
    node = (node as Yaml)[key];
  }
  return node;
}

/** The `target` of every entry of jobs.<job>.strategy.matrix.include in release.yml. */
function matrixTargets(workflow: unknown, job: string): string[] {
  const include = at(workflow, ['jobs', job, 'strategy', 'matrix', 'include'], 'release.yml');
  const where = `release.yml jobs.${job}.strategy.matrix.include`;
  assert.ok(Array.isArray(include) && include.length > 0, `${where} should list the targets`);
  return include.map((entry: unknown, i) => {
    const target = at(entry, ['target'], `${where}[${i}]`);
    assert.equal(typeof target, 'string', `${where}[${i}].target should be a Rust target triple`);
    return target as string;
  });
}

function readJson(file: string): Yaml {
  return JSON.parse(readFileSync(file, 'utf8')) as Yaml;
}

function sorted(values: Iterable<string>): string[] {
  return [...values].sort();
}

// ---- deliberate mistakes for the negative checks ----

interface Mistake {
  what: string;
  /** Text that occurs exactly once in release.yml, and what it becomes. */
  from: string;
  to: string;
  /** The actionlint rule that must report it, and a word its message must contain. */
  rule: string;
  mentions: string;
}

const MISTAKES: Mistake[] = [
  {
    what: 'publish needs a job that does not exist',
    from: 'needs: [build, test]',
    to: 'needs: [build, tests]',
    rule: 'job-needs',
    mentions: 'tests',
  },
  {
    what: 'a matrix property that is not defined',
    from: 'TARGET: ${{ matrix.target }}',
    to: 'TARGET: ${{ matrix.targte }}',
    rule: 'expression',
    mentions: 'targte',
  },
  {
    what: 'an unquoted variable in a run: script',
    from: 'build-native.mjs --target "$TARGET"',
    to: 'build-native.mjs --target $TARGET',
    rule: 'shellcheck',
    mentions: 'SC2086',
  },
];

function withMistake(source: string, m: Mistake): string {
  const occurrences = source.split(m.from).length - 1;
  assert.equal(occurrences, 1, `"${m.from}" should occur exactly once in release.yml to plant "${m.what}", found ${occurrences}`);
  return source.replace(m.from, m.to);
}

describe('release workflow', { timeout: INSTALL_TIMEOUT + 60_000 }, () => {
  let actionlint = '';
  before(() => {
    actionlint = installActionlint();
  });

  test('actionlint with shellcheck finds nothing in .github/workflows', () => {
    assertShellcheckOnPath();
    const files = readdirSync(WORKFLOW_DIR)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => path.join('.github', 'workflows', f));
    assert.ok(files.includes(path.join('.github', 'workflows', 'release.yml')), `no release.yml among ${files.join(', ')}`);
    const result = lint(actionlint, files, ROOT);
    assert.equal(result.status, 0, `actionlint reported problems in ${files.join(', ')}:\n${result.output}`);
    assert.equal(result.output, '', 'actionlint exited 0 but printed something');
  });

  test('the build matrix is exactly napi.targets, one target per npm/<platform> package', () => {
    const workflow = load(readFileSync(RELEASE_WORKFLOW, 'utf8'));
    const built = matrixTargets(workflow, 'build');
    assert.equal(new Set(built).size, built.length, `release.yml builds a target twice: ${built.join(', ')}`);

    const declared = at(readJson(path.join(ROOT, 'package.json')), ['napi', 'targets'], 'package.json') as string[];
    assert.deepEqual(sorted(built), sorted(declared), 'release.yml jobs.build matrix targets vs package.json napi.targets');

    // napi's own mapping: the one `napi artifacts` uses to put rlprobe.<platform>.node into npm/<platform>/
    const builtPlatforms = new Map(built.map((t) => [parseTriple(t).platformArchABI, t]));
    const npmDir = path.join(ROOT, 'npm');
    const packageDirs = readdirSync(npmDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    for (const platform of packageDirs) {
      const builtList = [...builtPlatforms.keys()].join(', ');
      assert.ok(builtPlatforms.has(platform), `npm/${platform} has no build matrix entry in release.yml (built: ${builtList})`);
      // the publish job finds release/rlprobe-<platform>-<version>.tgz by this name
      const name = readJson(path.join(npmDir, platform, 'package.json')).name;
      assert.equal(name, `rlprobe-${platform}`, `npm/${platform}/package.json name`);
    }
    assert.deepEqual(sorted(packageDirs), sorted(builtPlatforms.keys()), 'npm/ platform directories vs the platforms release.yml builds');

    const tested = matrixTargets(workflow, 'test');
    for (const target of tested) assert.ok(built.includes(target), `release.yml tests ${target}, which jobs.build does not build`);
  });

  for (const mistake of MISTAKES) {
    test(`actionlint catches ${mistake.what}`, () => {
      if (mistake.rule === 'shellcheck') assertShellcheckOnPath();
      const dir = mkdtempSync(path.join(tmpdir(), 'rlprobe-actionlint-'));
      try {
        const workflows = path.join(dir, '.github', 'workflows');
        mkdirSync(workflows, { recursive: true });
        const broken = path.join(workflows, 'release.yml');
        writeFileSync(broken, withMistake(readFileSync(RELEASE_WORKFLOW, 'utf8'), mistake));
        const result = lint(actionlint, [path.join('.github', 'workflows', 'release.yml')], dir);
        assert.equal(result.status, 1, `actionlint should exit 1 on ${mistake.what}; it exited ${result.status}:\n${result.output}`);
        const findings = result.output.split('\n');
        // only the planted mistake: anything else would mean the copy, not the mistake, is wrong
        for (const line of findings) {
          assert.match(line, new RegExp(`\\[${mistake.rule}\\]$`), `unexpected finding for ${mistake.what}:\n${result.output}`);
        }
        assert.ok(
          findings.some((line) => line.includes(mistake.mentions)),
          `actionlint's ${mistake.rule} finding should mention "${mistake.mentions}":\n${result.output}`,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

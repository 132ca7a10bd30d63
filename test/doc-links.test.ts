/**
 * Docs and code comments point only at files in the repository (issue 17).
 *
 * In README.md and docs/*.md: every relative link, every backticked repository path
 * (`crates/…/x.rs`, `ts/…/y.ts`, `docs/z.md#anchor`) and every repository path in running text
 * names a file that exists, every #anchor names a heading of its target (GitHub's slugs),
 * every backticked source file name (`collect.ts`) and every file a diagram names exists
 * somewhere in the repository, and every file the README's architecture tree names exists
 * where the tree puts it. In ts/, crates/, src/, scripts/, test/ and benches/: repository
 * paths named in the source exist (anchors included). Nowhere (docs included) a pointer out of
 * the repository: `/work/`, `../shared`, the retired format notes.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

import { REPO_ROOT } from './helpers/child.js';

const THIS_FILE = 'test/doc-links.test.ts';
const CODE_DIRS = ['ts', 'crates', 'src', 'scripts', 'test', 'benches'];
/** Top-level directories a root-relative repository path starts with. */
const TOP_DIRS = new Set([...CODE_DIRS, 'docs', 'native', 'npm', '.ci', '.github']);
/** Build output and installed packages: not part of the repository's text. */
const NOT_SOURCE = new Set(['node_modules', 'target', 'dist', '.git']);
/** Pointers out of the repository: the workplace, its shared folder, the retired format notes. */
const FOREIGN = ['/work/', '../shared', 'format-notes'];
/** Unmodified upstream files (Harbor): the paths they name are Harbor's, not ours. */
const UPSTREAM = 'test/fixtures/harbor/';
const SOURCE_FILE = /\.(rs|ts|mts|mjs|js|md)$/;
/**
 * A repository path in running text: a top-level directory, then a file with a source
 * extension (globs and `{a,b}` alternatives allowed), maybe an anchor.
 */
const REPO_PATH_IN_TEXT = /(?<![\w./-])((?:ts|crates|src|scripts|test|benches|docs|native)\/[\w./{},*-]*\.(?:rs|ts|mjs|js|md|toml))(#[\w-]+)?(?![\w])/g;

// ---- the repository's files

function walk(rel: string, out: string[]): string[] {
  for (const entry of readdirSync(path.join(REPO_ROOT, rel), { withFileTypes: true })) {
    if (NOT_SOURCE.has(entry.name)) continue;
    const child = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (rel || TOP_DIRS.has(entry.name)) walk(child, out);
    } else out.push(child);
  }
  return out;
}

const FILES = walk('', []);

const exists = (rel: string): boolean => existsSync(path.join(REPO_ROOT, rel));
const read = (rel: string): string => readFileSync(path.join(REPO_ROOT, rel), 'utf8');

/** `a/{b,c}.rs` → `a/b.rs`, `a/c.rs` (one level of braces, as the docs write them). */
function expandBraces(pattern: string): string[] {
  const m = /\{([^{}]*)\}/.exec(pattern);
  if (!m) return [pattern];
  return m[1].split(',').flatMap((alt) => expandBraces(pattern.slice(0, m.index) + alt + pattern.slice(m.index + m[0].length)));
}

/** Whether a repository path exists; a glob (`*`, `**`) must match at least one file. */
function pathExists(rel: string): boolean {
  if (!rel.includes('*')) return exists(rel);
  const source = rel
    .split(/(\*\*\/|\*)/)
    .map((part) => (part === '**/' ? '(?:.*/)?' : part === '*' ? '[^/]*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  const re = new RegExp(`^${source}$`);
  return FILES.some((f) => re.test(f));
}

/** A file at `name` (a file name, or the tail of a path) somewhere under `dir` ('' = anywhere). */
function existsUnder(dir: string, name: string): boolean {
  const prefix = dir ? `${dir.replace(/\/$/, '')}/` : '';
  const trimmed = name.replace(/\/$/, '');
  return FILES.some((f) => f.startsWith(prefix) && (f === `${prefix}${trimmed}` || f.endsWith(`/${trimmed}`) || f.includes(`/${trimmed}/`)));
}

// ---- markdown

/** GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/**
 * The text outside fenced code blocks and the text inside them, each with the other blanked
 * out (same offsets, so line numbers still hold).
 */
function splitFences(md: string): { prose: string; fenced: string } {
  let inFence = false;
  const prose: string[] = [];
  const fenced: string[] = [];
  for (const line of md.split('\n')) {
    const fence = /^\s*(```|~~~)/.test(line);
    if (fence) inFence = !inFence;
    const blank = ' '.repeat(line.length);
    prose.push(fence || inFence ? blank : line);
    fenced.push(inFence && !fence ? line : blank);
  }
  return { prose: prose.join('\n'), fenced: fenced.join('\n') };
}

const withoutFences = (md: string): string => splitFences(md).prose;

function anchorsOf(md: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(md).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = githubSlug(m[1]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

const lineAt = (text: string, offset: number): number => text.slice(0, offset).split('\n').length;

interface Ref {
  line: number;
  target: string;
  /** How the reference is written: a link, a backticked name, a path in running text or in a diagram. */
  kind: 'link' | 'code' | 'text' | 'diagram';
}

/** Source file names in fenced blocks (the docs' diagrams name the files of each stage). */
function fencedRefs(md: string): Ref[] {
  const { fenced } = splitFences(md);
  return [...fenced.matchAll(/(?<![\w./{}-])(\w[\w./{},*-]*\.(?:rs|ts|mjs|js))(?![\w])/g)].map((m) => ({ line: lineAt(md, m.index), target: m[1], kind: 'diagram' as const }));
}

/**
 * Relative links, backticked names and repository paths in running text, outside fenced
 * blocks; code spans may cross lines.
 */
function markdownRefs(md: string): Ref[] {
  const text = withoutFences(md);
  const refs: Ref[] = [];
  const spans = /`([^`]+)`/g;
  for (const m of text.matchAll(spans)) refs.push({ line: lineAt(text, m.index), target: m[1], kind: 'code' });
  const prose = text.replace(spans, (s) => ' '.repeat(s.length));
  const links = /\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
  for (const m of prose.matchAll(links)) {
    if (!/^[a-z]+:/i.test(m[1])) refs.push({ line: lineAt(text, m.index), target: m[1], kind: 'link' });
  }
  const running = prose.replace(links, (s) => ' '.repeat(s.length));
  for (const m of running.matchAll(REPO_PATH_IN_TEXT)) refs.push({ line: lineAt(text, m.index), target: m[1] + (m[2] ?? ''), kind: 'text' });
  return [...refs, ...fencedRefs(md)];
}

// ---- checks

/** What is wrong with `target` (a path, maybe with #anchor, relative to `base`), or undefined. */
function checkPath(target: string, base: string): string | undefined {
  const [file, anchor] = target.split('#', 2);
  const rel = file === '' ? base : path.posix.normalize(path.posix.join(path.posix.dirname(base), file));
  const missing = expandBraces(rel).filter((p) => !pathExists(p));
  if (missing.length > 0) return `${target}: no such file (${missing.join(', ')})`;
  if (anchor === undefined) return undefined;
  if (!rel.endsWith('.md')) return `${target}: an anchor into a file that is not markdown`;
  return anchorsOf(read(rel)).has(anchor) ? undefined : `${target}: ${rel} has no heading with anchor #${anchor}`;
}

/** A name in a diagram: a repository path exists as written; a shorter one exists somewhere. */
function checkDiagramName(name: string): string | undefined {
  if (TOP_DIRS.has(name.split('/')[0])) return checkPath(name, '');
  const missing = expandBraces(name).filter((n) => !existsUnder('', n));
  return missing.length === 0 ? undefined : `${name}: no file of that name in the repository`;
}

/** Backticked text that is a path into the repository: checked; anything else: undefined. */
function checkBackticked(code: string, doc: string): string | undefined {
  if (/[\s<>*{}$…]|:\/\//.test(code)) return undefined;
  const [file] = code.split('#', 1);
  if (TOP_DIRS.has(file.split('/')[0]) && file.includes('/')) return checkPath(code, '');
  if (!SOURCE_FILE.test(file)) return undefined;
  if (exists(path.posix.join(path.posix.dirname(doc), file))) return checkPath(code, doc);
  return existsUnder('', file) ? undefined : `${code}: no file of that name in the repository`;
}

function docProblems(doc: string): string[] {
  const problems: string[] = [];
  const md = read(doc);
  // the README's architecture tree names files relative to its entries: checked on its own
  const tree = doc === 'README.md' ? architectureTree(md) : undefined;
  const inTree = (line: number): boolean => tree !== undefined && line >= tree.firstLine && line < tree.firstLine + tree.lines.length;
  for (const ref of markdownRefs(md)) {
    if (ref.kind === 'diagram' && inTree(ref.line)) continue;
    const problem =
      ref.kind === 'code' ? checkBackticked(ref.target, doc)
      : ref.kind === 'diagram' ? checkDiagramName(ref.target)
      : checkPath(ref.target, ref.kind === 'link' ? doc : '');
    if (problem) problems.push(`${doc}:${ref.line}: ${problem}`);
  }
  return problems;
}

/** The first fenced block of the README's "## Architecture" section, and its first line number. */
function architectureTree(readme: string): { firstLine: number; lines: string[] } {
  const start = readme.indexOf('\n## Architecture');
  assert.ok(start >= 0, 'README.md has an "## Architecture" section');
  const open = readme.indexOf('```', start);
  const close = readme.indexOf('```', open + 3);
  return { firstLine: lineAt(readme, open) + 1, lines: readme.slice(readme.indexOf('\n', open) + 1, close).split('\n') };
}

/**
 * The README's architecture tree: a top-level entry (column 0) names files or directories from
 * the repository's root; an entry indented by two names them inside its top-level entry; file
 * names in the descriptions must exist inside their entry's directory.
 */
function architectureTreeProblems(readme: string): string[] {
  const { firstLine, lines } = architectureTree(readme);
  const problems: string[] = [];
  let top = '';
  let entryDir = '';
  lines.forEach((line, i) => {
    const where = `README.md:${firstLine + i}`;
    const indent = /^ */.exec(line)![0].length;
    // an entry: names joined by ", ", then its description
    const entry = indent <= 2 ? /^(\S+(?:,\s\S+)*)(?:\s+(.*))?$/.exec(line.trim()) : null;
    const [head, description] = entry ? [entry[1], entry[2] ?? ''] : ['', line];
    if (indent <= 2 && head) {
      const names = head.split(/,\s*/).map((n) => n.replace(/<.*$/, ''));
      const base = indent === 0 ? '' : top;
      const firstDir = names[0].includes('/') ? names[0].slice(0, names[0].lastIndexOf('/') + 1) : '';
      names.forEach((name, k) => {
        const rel = path.posix.join(base, k === 0 || name.includes('/') ? name : `${firstDir}${name}`);
        if (!exists(rel)) problems.push(`${where}: ${name}: no such file or directory (${rel})`);
      });
      const dir = names[0].endsWith('/') ? path.posix.join(base, names[0]) : path.posix.join(base, firstDir);
      if (indent === 0) top = dir;
      entryDir = dir;
    }
    for (const m of description.matchAll(/(?<![\w./-])(\w[\w./-]*\.(?:rs|ts|js|mjs|css))(?![\w])/g)) {
      const name = m[1];
      if (!existsUnder(entryDir, name) && !exists(name)) problems.push(`${where}: ${name}: not under ${entryDir || 'the root'}`);
    }
  });
  return problems;
}

const CODE_FILES = FILES.filter((f) => CODE_DIRS.some((d) => f.startsWith(`${d}/`)) && f !== THIS_FILE);
const DOCS = ['README.md', ...FILES.filter((f) => /^docs\/[^/]+\.md$/.test(f))];

/** Each pointer out of the repository in `text`, as `file:line: pointer`. */
function foreignPointers(file: string, text: string): string[] {
  const found: string[] = [];
  for (const needle of FOREIGN) {
    for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) found.push(`${file}:${lineAt(text, at)}: ${needle}`);
  }
  return found;
}

/** Text files only: a NUL byte marks a binary one (a built addon, a Parquet fixture). */
function readText(file: string): string | undefined {
  const bytes = readFileSync(path.join(REPO_ROOT, file));
  return bytes.includes(0) ? undefined : bytes.toString('utf8');
}

function codePathProblems(): string[] {
  const problems: string[] = [];
  for (const file of CODE_FILES) {
    const text = file.startsWith(UPSTREAM) ? undefined : readText(file);
    for (const m of text?.matchAll(REPO_PATH_IN_TEXT) ?? []) {
      const problem = checkPath(m[1] + (m[2] ?? ''), '');
      if (problem) problems.push(`${file}:${lineAt(text!, m.index)}: ${problem}`);
    }
  }
  return problems;
}

const listed = (problems: string[]): string => `\n  ${problems.join('\n  ')}`;

describe('references in docs and code', () => {
  test('GitHub slugs of headings like the ones in the docs', () => {
    assert.equal(githubSlug('Checksums (`rlprobe.checksums`)'), 'checksums-rlprobechecksums');
    assert.equal(githubSlug('Units: what samples, events and spans carry'), 'units-what-samples-events-and-spans-carry');
    assert.equal(githubSlug("The capture's spans"), 'the-captures-spans');
    assert.equal(githubSlug('capture.json (`format_version` 2)'), 'capturejson-format_version-2');
    assert.equal(githubSlug('Reading: which files hold a table'), 'reading-which-files-hold-a-table');
    assert.equal(githubSlug('A — B'), 'a--b');
    assert.deepEqual([...anchorsOf('# Top\n## Notes\n```\n# not a heading\n```\n## Notes\n')], ['top', 'notes', 'notes-1']);
  });

  test('the checks see a missing file, a missing anchor and a pointer out of the repository', () => {
    assert.deepEqual(foreignPointers('x.ts', '// see\n// /work/notes/a.md and ../shared/b, format-notes.md'), [
      'x.ts:2: /work/',
      'x.ts:2: ../shared',
      'x.ts:2: format-notes',
    ]);
    assert.match(checkPath('docs/no-such-doc.md', '') ?? '', /no such file/);
    assert.match(checkPath('docs/format.md#no-such-heading', '') ?? '', /no heading with anchor #no-such-heading/);
    assert.equal(checkPath('docs/format.md#spans', ''), undefined);
    assert.match(checkBackticked('crates/rlprobe-core/src/no_such.rs', 'README.md') ?? '', /no such file/);
    assert.match(checkBackticked('no-such-module.ts', 'README.md') ?? '', /no file of that name/);
    assert.equal(checkBackticked('result.json', 'README.md'), undefined, 'a run file, not a repository path');
    assert.deepEqual(
      markdownRefs('see [x](a.md#b) and `ts/y.ts`\n```\n[not](a link) a.rs\n```\n`c.rs`, crates/z.rs').map((r) => `${r.line}:${r.kind}:${r.target}`),
      ['1:code:ts/y.ts', '5:code:c.rs', '1:link:a.md#b', '5:text:crates/z.rs', '3:diagram:a.rs'],
    );
    assert.match(checkDiagramName('writer.rs') ?? '', /no file of that name/);
    assert.equal(checkDiagramName('spans/{batch,wire}.rs'), undefined);
    assert.equal(checkPath('crates/rlprobe-core/src/{ring,encoding}.rs', ''), undefined);
    assert.match(checkPath('crates/rlprobe-core/src/{ring,no_such}.rs', '') ?? '', /no such file \(crates\/rlprobe-core\/src\/no_such\.rs\)$/);
    assert.equal(checkPath('crates/*/src/**/*.rs', ''), undefined);
    assert.match(checkPath('ts/recorder/no-such-*.ts', '') ?? '', /no such file/);
  });

  test('the architecture tree check sees a file that moved out of its entry', () => {
    const tree = [
      '## Architecture',
      '',
      '```',
      'crates/rlprobe-core/   pure Rust',
      '  src/ring.rs            the ring',
      '  src/writer.rs          gone: the writer is a directory now',
      'ts/                    the facade',
      '  recorder/              span.ts, span-encoder.ts (moved to ts/wire/)',
      '```',
    ].join('\n');
    assert.deepEqual(architectureTreeProblems(`# x\n${tree}\n`), [
      'README.md:7: src/writer.rs: no such file or directory (crates/rlprobe-core/src/writer.rs)',
      'README.md:9: span-encoder.ts: not under ts/recorder/',
    ]);
  });

  for (const doc of DOCS) {
    test(`${doc}: the links, anchors and files it names exist`, () => {
      const problems = docProblems(doc);
      assert.deepEqual(problems, [], `${doc} points at what does not exist:${listed(problems)}`);
    });
  }

  test("README.md's architecture tree names files that exist", () => {
    const problems = architectureTreeProblems(read('README.md'));
    assert.deepEqual(problems, [], `the architecture tree names what does not exist:${listed(problems)}`);
  });

  test('the source names repository paths (and anchors) that exist', () => {
    const problems = codePathProblems();
    assert.deepEqual(problems, [], `source files point at what does not exist:${listed(problems)}`);
  });

  test('the source and the docs point at nothing outside the repository', () => {
    assert.ok(CODE_FILES.length > 100 && DOCS.length > 1, `scanned ${CODE_FILES.length} source files and ${DOCS.length} docs`);
    const found = [...CODE_FILES, ...DOCS].flatMap((file) => {
      const text = readText(file);
      return text === undefined ? [] : foreignPointers(file, text);
    });
    assert.deepEqual(found, [], `files point outside the repository:${listed(found)}`);
  });
});

/**
 * The module graph of ts/ has no cycles, neither between files nor between its layers
 * (the top-level directories and files of ts/: recorder, reader, doctor, trials, …), and
 * library code never imports from ts/cli/ (the CLI is a thin layer over the library, never
 * the other way round).
 *
 * The graph is built from the source, not from what happens to load: every relative
 * specifier of `import … from`, `import type … from`, `export … from`, `import '…'`,
 * `import('…')` and `import('…').Type` (type-only imports included: a cycle of types is a
 * cycle of layers all the same).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';

import { REPO_ROOT } from './helpers/child.js';

const TS_ROOT = path.join(REPO_ROOT, 'ts');
const CLI_DIR = path.join(TS_ROOT, 'cli') + path.sep;

type Graph = Map<string, string[]>;

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(full));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out.sort();
}

/** Every module specifier `file` names, static and dynamic. */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      // a computed specifier loads a user's file (a mapping module), never one of ours
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) found.push(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The .ts file a relative specifier (`./x.js`, `../dir/index.js`) names; null for a package
 * or a file outside ts/ (the native loader).
 */
function resolveSpecifier(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec);
  if (!base.startsWith(TS_ROOT + path.sep)) return null;
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, path.join(base, 'index.ts')];
  const hit = candidates.find((c) => c.endsWith('.ts') && existsSync(c));
  assert.ok(hit, `${path.relative(REPO_ROOT, from)}: cannot resolve ${JSON.stringify(spec)} to a .ts file`);
  return hit;
}

function buildGraph(files: string[]): Graph {
  const graph: Graph = new Map();
  for (const file of files) {
    const targets = specifiers(file)
      .map((s) => resolveSpecifier(file, s))
      .filter((t): t is string => t !== null);
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components with more than one module (or a self-import), each sorted. */
function stronglyConnected(graph: Graph): string[][] {
  // Tarjan's algorithm (recursive: the graph is a few hundred modules deep at most)
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strongConnect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        strongConnect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strongConnect(v);
  return components;
}

/**
 * One cycle per strongly connected component (a shortest one through its first member).
 * Breaking it may leave others in the same component: the messages below list them all.
 */
export function findCycles(graph: Graph): string[][] {
  return stronglyConnected(graph).map((c) => cycleThrough(graph, new Set(c), c[0]));
}

/** One concrete cycle `start → … → start` inside a component (breadth-first: a shortest one). */
function cycleThrough(graph: Graph, component: Set<string>, start: string): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at = v; at !== start; at = previous.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

const show = (file: string) => path.relative(TS_ROOT, file);

/** The layer of a module: its top-level directory under ts/, or its own name at the top. */
const layerOf = (file: string) => show(file).split(path.sep)[0].replace(/\.ts$/, '');

/** The layer graph, and for each layer edge one file edge that makes it (for the message). */
function layerGraph(graph: Graph): { layers: Graph; witness: Map<string, string> } {
  const layers: Graph = new Map();
  const witness = new Map<string, string>();
  for (const [from, targets] of graph) {
    const a = layerOf(from);
    if (!layers.has(a)) layers.set(a, []);
    for (const to of targets) {
      const b = layerOf(to);
      if (a === b) continue;
      if (!witness.has(`${a}→${b}`)) {
        witness.set(`${a}→${b}`, `${show(from)} → ${show(to)}`);
        layers.get(a)!.push(b);
      }
    }
  }
  return { layers, witness };
}

describe('module graph of ts/', () => {
  const graph = buildGraph(tsFiles(TS_ROOT));

  test('the cycle finder finds a cycle (so the checks below can fail)', () => {
    const synthetic: Graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    assert.deepEqual(findCycles(synthetic), [['a', 'b', 'c', 'a'], ['e', 'e']].reverse().sort((x, y) => x[0].localeCompare(y[0])));
    assert.deepEqual(findCycles(new Map([['a', ['b']], ['b', []]])), []);
  });

  test('the graph is the real one (files and edges were found)', () => {
    assert.ok(graph.size > 100, `only ${graph.size} modules under ts/`);
    const index = path.join(TS_ROOT, 'index.ts');
    assert.ok((graph.get(index) ?? []).length > 5, 'ts/index.ts should re-export several modules');
  });

  test('no import cycles', () => {
    const cycles = stronglyConnected(graph).map((c) => {
      const cycle = cycleThrough(graph, new Set(c), c[0]);
      const shown = cycle.map(show).join(' → ');
      // a cycle through fewer modules than its component has: name the rest too
      return cycle.length - 1 === c.length ? shown : `${shown}\n    (a cycle among: ${c.map(show).join(', ')})`;
    });
    assert.deepEqual(cycles, [], `import cycles in ts/:\n  ${cycles.join('\n  ')}`);
  });

  test('no cycles between layers (top-level directories of ts/)', () => {
    const { layers, witness } = layerGraph(graph);
    assert.ok(layers.has('recorder') && layers.has('reader') && layers.has('cli'), [...layers.keys()].join(', '));
    // every layer edge inside a tangle, with an import that makes it: all of them must go
    const cycles = stronglyConnected(layers).map((c) => {
      const inside = new Set(c);
      const edges = c.flatMap((a) => (layers.get(a) ?? []).filter((b) => inside.has(b)).map((b) => `    ${a} → ${b}: ${witness.get(`${a}→${b}`)}`));
      return `${cycleThrough(layers, inside, c[0]).join(' → ')}\n${edges.join('\n')}`;
    });
    assert.deepEqual(cycles, [], `cycles between layers of ts/ (each with the imports that make it):\n  ${cycles.join('\n  ')}`);
  });

  test('library code never imports from ts/cli/', () => {
    const offending: string[] = [];
    for (const [from, targets] of graph) {
      if (from.startsWith(CLI_DIR)) continue;
      for (const to of targets) if (to.startsWith(CLI_DIR)) offending.push(`${show(from)} → ${show(to)}`);
    }
    assert.deepEqual(offending, [], `library modules importing the CLI:\n  ${offending.join('\n  ')}`);
  });
});

/**
 * The directories `probe mcp` may read. Every run path a tool is given is resolved (against
 * the server's working directory when relative) and then through every symbolic link
 * (realpath); it is refused unless both the path as written and the real path lie inside
 * a root. So `runs/../../etc`, an absolute path elsewhere, and a link inside a root that
 * points out of it are all refused, naming the path and the roots.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';

import { inside } from '../files/inside.js';
import { ToolError } from './tool-error.js';

interface Root {
  /** As resolved from the command line (links not followed). */
  given: string;
  /** With every link followed. */
  real: string;
}

export class RunRoots {
  readonly cwd: string;
  private readonly roots: Root[];
  /** The working directory, links followed: paths under it are shown relative to it. */
  private readonly realCwd: string;

  /**
   * Throws an Error naming the root when one is not a directory (the command line checks
   * this first, as a usage error).
   */
  constructor(roots: readonly string[], cwd = process.cwd()) {
    this.cwd = cwd;
    this.realCwd = realpathSync(cwd);
    this.roots = roots.map((r) => {
      const given = path.resolve(cwd, r);
      const real = realpathSync(given);
      if (!statSync(real).isDirectory()) throw new Error(`root ${JSON.stringify(r)} is not a directory`);
      return { given, real };
    });
    if (this.roots.length === 0) throw new Error('no root directory');
  }

  /** The real paths of the roots, for listings and messages. */
  list(): string[] {
    return this.roots.map((r) => r.real);
  }

  private rootsText(): string {
    return this.roots.map((r) => r.real).join(', ');
  }

  /**
   * The real path of `p` when it lies inside a root. Throws ToolError (naming `field`, the
   * path and the roots) when it is outside, escapes through `..` or a symbolic link, or
   * does not exist.
   */
  resolve(p: string, field = 'run'): string {
    const absolute = path.resolve(this.cwd, p);
    const shown = JSON.stringify(p);
    if (!this.roots.some((r) => inside(r.given, absolute) || inside(r.real, absolute))) {
      throw new ToolError(`${field} ${shown} is outside the roots this server may read (${this.rootsText()}); pass a path inside one of them`);
    }
    let real: string;
    try {
      real = realpathSync(absolute);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ToolError(`${field} ${shown}: ${code === 'ENOENT' ? 'no such file or directory' : `cannot be resolved (${code ?? (error as Error).message})`} (resolved to ${absolute})`);
    }
    if (!this.roots.some((r) => inside(r.real, real))) {
      throw new ToolError(`${field} ${shown} leads outside the roots this server may read through a symbolic link (it is ${real}; roots: ${this.rootsText()})`);
    }
    return real;
  }

  /** How a real path is shown and given back: relative to the working directory when under it. */
  display(real: string): string {
    return inside(this.realCwd, real) ? path.relative(this.realCwd, real) || '.' : real;
  }
}

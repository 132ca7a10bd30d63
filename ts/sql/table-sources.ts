/**
 * Which files hold each table of a run, as the library's readers decide it (the native
 * listings: docs/format.md "Reading: which files hold a table"): steps from rank 0's
 * directory only, samples and spans from every rank directory; absorbed leftovers, shards
 * of an unfinished compaction and foreign files are left out by the listing itself. A
 * table with a damaged file is unreadable as a whole, never read around it.
 */
import { RlprobeError, native } from '../errors.js';
import { sampleFiles, spanFiles, stepFiles } from '../native.js';
import type { NativeSkippedFile } from '../native.js';
import { recordingDirs } from '../reader/rank-dirs.js';
import type { FileSurface, SkippedRunFile } from '../reader/run-reader.js';

export type SqlTable = FileSurface;

export const SQL_TABLES: readonly SqlTable[] = ['steps', 'samples', 'spans'];

/** The files of one table in one recording directory (the run, or a `rank-NNN/`), in read order. */
export interface SourceGroup {
  rank: number;
  dir: string;
  files: string[];
}

export interface TableSources {
  /** Directories holding at least one file of the table, in rank order. */
  groups: SourceGroup[];
  /** Why the table cannot be read (a damaged file, a listing that failed), or null. */
  unreadable: RlprobeError | null;
}

export interface RunSources {
  tables: Record<SqlTable, TableSources>;
  /** Files every reader skips (not the recorder's, a copy, another stream's table). */
  foreign: SkippedRunFile[];
}

interface Listing {
  files: string[];
  foreign: NativeSkippedFile[];
  damaged: NativeSkippedFile[];
}

/** The listings of `runDir` (an opened run) and of its rank directories. */
export function runSources(runDir: string): RunSources {
  const tables: Record<SqlTable, TableSources> = {
    steps: { groups: [], unreadable: null },
    samples: { groups: [], unreadable: null },
    spans: { groups: [], unreadable: null },
  };
  const foreign: SkippedRunFile[] = [];
  const add = (table: SqlTable, rank: number, dir: string, list: () => Listing) => {
    const sources = tables[table];
    let listing: Listing;
    try {
      listing = list();
    } catch (error) {
      if (!(error instanceof RlprobeError)) throw error;
      sources.unreadable ??= error;
      return;
    }
    for (const f of listing.foreign) foreign.push({ surface: table, rank, path: f.path, reason: f.reason });
    if (listing.damaged.length > 0) sources.unreadable ??= damagedError(table, listing.damaged);
    if (listing.files.length > 0) sources.groups.push({ rank, dir, files: listing.files });
  };
  add('steps', 0, runDir, () => {
    const l = native(() => stepFiles(runDir));
    return { files: l.files.map((f) => f.path), foreign: l.foreign, damaged: l.damaged };
  });
  for (const { rank, dir } of recordingDirs(runDir, null)) {
    add('samples', rank, dir, () => {
      const l = native(() => sampleFiles(dir));
      return { files: l.files.map((f) => f.path), foreign: l.foreign, damaged: l.damaged };
    });
    add('spans', rank, dir, () => {
      const l = native(() => spanFiles(dir));
      return { files: [...l.files, ...l.captures], foreign: l.foreign, damaged: l.damaged };
    });
  }
  return { tables, foreign };
}

/** Every file the listing names, of every table. */
export function listedFiles(sources: RunSources): string[] {
  return SQL_TABLES.flatMap((t) => sources.tables[t].groups.flatMap((g) => g.files));
}

function damagedError(table: SqlTable, damaged: readonly NativeSkippedFile[]): RlprobeError {
  const [first] = damaged;
  const more = damaged.length > 1 ? ` (and ${damaged.length - 1} more damaged file${damaged.length > 2 ? 's' : ''})` : '';
  // the reason names the file when it comes from the file's own check
  const what = first.reason.includes(first.path) ? first.reason : `${first.path}: ${first.reason}`;
  return new RlprobeError('RLPROBE_CORRUPT_FILE', `the ${table} cannot be read: ${what}${more}`);
}

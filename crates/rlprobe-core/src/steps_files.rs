//! Which files hold a run's steps, so that every step is read exactly once.
//!
//! A run may be compacted (`steps.parquet`), live or crashed (`steps/part-*.parquet`), or
//! both: a compaction interrupted after publishing `steps.parquet` but before deleting the
//! parts, or a compacted run that was resumed. The compacted table's footer lists the
//! parts it absorbed; those are skipped, every other part is read after it. Files the
//! recorder did not write, and copies, are skipped and listed (stream_files.rs); a damaged
//! part fails the read naming it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::layout::{STEPS_FILE, STEPS_PARTS_DIR};
use crate::parquet_io::ParquetFile;
use crate::stream_files::{
    damaged_error, drop_copies, open_parts, Absorbed, DamagedFile, SkippedFile, Stream,
};
use crate::table::Table;

/// An opened step (or span) file. Files are opened before any is read, so a concurrent
/// compaction (which unlinks parts) cannot change what this read sees.
pub struct TableSource {
    pub file: ParquetFile,
    pub compacted: bool,
}

impl TableSource {
    pub fn path(&self) -> &Path {
        &self.file.path
    }
}

/// A part a compacted file already holds, still on disk (deleted by the next compaction).
#[derive(Debug, Clone)]
pub struct PartRef {
    pub path: PathBuf,
    pub file_id: Option<String>,
}

pub struct TableSources {
    pub sources: Vec<TableSource>,
    /// Parts already inside the compacted file, still on disk (interrupted compaction).
    pub absorbed_leftovers: Vec<PartRef>,
    /// The smallest part index a new writer may use without colliding with a name on disk
    /// or one the compacted table lists.
    pub next_part: u64,
    /// Files skipped as not the recorder's (listed so readers can show them).
    pub foreign: Vec<SkippedFile>,
    /// Parts that cannot be read (not a regular file, a damaged footer): reads fail on them.
    pub damaged: Vec<DamagedFile>,
}

impl TableSources {
    /// Fails, naming the file, when a part is damaged: reading around it would silently
    /// lose its rows.
    pub fn require_readable(&self) -> Result<()> {
        damaged_error(&self.damaged).map_or(Ok(()), Err)
    }

    /// What a compaction merges: the parts outside the compacted file, and everything the
    /// new compacted file will have absorbed — those parts plus the leftovers of an earlier
    /// interrupted compaction (the old file held them, the new one does too, and they are
    /// deleted only after its rename: forgetting them would make them look new).
    pub fn parts_to_merge(&self) -> (Vec<PartRef>, Vec<PartRef>) {
        let parts: Vec<PartRef> = self
            .sources
            .iter()
            .filter(|s| !s.compacted)
            .map(|s| PartRef {
                path: s.file.path.clone(),
                file_id: s.file.file_id(),
            })
            .collect();
        let absorbed = parts
            .iter()
            .chain(&self.absorbed_leftovers)
            .cloned()
            .collect();
        (parts, absorbed)
    }
}

/// A resumed writer renames the compacted table into the parts directory (resume.rs). If
/// that happened between our listing of the parts and our open of the table, this read
/// would see neither: a part that appeared since the listing and carries a compacted
/// table's footer keys means it did, and the read starts again (a not-found error, which
/// `retry_while_files_move` retries). A writer's ordinary new part is no reason to.
fn demoted_since(dir: &Path, listed: &[(u64, ParquetFile)], compacted: &Path) -> Result<()> {
    let known: std::collections::HashSet<u64> = listed.iter().map(|(i, _)| *i).collect();
    for (index, path) in crate::layout::list_parts(dir)? {
        if known.contains(&index) {
            continue;
        }
        let was_compacted = ParquetFile::open(&path).is_ok_and(|f| {
            f.key_values()
                .any(|(k, _)| k == crate::layout::META_COMPACTED_PARTS)
        });
        if was_compacted {
            return Err(crate::error::Error::io(
                "opening (renamed into the parts as this read listed them)",
                compacted,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
    }
    Ok(())
}

/// Opens the step files of `run_dir`. Retries when a listed part vanishes mid-way
/// (a compaction absorbed it after we opened the older `steps.parquet`).
pub fn open_step_sources(run_dir: &Path) -> Result<TableSources> {
    open_compacted_sources(run_dir, STEPS_FILE, STEPS_PARTS_DIR, Stream::Steps)
}

/// The files of a table kept as one compacted file plus part files (`steps`, `spans`):
/// the compacted file first, then every part it did not absorb, in index order.
pub fn open_compacted_sources(
    run_dir: &Path,
    compacted_name: &str,
    parts_dir: &str,
    stream: Stream,
) -> Result<TableSources> {
    crate::atomic::retry_while_files_move(|| try_open(run_dir, compacted_name, parts_dir, stream))
}

fn try_open(
    run_dir: &Path,
    compacted_name: &str,
    parts_dir: &str,
    stream: Stream,
) -> Result<TableSources> {
    // Parts before steps.parquet: a compaction finishing in between then lists these parts
    // as absorbed (skipped). steps.parquet first would miss their rows: the old table lacks
    // them, and they are deleted by the time the parts are listed.
    let compacted_path = run_dir.join(compacted_name);
    let in_parts_dir = Path::new(compacted_name)
        .parent()
        .is_some_and(|p| p == Path::new(parts_dir));
    let listed = open_parts(
        &run_dir.join(parts_dir),
        stream,
        in_parts_dir.then(|| compacted_path.file_name().unwrap().to_str().unwrap()),
    )?;
    let mut foreign = listed.foreign;
    #[cfg(test)]
    tests::between_listing_and_open();
    let mut compacted = match ParquetFile::open(&compacted_path) {
        Ok(file) => Some(file),
        Err(e) if e.is_not_found() => {
            demoted_since(&run_dir.join(parts_dir), &listed.parts, &compacted_path)?;
            None
        }
        // the compacted table holds the list of absorbed parts: without it no part can be
        // placed, so the whole stream is unreadable (and a writer must not guess names)
        Err(e) => return Err(e),
    };
    let mut absorbed = Absorbed::default();
    if let Some(file) = &compacted {
        // another table under our name is foreign whatever its footer holds; ours must say
        // which parts it absorbed (a bad list fails the read, naming the file)
        let claims = match stream.schema_problem(&file.schema()) {
            Some(reason) => Err(reason),
            None => {
                let claims = Absorbed::of(file)?;
                claims
                    .conflict(listed.parts.iter().map(|(_, f)| f))
                    .map_or(Ok(claims), Err)
            }
        };
        match claims {
            Err(reason) => {
                foreign.push(SkippedFile {
                    path: file.path.clone(),
                    reason,
                });
                compacted = None;
            }
            Ok(claims) => absorbed = claims,
        }
    }
    let next_part = absorbed
        .next_part()
        .max(listed.max_index.map_or(0, |i| i + 1));
    let mut absorbed_leftovers = Vec::new();
    let mut parts = Vec::new();
    for (_, file) in listed.parts {
        if absorbed.contains(&file.name()) {
            absorbed_leftovers.push(PartRef {
                path: file.path.clone(),
                file_id: file.file_id(),
            });
        } else if let Some(original) = absorbed.copy_of(&file) {
            let reason = format!("a copy of {original} (the same rlprobe.file_id), whose rows {compacted_name} already holds");
            foreign.push(SkippedFile {
                path: file.path.clone(),
                reason,
            });
        } else {
            parts.push(file);
        }
    }
    let mut damaged = Vec::new();
    for (_, d) in listed.damaged {
        let name = d
            .path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        // a damaged copy of a part the compacted table holds costs nothing: compaction deletes it
        if absorbed.contains(&name) {
            absorbed_leftovers.push(PartRef {
                path: d.path,
                file_id: None,
            });
        } else {
            damaged.push(d);
        }
    }
    let mut seen = HashMap::new();
    let mut sources: Vec<TableSource> = compacted
        .map(|file| TableSource {
            file,
            compacted: true,
        })
        .into_iter()
        .collect();
    sources.extend(parts.into_iter().map(|file| TableSource {
        file,
        compacted: false,
    }));
    let sources = drop_copies(sources, |s| &s.file, &mut foreign, &mut seen);
    Ok(TableSources {
        sources,
        absorbed_leftovers,
        next_part,
        foreign,
        damaged,
    })
}

/// Reads every step of a run (all columns, or only `columns`), each exactly once,
/// columns in canonical order.
pub fn read_steps(run_dir: &Path, columns: Option<&[String]>) -> Result<Table> {
    read_steps_on(run_dir, columns, None)
}

/// The steps a live reader has not seen yet: the rows from the row group holding `from_row`
/// to the end. Rows only ever append (parts are appended, a compaction keeps their order),
/// so a follower that read `from_row` rows before reads only what is new; the table may
/// start a little earlier, at its row group's first row.
pub struct StepsTail {
    /// The row of the whole table that the tail's first row is (≤ `from_row`).
    pub first_row: usize,
    /// Rows of the whole table as this read listed it.
    pub total_rows: usize,
    pub table: Table,
}

/// Reads the rows of `run_dir`'s steps from the row group holding `from_row` onward
/// (all columns, or only `columns`, in canonical order); see [`StepsTail`].
pub fn read_steps_from(
    run_dir: &Path,
    from_row: usize,
    columns: Option<&[String]>,
) -> Result<StepsTail> {
    let sources = open_step_sources(run_dir)?;
    sources.require_readable()?;
    let mut share: RowShare = Vec::new();
    let mut at = 0usize;
    let mut first_row = None;
    for (i, s) in sources.sources.iter().enumerate() {
        let meta = s.file.metadata();
        for g in 0..meta.num_row_groups() {
            let n = meta.row_group(g).num_rows() as usize;
            if first_row.is_some() || at + n > from_row {
                first_row.get_or_insert(at);
                match share.last_mut() {
                    Some((file, groups)) if *file == i => groups.push(g),
                    _ => share.push((i, vec![g])),
                }
            }
            at += n;
        }
    }
    let mut table = read_row_share(&sources, columns, &share, None)?;
    table.sort_columns();
    Ok(StepsTail {
        first_row: first_row.unwrap_or(at),
        total_rows: at,
        table,
    })
}

/// `read_steps` on `threads` decoding threads (None: as many as pay off here).
fn read_steps_on(
    run_dir: &Path,
    columns: Option<&[String]>,
    threads: Option<usize>,
) -> Result<Table> {
    let sources = open_step_sources(run_dir)?;
    sources.require_readable()?;
    let rows = sources
        .sources
        .iter()
        .map(|s| s.file.rows() as usize)
        .sum::<usize>();
    let names = columns_to_read(&sources, columns);
    let threads = threads.unwrap_or_else(|| decode_threads(rows.saturating_mul(names.len())));
    let mut table = if threads <= 1 || names.is_empty() {
        read_column_group(&sources, columns, rows)?
    } else if names.len() >= threads {
        read_column_shares(&sources, &names, threads, rows)?
    } else {
        read_row_shares(&sources, columns, threads, rows)?
    };
    table.sort_columns();
    Ok(table)
}

/// Each of `threads` threads decodes its share of the columns from every file; the shares
/// are disjoint, so the tables are put side by side without a copy.
fn read_column_shares(
    sources: &TableSources,
    names: &[String],
    threads: usize,
    rows: usize,
) -> Result<Table> {
    let groups: Vec<Vec<String>> = (0..threads)
        .map(|t| names.iter().skip(t).step_by(threads).cloned().collect())
        .collect();
    let tables = crate::threads::on_threads(&groups, |g| {
        read_column_group(sources, Some(g.as_slice()), rows)
    });
    let mut merged = Table::default();
    for t in tables {
        let t = t?;
        merged.rows = t.rows;
        merged.names.extend(t.names);
        merged.columns.extend(t.columns);
    }
    Ok(merged)
}

/// A few columns of many rows (one series): each thread decodes a run of row groups, and
/// the pieces are appended in order.
fn read_row_shares(
    sources: &TableSources,
    columns: Option<&[String]>,
    threads: usize,
    rows: usize,
) -> Result<Table> {
    let shares = row_shares(sources, threads, rows);
    if shares.len() <= 1 {
        return read_column_group(sources, columns, rows);
    }
    let numbered: Vec<(usize, RowShare)> = shares.into_iter().enumerate().collect();
    let tables = crate::threads::on_threads(&numbered, |(n, share)| {
        // the first share makes room for every row: the others are appended to it
        let capacity = if *n == 0 { Some(rows) } else { None };
        read_row_share(sources, columns, share, capacity)
    });
    // any error (a damaged file, kinds that disagree between files): the read on one thread
    // gives it, naming the file it meets first, as a read of every column would
    let Ok(tables) = tables.into_iter().collect::<Result<Vec<Table>>>() else {
        return read_column_group(sources, columns, rows);
    };
    let mut tables = tables.into_iter();
    let mut merged = tables.next().expect("two shares or more");
    for t in tables {
        if merged.append_table(t).is_err() {
            return read_column_group(sources, columns, rows);
        }
    }
    Ok(merged)
}

/// Row groups of one file a row share reads, by index into `sources`.
type RowShare = Vec<(usize, Vec<usize>)>;

/// The files' row groups in read order, cut into at most `threads` runs of about equal rows.
fn row_shares(sources: &TableSources, threads: usize, rows: usize) -> Vec<RowShare> {
    let target = rows.div_ceil(threads).max(1);
    let mut shares: Vec<RowShare> = vec![Vec::new()];
    let mut in_share = 0usize;
    for (i, s) in sources.sources.iter().enumerate() {
        let meta = s.file.metadata();
        for g in 0..meta.num_row_groups() {
            if in_share >= target && shares.len() < threads {
                shares.push(Vec::new());
                in_share = 0;
            }
            let share = shares.last_mut().expect("never empty");
            match share.last_mut() {
                Some((file, groups)) if *file == i => groups.push(g),
                _ => share.push((i, vec![g])),
            }
            in_share += meta.row_group(g).num_rows() as usize;
        }
    }
    shares.retain(|s| !s.is_empty());
    shares
}

/// One row share read into a table, with room for `capacity` rows (None: its own).
fn read_row_share(
    sources: &TableSources,
    columns: Option<&[String]>,
    share: &RowShare,
    capacity: Option<usize>,
) -> Result<Table> {
    let share_rows: usize = share
        .iter()
        .map(|(i, groups)| {
            let meta = sources.sources[*i].file.metadata();
            groups
                .iter()
                .map(|&g| meta.row_group(g).num_rows() as usize)
                .sum::<usize>()
        })
        .sum();
    let mut table = Table {
        capacity_hint: capacity.unwrap_or(share_rows),
        ..Table::default()
    };
    for (i, groups) in share {
        let file = &sources.sources[*i].file;
        let end = table.rows
            + groups
                .iter()
                .map(|&g| file.metadata().row_group(g).num_rows() as usize)
                .sum::<usize>();
        let holds_any =
            columns.is_none_or(|c| file.schema().fields().iter().any(|f| c.contains(f.name())));
        if holds_any {
            file.read_groups_into(&mut table, columns, Some(groups))?;
        }
        table.finish_rows(end.max(table.rows));
    }
    Ok(table)
}

/// Values (rows × columns) from which a step read decodes on several threads: below it
/// starting them costs about what they save.
const PARALLEL_READ_MIN_VALUES: usize = 1 << 18;

/// Threads a read of `values` values decodes on: up to 4, as many as the machine has.
fn decode_threads(values: usize) -> usize {
    if values < PARALLEL_READ_MIN_VALUES {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// The columns a read asks for that some file holds, in the order first met.
fn columns_to_read(sources: &TableSources, columns: Option<&[String]>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in &sources.sources {
        for f in s.file.schema().fields() {
            let wanted = columns.is_none_or(|c| c.iter().any(|n| n == f.name()));
            if wanted && !names.iter().any(|n| n == f.name()) {
                names.push(f.name().clone());
            }
        }
    }
    names
}

/// Reads `columns` (or all) of every source, one after the other, into one table of
/// exactly `rows` rows: a file holding none of these columns still holds its rows.
fn read_column_group(
    sources: &TableSources,
    columns: Option<&[String]>,
    rows: usize,
) -> Result<Table> {
    let mut table = Table {
        capacity_hint: rows,
        ..Table::default()
    };
    for s in &sources.sources {
        let end = table.rows + s.file.rows() as usize;
        let holds_any = columns.is_none_or(|c| {
            s.file
                .schema()
                .fields()
                .iter()
                .any(|f| c.contains(f.name()))
        });
        if holds_any {
            s.file.read_into(&mut table, columns)?;
        }
        table.finish_rows(end.max(table.rows));
    }
    Ok(table)
}

/// The union of the step files' columns (from their footers only), canonical order.
pub fn step_schema(run_dir: &Path) -> Result<arrow::datatypes::SchemaRef> {
    let sources = open_step_sources(run_dir)?;
    sources.require_readable()?;
    let mut schemas = Vec::new();
    for s in &sources.sources {
        // only the columns a reader reads: another tool's text or struct columns whose
        // types differ between files must not make the column listing fail
        let schema = s.file.schema();
        let readable: Vec<_> = schema
            .fields()
            .iter()
            .filter(|f| {
                f.data_type() == &arrow::datatypes::DataType::Null
                    || crate::table::kind_of_arrow(f.data_type()).is_some()
            })
            .cloned()
            .collect();
        schemas.push(std::sync::Arc::new(arrow::datatypes::Schema::new(readable)));
    }
    crate::compact::union_schema(&schemas)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::compact::compact_steps;
    use crate::resume::demote_compacted_steps;
    use crate::testutil::tempdir;

    thread_local! {
        static BETWEEN: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
    }

    /// Runs the test's action once, between a read's listing of the parts and its open of
    /// the compacted table.
    pub(super) fn between_listing_and_open() {
        if let Some(f) = BETWEEN.with(|b| b.borrow_mut().take()) {
            f();
        }
    }

    /// Publishes step part `index` holding `steps`, with `columns(step)` as its values.
    fn write_part(run: &Path, index: u64, steps: std::ops::Range<usize>, columns: &[&str]) {
        let dir = run.join(STEPS_PARTS_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let mut table = Table::default();
        for (row, s) in steps.clone().enumerate() {
            table
                .column_mut("step", crate::schema::ColumnKind::I64)
                .unwrap()
                .push_number(s as f64);
            for (k, name) in columns.iter().enumerate() {
                // a null now and then, so validity is merged too
                if (s + k) % 7 != 3 {
                    let c = table
                        .column_mut(name, crate::schema::ColumnKind::F64)
                        .unwrap();
                    c.pad_to(row);
                    c.push_number(s as f64 * 10.0 + k as f64);
                }
            }
            table.finish_rows(row + 1);
        }
        crate::atomic::publish(&dir, &crate::layout::part_name(index), |file, tmp| {
            let f = crate::parquet_io::write_table(
                file,
                tmp,
                &table,
                crate::props::Codec::default(),
                Vec::new(),
            )?;
            Ok(((), f))
        })
        .unwrap();
    }

    fn cells(t: &Table) -> Vec<(String, Vec<Option<f64>>)> {
        t.names
            .iter()
            .zip(&t.columns)
            .map(|(n, c)| {
                let values = (0..t.rows).map(|r| c.scalar(r)).collect();
                (n.clone(), values)
            })
            .collect()
    }

    #[test]
    fn a_read_on_several_threads_equals_the_read_on_one_cell_for_cell() {
        let run = tempdir("parallel-read");
        // a compacted table, then parts: a column only in the table, late columns only
        // in the last part, a part holding no column of a thread's share
        write_part(&run, 0, 0..40, &["loss", "kl_mean", "early_only"]);
        compact_steps(&run).unwrap();
        write_part(&run, 1, 40..70, &["loss", "kl_mean"]);
        write_part(&run, 2, 70..75, &[]);
        write_part(
            &run,
            3,
            75..100,
            &["loss", "kl_mean", "extra.late", "reward_component.x"],
        );
        let one = read_steps_on(&run, None, Some(1)).unwrap();
        assert_eq!(one.rows, 100);
        assert_eq!(one.names.len(), 6);
        for threads in [2, 3, 4, 9] {
            let many = read_steps_on(&run, None, Some(threads)).unwrap();
            assert_eq!(many.rows, 100, "{threads} threads");
            assert_eq!(
                many.names, one.names,
                "{threads} threads: columns in canonical order"
            );
            assert_eq!(cells(&many), cells(&one), "{threads} threads");
        }
        let only: Vec<String> = ["extra.late", "step", "early_only"]
            .map(String::from)
            .to_vec();
        let a = read_steps_on(&run, Some(&only), Some(1)).unwrap();
        let b = read_steps_on(&run, Some(&only), Some(2)).unwrap();
        assert_eq!(cells(&b), cells(&a));
        assert_eq!(a.names.len(), 3);
        let late = a.column("extra.late").unwrap();
        assert_eq!(late.scalar(74), None);
        assert_eq!(late.scalar(76), Some(762.0));
    }

    #[test]
    fn a_few_columns_read_in_row_shares_equal_the_read_on_one_thread() {
        let run = tempdir("row-shares");
        // a compacted table of several row groups, then parts, one with a late column
        write_part(&run, 0, 0..150_000, &["loss"]);
        compact_steps(&run).unwrap();
        let sources = open_step_sources(&run).unwrap();
        assert!(sources.sources[0].file.metadata().num_row_groups() >= 3);
        write_part(&run, 1, 150_000..150_010, &["loss", "extra.late"]);
        write_part(&run, 2, 150_010..150_020, &[]);
        for only in [vec!["loss"], vec!["extra.late"], vec!["step", "loss"]] {
            let only: Vec<String> = only.into_iter().map(String::from).collect();
            let one = read_steps_on(&run, Some(&only), Some(1)).unwrap();
            assert_eq!(one.rows, 150_020);
            for threads in [2, 3, 4, 9] {
                let sources = open_step_sources(&run).unwrap();
                let shares = row_shares(&sources, threads, 150_020);
                assert!(
                    shares.len() > 1 && shares.len() <= threads,
                    "{threads}: {shares:?}"
                );
                let many = read_steps_on(&run, Some(&only), Some(threads)).unwrap();
                assert_eq!(many.names, one.names, "{only:?} on {threads} threads");
                assert_eq!(cells(&many), cells(&one), "{only:?} on {threads} threads");
            }
        }
    }

    #[test]
    fn a_tail_read_is_the_suffix_of_the_whole_read_whatever_the_layout() {
        let run = tempdir("tail-read");
        write_part(&run, 0, 0..150_000, &["loss"]);
        compact_steps(&run).unwrap();
        write_part(&run, 1, 150_000..150_010, &["loss", "extra.late"]);
        write_part(&run, 2, 150_010..150_020, &[]);
        let whole = read_steps(&run, None).unwrap();
        // a column no file of the tail holds is no column of it: compare the columns with a value
        let suffix = |from: usize| -> Vec<(String, Vec<Option<f64>>)> {
            cells(&whole)
                .into_iter()
                .map(|(n, v)| (n, v[from..].to_vec()))
                .filter(|(n, v)| n == "step" || v.iter().any(Option::is_some))
                .collect()
        };
        for from in [0, 1, 70_000, 149_999, 150_000, 150_005, 150_019] {
            let tail = read_steps_from(&run, from, None).unwrap();
            assert_eq!(tail.total_rows, 150_020);
            assert!(
                tail.first_row <= from,
                "{from}: starts at {}",
                tail.first_row
            );
            assert_eq!(tail.table.rows, 150_020 - tail.first_row, "{from}");
            let got: Vec<_> = cells(&tail.table)
                .into_iter()
                .filter(|(n, v)| n == "step" || v.iter().any(Option::is_some))
                .collect();
            assert_eq!(got, suffix(tail.first_row), "from {from}");
        }
        // parts are one row group each: a tail inside the parts starts at its part
        let tail = read_steps_from(&run, 150_012, None).unwrap();
        assert_eq!(tail.first_row, 150_010);
        // nothing new: no rows, the total still counted
        let none = read_steps_from(&run, 150_020, Some(&["loss".to_string()])).unwrap();
        assert_eq!(
            (none.first_row, none.total_rows, none.table.rows),
            (150_020, 150_020, 0)
        );
        // after a compaction of the parts, the same rows are where they were
        compact_steps(&run).unwrap();
        let after = read_steps_from(&run, 150_005, Some(&["step".to_string()])).unwrap();
        assert!(after.first_row <= 150_005);
        let steps = after.table.column("step").unwrap();
        assert_eq!(steps.scalar(150_005 - after.first_row), Some(150_005.0));
        assert_eq!(after.table.rows, 150_020 - after.first_row);
    }

    #[test]
    fn a_read_racing_a_resume_that_demotes_the_table_sees_every_step() {
        let run = tempdir("demote-race");
        write_part(&run, 0, 0..4, &[]);
        compact_steps(&run).unwrap();
        let at = run.clone();
        BETWEEN.with(|b| {
            *b.borrow_mut() = Some(Box::new(move || {
                demote_compacted_steps(&at).unwrap();
            }))
        });
        let t = read_steps(&run, None).unwrap();
        assert_eq!(t.rows, 4, "the read started again after the rename");
    }
}

//! Which files hold a run's steps, so that every step is read exactly once.
//!
//! A run may be compacted (`steps.parquet`), live or crashed (`steps/part-*.parquet`), or
//! both: a compaction interrupted after publishing `steps.parquet` but before deleting the
//! parts, or a compacted run that was resumed. The compacted table's footer lists the
//! parts it absorbed; those are skipped, every other part is read after it.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::layout::{
    list_parts, part_index, META_COMPACTED_PARTS, META_NEXT_PART, STEPS_FILE, STEPS_PARTS_DIR,
};
use crate::parquet_io::{footer_metadata_of, read_into};
use crate::table::Table;

/// An opened step (or span) file. Files are opened before any is read, so a concurrent
/// compaction (which unlinks parts) cannot change what this read sees.
pub struct TableSource {
    pub path: PathBuf,
    pub file: File,
    pub compacted: bool,
}

pub struct TableSources {
    pub sources: Vec<TableSource>,
    /// Parts already inside `steps.parquet`, still on disk (interrupted compaction).
    pub absorbed_leftovers: Vec<PathBuf>,
    /// The smallest part index a new writer may use without colliding with a name the
    /// compacted table lists.
    pub next_part: u64,
}

/// The part names and next part index a compacted table's footer records.
pub fn compacted_footer(file: &File) -> io::Result<(HashSet<String>, u64)> {
    let mut absorbed = HashSet::new();
    let mut next = 0;
    for (k, v) in footer_metadata_of(file.try_clone()?)? {
        if k == META_COMPACTED_PARTS {
            absorbed = parse_name_list(&v);
        } else if k == META_NEXT_PART {
            next = v.trim().parse().unwrap_or(0);
        }
    }
    Ok((absorbed, next))
}

/// Parses the JSON array of part names we write (`["part-00000.parquet",…]`).
pub fn parse_name_list(v: &str) -> HashSet<String> {
    v.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn name_list_json(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!("[{}]", quoted.join(","))
}

/// Opens the step files of `run_dir`. Retries when a listed part vanishes mid-way
/// (a compaction absorbed it after we opened the older `steps.parquet`).
pub fn open_step_sources(run_dir: &Path) -> io::Result<TableSources> {
    open_compacted_sources(run_dir, STEPS_FILE, STEPS_PARTS_DIR)
}

/// The files of a table kept as one compacted file plus part files (`steps`, `spans`):
/// the compacted file first, then every part it did not absorb, in index order.
pub fn open_compacted_sources(run_dir: &Path, compacted_name: &str, parts_dir: &str) -> io::Result<TableSources> {
    crate::atomic::retry_while_files_move(|| try_open(run_dir, compacted_name, parts_dir))
}

fn try_open(run_dir: &Path, compacted_name: &str, parts_dir: &str) -> io::Result<TableSources> {
    // Parts before steps.parquet: a compaction finishing in between then lists these parts
    // as absorbed (skipped). steps.parquet first would miss their rows: the old table lacks
    // them, and they are deleted by the time the parts are listed.
    let mut parts = Vec::new();
    for (index, path) in list_parts(&run_dir.join(parts_dir))? {
        // NotFound here means a compaction absorbed it after our listing: retry.
        let file = File::open(&path)?;
        parts.push((index, path, file));
    }
    let mut sources = Vec::new();
    let mut absorbed = HashSet::new();
    let mut next_part = 0;
    let compacted_path = run_dir.join(compacted_name);
    match File::open(&compacted_path) {
        Ok(file) => {
            (absorbed, next_part) = compacted_footer(&file)?;
            sources.push(TableSource { path: compacted_path, file, compacted: true });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut absorbed_leftovers = Vec::new();
    for (index, path, file) in parts {
        next_part = next_part.max(index + 1);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if absorbed.contains(&name) {
            absorbed_leftovers.push(path);
            continue;
        }
        sources.push(TableSource { path, file, compacted: false });
    }
    for name in &absorbed {
        if let Some(i) = part_index(name) {
            next_part = next_part.max(i + 1);
        }
    }
    Ok(TableSources { sources, absorbed_leftovers, next_part })
}

/// Reads every step of a run (all columns, or only `columns`), each exactly once,
/// columns in canonical order.
pub fn read_steps(run_dir: &Path, columns: Option<&[String]>) -> io::Result<Table> {
    let sources = open_step_sources(run_dir)?;
    let mut table = Table::default();
    for s in &sources.sources {
        table.capacity_hint += crate::parquet_io::row_count(s.file.try_clone()?)? as usize;
    }
    for s in sources.sources {
        read_into(s.file, &mut table, columns)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", s.path.display())))?;
    }
    table.sort_columns();
    Ok(table)
}

/// The union of the step files' columns (from their footers only), canonical order.
pub fn step_schema(run_dir: &Path) -> io::Result<arrow::datatypes::SchemaRef> {
    let sources = open_step_sources(run_dir)?;
    let mut schemas = Vec::new();
    for s in &sources.sources {
        // only the columns a reader reads: another tool's text or struct columns whose
        // types differ between files must not make the column listing fail
        let schema = crate::parquet_io::arrow_schema(s.file.try_clone()?)?;
        let readable: Vec<_> = schema
            .fields()
            .iter()
            .filter(|f| f.data_type() == &arrow::datatypes::DataType::Null || crate::table::kind_of_arrow(f.data_type()).is_some())
            .cloned()
            .collect();
        schemas.push(std::sync::Arc::new(arrow::datatypes::Schema::new(readable)));
    }
    crate::compact::union_schema(&schemas)
}

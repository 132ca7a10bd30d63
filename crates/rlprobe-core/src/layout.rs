//! Names and places inside a run directory (docs/format.md#layout).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

pub const MANIFEST_FILE: &str = "manifest.json";
pub const STEPS_FILE: &str = "steps.parquet";
pub const STEPS_PARTS_DIR: &str = "steps";
pub const EVENTS_FILE: &str = "events.jsonl";
pub const PART_PREFIX: &str = "part-";
pub const SAMPLES_DIR: &str = "samples";
pub const SHARD_PREFIX: &str = "shard-";
/// Spans (an additive extension, docs/format.md#spans): live parts `spans/part-*.parquet`
/// and their compaction `spans/spans.parquet`, both inside `spans/`.
pub const SPANS_DIR: &str = "spans";
pub const SPANS_FILE: &str = "spans/spans.parquet";
/// In `steps/` and `samples/`: a zero-row file whose schema is the union of the columns of
/// the directory's files (columns_file.rs). Named to sort before `part-` and `shard-`.
pub const COLUMNS_FILE: &str = "columns.parquet";
/// Captured trials (an additive extension, docs/format.md#trials): one directory per
/// capture, `trials/<capture key>/`, holding its manifest, its copied files and the spans
/// it expanded into, `trials/<capture key>/spans.parquet`.
pub const TRIALS_DIR: &str = "trials";
pub const CAPTURE_SPANS_FILE: &str = "spans.parquet";
/// A capture's manifest, written last: a capture without it is unfinished and not read.
pub const CAPTURE_MANIFEST_FILE: &str = "capture.json";
/// Rows per compacted sample shard (the Python package's shard size).
pub const SAMPLE_SHARD_ROWS: usize = 4096;
/// Footer key of a compacted sample shard: the id shared by the shards one compaction
/// wrote (the first shard's name)...
pub const META_COMPACTION: &str = "rlprobe.compaction";
/// ...and how many shards it wrote: a compaction counts only once all are present.
pub const META_COMPACTION_SHARDS: &str = "rlprobe.compaction_shards";
/// Held (flock) by a recorder's writer for its whole life: one writer per run directory.
pub const WRITER_LOCK_FILE: &str = ".writer.lock";
/// Held (flock) while compacting, so two compactions never interleave.
pub const COMPACT_LOCK_FILE: &str = ".compact.lock";
/// Footer key of a compacted table: the part files it absorbed (a JSON array of names).
pub const META_COMPACTED_PARTS: &str = "rlprobe.compacted_parts";
/// Footer key of a compacted table: the next part index a writer may use.
pub const META_NEXT_PART: &str = "rlprobe.next_part";
/// Footer key of a compacted table: the file ids of the parts it absorbed (a JSON array in
/// the order of `rlprobe.compacted_parts`, "" for a part without one), so a part on disk
/// under a listed name is known to be that part and not another file.
pub const META_COMPACTED_IDS: &str = "rlprobe.compacted_ids";
/// Footer key of every file rlprobe writes: an id unique to that file, so a copy of it
/// under another name is recognised (and read once).
pub const META_FILE_ID: &str = "rlprobe.file_id";

/// `part-00012.parquet` → 12.
pub fn part_index(name: &str) -> Option<u64> {
    name.strip_prefix(PART_PREFIX)?
        .strip_suffix(".parquet")?
        .parse()
        .ok()
}

pub fn part_name(index: u64) -> String {
    format!("{PART_PREFIX}{index:05}.parquet")
}

/// `shard-00003.parquet` → 3.
pub fn shard_index(name: &str) -> Option<u64> {
    name.strip_prefix(SHARD_PREFIX)?
        .strip_suffix(".parquet")?
        .parse()
        .ok()
}

pub fn shard_name(index: u64) -> String {
    format!("{SHARD_PREFIX}{index:05}.parquet")
}

/// Published part files in `dir`, in index order (numeric, so part-100000 follows part-99999).
pub fn list_parts(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    list_numbered(dir, part_index)
}

/// Sample shards in `dir`, in index order.
pub fn list_shards(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    list_numbered(dir, shard_index)
}

fn list_numbered(dir: &Path, index_of: fn(&str) -> Option<u64>) -> Result<Vec<(u64, PathBuf)>> {
    let listing = list_stream_dir(dir)?;
    let mut found: Vec<(u64, PathBuf)> = listing.parts.into_iter().chain(listing.shards).collect();
    found.retain(|(_, p)| index_of(&p.file_name().unwrap_or_default().to_string_lossy()).is_some());
    found.sort();
    Ok(found)
}

/// The entries of a stream directory (`steps/`, `samples/`, `spans/`), sorted by name:
/// part files, shards, and everything else (which the caller judges). Temporaries of a
/// publish in progress are ours and not listed.
#[derive(Debug, Default)]
pub struct StreamDir {
    pub parts: Vec<(u64, PathBuf)>,
    pub shards: Vec<(u64, PathBuf)>,
    /// The directory's `columns.parquet`, when it has one (not a table's rows: skipped by reads).
    pub columns: Option<PathBuf>,
    pub others: Vec<PathBuf>,
}

pub fn list_stream_dir(dir: &Path) -> Result<StreamDir> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(StreamDir::default()),
        Err(e) => return Err(Error::io("listing", dir, e)),
    };
    let mut out = StreamDir::default();
    for entry in entries {
        let entry = entry.at("listing", dir)?;
        let name = entry.file_name().to_string_lossy().to_string();
        if let Some(i) = part_index(&name) {
            out.parts.push((i, entry.path()));
        } else if let Some(i) = shard_index(&name) {
            out.shards.push((i, entry.path()));
        } else if name == COLUMNS_FILE {
            out.columns = Some(entry.path());
        } else if !(name.starts_with('.') && name.contains(crate::atomic::TEMP_MARKER)) {
            out.others.push(entry.path());
        }
    }
    out.parts.sort();
    out.shards.sort();
    out.others.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_sort_numerically() {
        assert_eq!(part_name(7), "part-00007.parquet");
        assert_eq!(part_index("part-123456.parquet"), Some(123456));
        assert_eq!(part_index(".part-00001.tmp-1-2"), None);
        assert_eq!(part_index("part-x.parquet"), None);
        let dir = crate::testutil::tempdir("parts");
        for i in [100000u64, 2, 99999] {
            fs::write(dir.join(part_name(i)), b"").unwrap();
        }
        let got: Vec<u64> = list_parts(&dir)
            .unwrap()
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(got, vec![2, 99999, 100000]);
    }

    #[test]
    fn a_stream_listing_keeps_what_it_does_not_recognise_but_not_our_temporaries() {
        let dir = crate::testutil::tempdir("stream-dir");
        for name in [
            "part-00001.parquet",
            "shard-00000.parquet",
            "notes.parquet",
            "columns.parquet",
            ".DS_Store",
            ".part-00002.tmp-1-0",
        ] {
            fs::write(dir.join(name), b"").unwrap();
        }
        fs::create_dir(dir.join("nested")).unwrap();
        let l = list_stream_dir(&dir).unwrap();
        assert_eq!(l.parts, vec![(1, dir.join("part-00001.parquet"))]);
        assert_eq!(l.shards, vec![(0, dir.join("shard-00000.parquet"))]);
        assert_eq!(l.columns, Some(dir.join("columns.parquet")));
        assert_eq!(
            l.others,
            vec![
                dir.join(".DS_Store"),
                dir.join("nested"),
                dir.join("notes.parquet")
            ]
        );
    }
}

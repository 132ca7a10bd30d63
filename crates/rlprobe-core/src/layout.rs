//! Names and places inside a run directory (format: Layout).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub const MANIFEST_FILE: &str = "manifest.json";
pub const STEPS_FILE: &str = "steps.parquet";
pub const STEPS_PARTS_DIR: &str = "steps";
pub const EVENTS_FILE: &str = "events.jsonl";
pub const PART_PREFIX: &str = "part-";
pub const SAMPLES_DIR: &str = "samples";
pub const SHARD_PREFIX: &str = "shard-";
/// Spans (an additive extension, format-notes "spans"): live parts `spans/part-*.parquet`
/// and their compaction `spans/spans.parquet`, both inside `spans/`.
pub const SPANS_DIR: &str = "spans";
pub const SPANS_FILE: &str = "spans/spans.parquet";
/// Captured trials (an additive extension, format-notes "trials"): one directory per
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

/// `part-00012.parquet` → 12.
pub fn part_index(name: &str) -> Option<u64> {
    name.strip_prefix(PART_PREFIX)?.strip_suffix(".parquet")?.parse().ok()
}

pub fn part_name(index: u64) -> String {
    format!("{PART_PREFIX}{index:05}.parquet")
}

/// `shard-00003.parquet` → 3.
pub fn shard_index(name: &str) -> Option<u64> {
    name.strip_prefix(SHARD_PREFIX)?.strip_suffix(".parquet")?.parse().ok()
}

pub fn shard_name(index: u64) -> String {
    format!("{SHARD_PREFIX}{index:05}.parquet")
}

/// Published part files in `dir`, in index order (numeric, so part-100000 follows part-99999).
pub fn list_parts(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    list_numbered(dir, part_index)
}

/// Sample shards in `dir`, in index order.
pub fn list_shards(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    list_numbered(dir, shard_index)
}

fn list_numbered(dir: &Path, index_of: fn(&str) -> Option<u64>) -> io::Result<Vec<(u64, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut parts = Vec::new();
    for entry in entries {
        let entry = entry?;
        if let Some(i) = index_of(&entry.file_name().to_string_lossy()) {
            parts.push((i, entry.path()));
        }
    }
    parts.sort();
    Ok(parts)
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
        let got: Vec<u64> = list_parts(&dir).unwrap().into_iter().map(|(i, _)| i).collect();
        assert_eq!(got, vec![2, 99999, 100000]);
    }
}

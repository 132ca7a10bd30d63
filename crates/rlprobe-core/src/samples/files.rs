//! Which files hold a run's samples, so that every sample is read exactly once.
//!
//! `samples/` holds compacted shards (`shard-*.parquet`, ours or the Python package's) and
//! live part files (`part-*.parquet`). A compaction writes several shards that share an id
//! and a shard count in their footers, and lists the parts it absorbed; it counts only once
//! all its shards are present. So a crash mid-compaction leaves shards that readers ignore
//! (their rows are still in the parts) and the next compaction deletes; a crash after the
//! last shard but before the parts are deleted leaves parts that readers skip. Shards
//! without our footer keys (written by the Python package) are always read.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::layout::{
    list_parts, list_shards, part_index, META_COMPACTED_PARTS, META_COMPACTION, META_COMPACTION_SHARDS,
    META_NEXT_PART, SAMPLES_DIR,
};
use crate::footer_cache::arrow_metadata;
use crate::steps_files::parse_name_list;

pub struct SampleFile {
    pub path: PathBuf,
    pub file: File,
    pub shard: bool,
}

#[derive(Default)]
pub struct SampleSources {
    /// Files to read, shards first (index order), then unabsorbed parts (index order).
    pub files: Vec<SampleFile>,
    /// Parts a complete compaction holds, still on disk.
    pub absorbed_leftovers: Vec<PathBuf>,
    /// Shards of a compaction that never finished (ignored; deleted by the next one).
    pub incomplete_shards: Vec<PathBuf>,
    pub next_part: u64,
    pub next_shard: u64,
}

pub fn samples_dir(run_dir: &Path) -> PathBuf {
    run_dir.join(SAMPLES_DIR)
}

struct ShardInfo {
    index: u64,
    path: PathBuf,
    file: File,
    compaction: Option<(String, u64)>,
    absorbed: HashSet<String>,
    next_part: u64,
}

/// Opens the sample files of `run_dir` (retrying if a compaction moves them meanwhile).
pub fn open_sample_sources(run_dir: &Path) -> io::Result<SampleSources> {
    crate::atomic::retry_while_files_move(|| try_open(run_dir))
}

fn try_open(run_dir: &Path) -> io::Result<SampleSources> {
    let dir = samples_dir(run_dir);
    // Parts before shards: a compaction finishing in between then lists these parts as
    // absorbed (skipped, its shards read). Shards first would miss both: the old listing
    // lacks the new shards, and the parts are gone by the time they are listed.
    let mut parts = Vec::new();
    for (index, path) in list_parts(&dir)? {
        // NotFound here means a compaction absorbed it after our listing: retry.
        let file = File::open(&path)?;
        parts.push((index, path, file));
    }
    let mut shards = Vec::new();
    for (index, path) in list_shards(&dir)? {
        let file = File::open(&path)?;
        let mut info =
            ShardInfo { index, path, file, compaction: None, absorbed: HashSet::new(), next_part: 0 };
        let mut id = None;
        let mut count = None;
        let meta = arrow_metadata(&info.path, &info.file)?;
        let kv = meta.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
        for (k, v) in kv.into_iter().map(|k| (k.key, k.value.unwrap_or_default())) {
            match k.as_str() {
                META_COMPACTION => id = Some(v),
                META_COMPACTION_SHARDS => count = v.trim().parse::<u64>().ok(),
                META_COMPACTED_PARTS => info.absorbed = parse_name_list(&v),
                META_NEXT_PART => info.next_part = v.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
        info.compaction = id.zip(count);
        shards.push(info);
    }
    let mut present: HashMap<String, u64> = HashMap::new();
    for s in &shards {
        if let Some((id, _)) = &s.compaction {
            *present.entry(id.clone()).or_default() += 1;
        }
    }
    let complete = |s: &ShardInfo| match &s.compaction {
        None => true,
        Some((id, count)) => present.get(id).copied().unwrap_or(0) >= *count,
    };
    let mut out = SampleSources::default();
    let mut absorbed = HashSet::new();
    let mut kept = Vec::new();
    for s in shards {
        out.next_shard = out.next_shard.max(s.index + 1);
        out.next_part = out.next_part.max(s.next_part);
        if complete(&s) {
            absorbed.extend(s.absorbed.iter().cloned());
            kept.push(s);
        } else {
            out.incomplete_shards.push(s.path);
        }
    }
    out.files.extend(kept.into_iter().map(|s| SampleFile { path: s.path, file: s.file, shard: true }));
    for name in &absorbed {
        if let Some(i) = part_index(name) {
            out.next_part = out.next_part.max(i + 1);
        }
    }
    for (index, path, file) in parts {
        out.next_part = out.next_part.max(index + 1);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if absorbed.contains(&name) {
            out.absorbed_leftovers.push(path);
            continue;
        }
        out.files.push(SampleFile { path, file, shard: false });
    }
    Ok(out)
}

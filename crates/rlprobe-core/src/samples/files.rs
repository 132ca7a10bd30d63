//! Which files hold a run's samples, so that every sample is read exactly once.
//!
//! `samples/` holds compacted shards (`shard-*.parquet`, ours or the Python package's) and
//! live part files (`part-*.parquet`). A compaction writes several shards that share an id
//! and a shard count in their footers, and lists the parts it absorbed; it counts only once
//! all its shards are present. So a crash mid-compaction leaves shards that readers ignore
//! (their rows are still in the parts) and the next compaction deletes; a crash after the
//! last shard but before the parts are deleted leaves parts that readers skip. Shards
//! without our footer keys (written by the Python package) are always read. Files the
//! recorder did not write, copies, and a compaction of another run's parts are skipped and
//! listed (stream_files.rs); a damaged part fails the read naming it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::layout::{META_COMPACTION, META_COMPACTION_SHARDS, SAMPLES_DIR};
use crate::parquet_io::ParquetFile;
use crate::steps_files::PartRef;
use crate::stream_files::{
    damaged_error, drop_copies, open_parts, Absorbed, AbsorbedMemo, DamagedFile, SkippedFile,
    Stream,
};

pub struct SampleFile {
    pub file: ParquetFile,
    pub shard: bool,
}

impl SampleFile {
    pub fn path(&self) -> &Path {
        &self.file.path
    }
}

#[derive(Default)]
pub struct SampleSources {
    /// Files to read, shards first (index order), then unabsorbed parts (index order).
    pub files: Vec<SampleFile>,
    /// Parts a complete compaction holds, still on disk.
    pub absorbed_leftovers: Vec<PartRef>,
    /// Shards of a compaction that never finished (ignored; deleted by the next one).
    pub incomplete_shards: Vec<PathBuf>,
    pub next_part: u64,
    pub next_shard: u64,
    /// Files skipped as not the recorder's (listed so readers can show them).
    pub foreign: Vec<SkippedFile>,
    /// Parts that cannot be read: reads fail on them.
    pub damaged: Vec<DamagedFile>,
}

impl SampleSources {
    /// Fails, naming the file, when a part is damaged: reading around it would silently
    /// lose its samples.
    pub fn require_readable(&self) -> Result<()> {
        damaged_error(&self.damaged).map_or(Ok(()), Err)
    }
}

pub fn samples_dir(run_dir: &Path) -> PathBuf {
    run_dir.join(SAMPLES_DIR)
}

struct ShardInfo {
    index: u64,
    file: ParquetFile,
    compaction: Option<(String, u64)>,
    /// Shared by every shard whose footer lists the same parts.
    absorbed: Arc<Absorbed>,
}

/// The shards present of one compaction, the highest index among them, and the parts they list.
#[derive(Default)]
struct Group {
    present: u64,
    last_shard: u64,
    absorbed: Absorbed,
    /// The distinct lists already in `absorbed`.
    merged: Vec<Arc<Absorbed>>,
}

/// A compaction writes its shards under consecutive names from its id (the first one's
/// name): a shard elsewhere was copied or renamed.
fn in_place(id: &str, count: u64, index: u64) -> bool {
    crate::layout::shard_index(id)
        .is_none_or(|first| index >= first && index < first.saturating_add(count))
}

/// The compactions that are not of this directory's parts, with why: one listing a part
/// that is on disk as another file, or listing a part that a later compaction (higher shard
/// indices: compactions only append) lists as another file. Legitimately, a part name is
/// absorbed once, or again with the same id (an interrupted compaction's leftovers).
fn group_conflicts(
    groups: &HashMap<String, Group>,
    parts: &[ParquetFile],
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (id, g) in groups {
        if let Some(c) = g.absorbed.conflict(parts) {
            out.insert(id.clone(), c);
            continue;
        }
        let later = groups.iter().filter(|(_, other)| other.last_shard > g.last_shard).find_map(|(other_id, other)| {
            g.absorbed.ids.iter().find_map(|(name, mine)| match (mine, other.absorbed.ids.get(name)) {
                (Some(a), Some(Some(b))) if a != b => Some(format!(
                    "it lists {name} as compacted into it, as does the later compaction {other_id} with another file: it was compacted from another run's parts"
                )),
                _ => None,
            })
        });
        if let Some(c) = later {
            out.insert(id.clone(), c);
        }
    }
    out
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string()
}

/// The compaction a shard of ours belongs to: its id and shard count. None for a shard
/// without the keys (the Python package's: always read). A count that is not a number is an
/// error naming the shard: taken for none, an unfinished compaction's shard would be read
/// beside the parts it holds (every sample twice).
fn compaction_of(file: &ParquetFile) -> Result<Option<(String, u64)>> {
    let Some(id) = file.key_value(META_COMPACTION) else {
        return Ok(None);
    };
    let count = file.key_value(META_COMPACTION_SHARDS).unwrap_or_default();
    match count.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some((id, n))),
        _ => Err(Error::CorruptMetadata {
            path: file.path.clone(),
            key: META_COMPACTION_SHARDS,
            value: count,
            problem: "is not the number of shards its compaction wrote".into(),
        }),
    }
}

/// Opens the sample files of `run_dir` (retrying if a compaction moves them meanwhile).
pub fn open_sample_sources(run_dir: &Path) -> Result<SampleSources> {
    let sources = crate::atomic::retry_while_files_move(|| try_open(run_dir));
    crate::memory::give_back_after(sources.as_ref().map_or(0, |s| s.files.len()));
    sources
}

/// Shards from which their footers are read on several threads: a first read of a big run
/// opens thousands (1,954 at 1M steps), each a read and a parse of ~30 KB.
const PARALLEL_OPEN_MIN: usize = 64;

/// `ParquetFile::open` of each path, in order; on up to 4 threads for many files.
fn open_all(paths: Vec<&Path>) -> Vec<Result<ParquetFile>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    open_all_on(paths, threads, PARALLEL_OPEN_MIN)
}

fn open_all_on(paths: Vec<&Path>, threads: usize, min: usize) -> Vec<Result<ParquetFile>> {
    if paths.len() < min || threads <= 1 {
        return paths.into_iter().map(ParquetFile::open).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    let shares: Vec<&[&Path]> = paths.chunks(chunk).collect();
    crate::threads::on_threads(&shares, |share| {
        share
            .iter()
            .map(|p| ParquetFile::open(p))
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect()
}

fn try_open(run_dir: &Path) -> Result<SampleSources> {
    let dir = samples_dir(run_dir);
    // Parts before shards: a compaction finishing in between then lists these parts as
    // absorbed (skipped, its shards read). Shards first would miss both: the old listing
    // lacks the new shards, and the parts are gone by the time they are listed.
    let listed = open_parts(&dir, Stream::Samples, None)?;
    // every part file on disk, readable or not: an interrupted compaction's parts are all here
    let on_disk: HashSet<String> = listed
        .parts
        .iter()
        .map(|(_, f)| f.name())
        .chain(listed.damaged.iter().map(|(_, d)| file_name(&d.path)))
        .collect();
    let mut out = SampleSources {
        foreign: listed.foreign,
        ..Default::default()
    };
    out.next_part = listed.max_index.map_or(0, |i| i + 1);
    let mut shards = Vec::new();
    let mut memo = AbsorbedMemo::default();
    let opened = open_all(listed.shards.iter().map(|(_, p)| p.as_path()).collect());
    for ((index, path), file) in listed.shards.into_iter().zip(opened) {
        out.next_shard = out.next_shard.max(index + 1);
        // a shard holds the list of parts it absorbed: a damaged one leaves no part
        // placeable, so the whole directory is unreadable (and a writer must not guess names)
        let file = file?;
        if let Some(reason) = Stream::Samples.schema_problem(&file.schema()) {
            out.foreign.push(SkippedFile { path, reason });
            continue;
        }
        let compaction = compaction_of(&file)?;
        let absorbed = Absorbed::of_memo(&file, &mut memo)?;
        shards.push(ShardInfo {
            index,
            file,
            compaction,
            absorbed,
        });
    }
    let mut seen = HashMap::new();
    let shards = drop_copies(shards, |s| &s.file, &mut out.foreign, &mut seen);
    let parts: Vec<ParquetFile> = drop_copies(
        listed.parts.into_iter().map(|(_, f)| f).collect(),
        |f| f,
        &mut out.foreign,
        &mut seen,
    );

    // a compaction's shards: complete or not, and whether it compacted these parts
    let mut groups: HashMap<String, Group> = HashMap::new();
    for s in &shards {
        if let Some((id, _)) = &s.compaction {
            let g = groups.entry(id.clone()).or_default();
            g.present += 1;
            g.last_shard = g.last_shard.max(s.index);
            // a list the group holds already adds nothing (shards of one compaction share it)
            if !g.merged.iter().any(|m| Arc::ptr_eq(m, &s.absorbed)) {
                g.merged.push(Arc::clone(&s.absorbed));
                g.absorbed.extend((*s.absorbed).clone());
            }
        }
    }
    let conflicts = group_conflicts(&groups, &parts);
    let mut absorbed = Absorbed::default();
    let mut merged: Vec<Arc<Absorbed>> = Vec::new();
    let mut kept = Vec::new();
    for s in shards {
        if !merged.iter().any(|m| Arc::ptr_eq(m, &s.absorbed)) {
            out.next_part = out.next_part.max(s.absorbed.next_part());
        }
        match &s.compaction {
            None => kept.push(s),
            Some((id, _)) if conflicts.contains_key(id) => {
                out.foreign.push(SkippedFile { path: s.file.path.clone(), reason: format!("not a shard of this run: {}", conflicts[id]) })
            }
            Some((id, count)) if !in_place(id, *count, s.index) => out.foreign.push(SkippedFile {
                path: s.file.path.clone(),
                reason: format!("not a shard of this run: its footer places it among the {count} shard(s) from {id}, not under this name"),
            }),
            Some((id, count)) if groups[id].present >= *count => {
                if !merged.iter().any(|m| Arc::ptr_eq(m, &s.absorbed)) {
                    merged.push(Arc::clone(&s.absorbed));
                    absorbed.extend((*s.absorbed).clone());
                }
                kept.push(s);
            }
            // ours only if every part it lists is still here (deleted only once it is complete)
            Some((id, _)) if groups[id].absorbed.ids.keys().all(|n| on_disk.contains(n)) => out.incomplete_shards.push(s.file.path.clone()),
            Some((id, count)) => out.foreign.push(SkippedFile {
                path: s.file.path.clone(),
                reason: format!("not a shard of this run: {} of the {count} shard(s) from {id} are here, and the parts they list are not", groups[id].present),
            }),
        }
    }
    out.next_part = out.next_part.max(absorbed.next_part());
    out.files.extend(kept.into_iter().map(|s| SampleFile {
        file: s.file,
        shard: true,
    }));
    for file in parts {
        if absorbed.contains(&file.name()) {
            out.absorbed_leftovers.push(PartRef {
                path: file.path.clone(),
                file_id: file.file_id(),
            });
        } else if let Some(original) = absorbed.copy_of(&file) {
            let reason = format!("a copy of {original} (the same rlprobe.file_id), whose samples a shard already holds");
            out.foreign.push(SkippedFile {
                path: file.path.clone(),
                reason,
            });
        } else {
            out.files.push(SampleFile { file, shard: false });
        }
    }
    for (_, d) in listed.damaged {
        let name = file_name(&d.path);
        // a damaged part a complete compaction holds costs nothing: compaction deletes it
        if absorbed.contains(&name) {
            out.absorbed_leftovers.push(PartRef {
                path: d.path,
                file_id: None,
            });
        } else {
            out.damaged.push(d);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Table;

    #[test]
    fn files_opened_on_threads_come_back_in_order_with_each_error_in_its_place() {
        let dir = crate::testutil::tempdir("open-all");
        let mut paths = Vec::new();
        for i in 0..7usize {
            let path = dir.join(format!("f{i}.parquet"));
            if i != 4 {
                let mut t = Table::default();
                for r in 0..=i {
                    t.column_mut("step", crate::schema::ColumnKind::I64)
                        .unwrap()
                        .push_number(r as f64);
                    t.finish_rows(r + 1);
                }
                let f = std::fs::File::create(&path).unwrap();
                crate::parquet_io::write_table(
                    f,
                    &path,
                    &t,
                    crate::props::Codec::default(),
                    Vec::new(),
                )
                .unwrap();
            }
            // f4 is missing: its error must stay fourth
            paths.push(path);
        }
        let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
        let one: Vec<String> = open_all_on(refs.clone(), 1, 0)
            .into_iter()
            .map(|r| r.map_or_else(|e| e.to_string(), |f| format!("{} rows", f.rows())))
            .collect();
        assert!(one[4].contains("f4.parquet"), "{one:?}");
        assert_eq!(one[6], "7 rows");
        for threads in [2, 3, 4, 9] {
            let many: Vec<String> = open_all_on(refs.clone(), threads, 0)
                .into_iter()
                .map(|r| r.map_or_else(|e| e.to_string(), |f| format!("{} rows", f.rows())))
                .collect();
            assert_eq!(many, one, "{threads} threads");
        }
    }
}

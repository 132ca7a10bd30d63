//! Judging the files of a stream directory (`steps/`, `samples/`, `spans/`) before any is
//! read: which are the recorder's, which are foreign (skipped, and listed so the reader can
//! show them), which are damaged (reported by name; the stream is not read around them).
//!
//! Foreign: a name the recorder does not write there; a table of another stream (a steps
//! table under `samples/`); a copy of another file (the same `rlprobe.file_id`: its rows
//! would be read twice); a compacted file that lists as absorbed a part that is on disk
//! under that name but is another file (it was compacted for another run, and would hide
//! this run's part). Files without our footer keys (the Python package's, an older
//! rlprobe's) are judged by name and columns alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow::datatypes::Schema;

use crate::error::{Error, Result};
use crate::layout::{
    list_stream_dir, part_index, META_COMPACTED_IDS, META_COMPACTED_PARTS, META_NEXT_PART,
};
use crate::parquet_io::ParquetFile;

/// A file readers skip, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: PathBuf,
    pub reason: String,
}

/// A file that cannot be read, and the error a read of its stream fails with.
#[derive(Debug, Clone)]
pub struct DamagedFile {
    pub path: PathBuf,
    pub error: Error,
}

impl DamagedFile {
    /// What is wrong with it and what to do, in words (the error's full report).
    pub fn reason(&self) -> String {
        self.error.report()
    }
}

/// Which table a directory holds: decides the names and columns that are ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Steps,
    Samples,
    Spans,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Steps => "steps",
            Stream::Samples => "samples",
            Stream::Spans => "spans",
        }
    }

    /// Why a table with `schema` is not one of this stream's (None: it is).
    pub fn schema_problem(self, schema: &Schema) -> Option<String> {
        let has = |n: &str| schema.field_with_name(n).is_ok();
        let problem = match self {
            Stream::Steps if !has("step") => "it has no `step` column",
            Stream::Steps if has("sample_id") => "it has a `sample_id` column (a samples table)",
            Stream::Steps if has("span_id") => "it has a `span_id` column (a spans table)",
            Stream::Samples if !has("step") || !has("sample_id") => {
                "it lacks the `step` and `sample_id` columns of a samples table"
            }
            Stream::Spans if !has("span_id") || !has("start_time") => {
                "it lacks the `span_id` and `start_time` columns of a spans table"
            }
            _ => return None,
        };
        Some(format!("not a {} table: {problem}", self.name()))
    }
}

/// The part files of a stream directory, opened and judged, and what else it holds.
pub struct Parts {
    /// Readable parts of this stream, in index order.
    pub parts: Vec<(u64, ParquetFile)>,
    /// Parts that could not be opened or whose footer is damaged, with the error.
    pub damaged: Vec<(u64, DamagedFile)>,
    pub foreign: Vec<SkippedFile>,
    /// Shard files (`shard-NNNNN.parquet`), unopened: only `samples/` has them.
    pub shards: Vec<(u64, PathBuf)>,
    /// The highest part index on disk, whatever the file (a writer must not reuse it).
    pub max_index: Option<u64>,
}

/// Lists and opens the parts of `dir`. `compacted` is a name that lives in the directory
/// and is the caller's (`spans.parquet`); anything else unrecognised is foreign. A part that
/// vanished meanwhile is `Error::is_not_found` (the callers retry: a compaction moved it).
pub fn open_parts(dir: &Path, stream: Stream, compacted: Option<&str>) -> Result<Parts> {
    let listing = list_stream_dir(dir)?;
    let expected = match stream {
        Stream::Samples => "part-NNNNN.parquet or shard-NNNNN.parquet",
        Stream::Steps | Stream::Spans => "part-NNNNN.parquet",
    };
    let mut out = Parts {
        parts: Vec::new(),
        damaged: Vec::new(),
        foreign: Vec::new(),
        shards: Vec::new(),
        max_index: None,
    };
    for path in listing.others {
        if compacted.is_some_and(|c| path.file_name().is_some_and(|n| n == c)) {
            continue;
        }
        out.foreign.push(SkippedFile {
            path,
            reason: format!(
                "not a file rlprobe writes in {}/ (it writes {expected})",
                stream.name()
            ),
        });
    }
    // steps/ and samples/ hold the writer's columns.parquet (no rows); spans/ never does
    if let Some(path) = listing.columns {
        let reason = match (stream, ParquetFile::open(&path)) {
            (Stream::Spans, _) => Some(format!(
                "not a file rlprobe writes in {}/ (it writes {expected})",
                stream.name()
            )),
            (_, Ok(f)) if f.rows() > 0 => Some(format!(
                "it holds {} rows: the recorder's columns.parquet holds none (other tools read them as {})",
                f.rows(),
                stream.name()
            )),
            (_, Ok(_)) => None,
            // removed meanwhile (a compaction): nothing to say
            (_, Err(e)) if e.is_not_found() => None,
            (_, Err(e)) => Some(format!(
                "the recorder's column list cannot be read ({}): other tools may fail on it",
                e.report()
            )),
        };
        if let Some(reason) = reason {
            out.foreign.push(SkippedFile { path, reason });
        }
    }
    if stream == Stream::Samples {
        out.shards = listing.shards;
    } else {
        for (_, path) in listing.shards {
            out.foreign.push(SkippedFile {
                path,
                reason: format!(
                    "not a file rlprobe writes in {}/ (it writes {expected})",
                    stream.name()
                ),
            });
        }
    }
    for (index, path) in listing.parts {
        out.max_index = out.max_index.max(Some(index));
        match ParquetFile::open(&path) {
            Ok(file) => match stream.schema_problem(&file.schema()) {
                Some(reason) => out.foreign.push(SkippedFile { path, reason }),
                None => out.parts.push((index, file)),
            },
            Err(e) if e.is_not_found() => return Err(e),
            Err(error) => out.damaged.push((index, DamagedFile { path, error })),
        }
    }
    Ok(out)
}

/// Lists already parsed in one listing, by their raw footer values.
#[derive(Default)]
pub struct AbsorbedMemo {
    parsed: HashMap<Vec<String>, std::sync::Arc<Absorbed>>,
}

/// What a compacted file (a compacted table, or one compaction's shards) says it absorbed:
/// part names, with their file ids when it recorded them.
#[derive(Debug, Default, Clone)]
pub struct Absorbed {
    pub ids: HashMap<String, Option<String>>,
    pub next_part: u64,
}

impl Absorbed {
    /// What `file`'s footer says it absorbed. No keys: nothing (another writer's file). Keys
    /// that do not hold what we write are an error naming the file: guessing would restart
    /// part numbering (a writer overwriting names the compacted file lists) or read the
    /// rows of absorbed parts twice.
    pub fn of(file: &ParquetFile) -> Result<Absorbed> {
        let mut names = Vec::new();
        let mut ids: Option<Vec<String>> = None;
        let mut next_part = 0;
        for (k, v) in file.key_values() {
            match k {
                META_COMPACTED_PARTS => names = parse_name_list(file, META_COMPACTED_PARTS, v)?,
                META_COMPACTED_IDS => ids = Some(parse_name_list(file, META_COMPACTED_IDS, v)?),
                META_NEXT_PART => {
                    next_part = v.trim().parse().map_err(|_| {
                        corrupt_key(file, META_NEXT_PART, v, "is not a part number")
                    })?;
                }
                _ => {}
            }
        }
        let ids = match ids {
            // written by an rlprobe from before file ids: names alone
            None => vec![String::new(); names.len()],
            Some(ids) if ids.len() == names.len() => ids,
            Some(ids) => {
                let problem = format!(
                    "lists {} file ids for the {} parts of `{META_COMPACTED_PARTS}`",
                    ids.len(),
                    names.len()
                );
                return Err(corrupt_key(
                    file,
                    META_COMPACTED_IDS,
                    &name_list_json(&ids),
                    &problem,
                ));
            }
        };
        let ids = names
            .into_iter()
            .zip(ids)
            .map(|(n, id)| (n, Some(id).filter(|id| !id.is_empty())))
            .collect();
        Ok(Absorbed { ids, next_part })
    }

    /// `Absorbed::of`, parsed once per distinct list within one listing: every shard of a
    /// compaction carries the same lists (624 parts, ~25 KB, in each of 1,954 shards at a
    /// million steps), and parsing them per shard was most of a listing's time.
    pub fn of_memo(
        file: &ParquetFile,
        memo: &mut AbsorbedMemo,
    ) -> Result<std::sync::Arc<Absorbed>> {
        let key: Vec<String> = [META_COMPACTED_PARTS, META_COMPACTED_IDS, META_NEXT_PART]
            .iter()
            .map(|k| {
                file.key_values()
                    .find(|(key, _)| key == k)
                    .map_or(String::from("\u{0}"), |(_, v)| v.to_string())
            })
            .collect();
        if let Some(known) = memo.parsed.get(&key) {
            return Ok(std::sync::Arc::clone(known));
        }
        let parsed = std::sync::Arc::new(Absorbed::of(file)?);
        memo.parsed.insert(key, std::sync::Arc::clone(&parsed));
        Ok(parsed)
    }

    pub fn extend(&mut self, other: Absorbed) {
        self.ids.extend(other.ids);
        self.next_part = self.next_part.max(other.next_part);
    }

    pub fn contains(&self, name: &str) -> bool {
        self.ids.contains_key(name)
    }

    /// The smallest part index above every absorbed name and the recorded next index.
    pub fn next_part(&self) -> u64 {
        self.ids
            .keys()
            .filter_map(|n| part_index(n))
            .map(|i| i + 1)
            .fold(self.next_part, u64::max)
    }

    /// The absorbed part that `file` is a copy of under another name (the same file id):
    /// its rows are already in the compacted file.
    pub fn copy_of(&self, file: &ParquetFile) -> Option<String> {
        let id = file.file_id()?;
        let name = file.name();
        self.ids
            .iter()
            .find(|(n, i)| **n != name && i.as_deref() == Some(id.as_str()))
            .map(|(n, _)| n.clone())
    }

    /// A part on disk under a name this compaction lists, but another file than the one it
    /// absorbed: the compaction was not of this directory's parts.
    pub fn conflict<'a>(&self, parts: impl IntoIterator<Item = &'a ParquetFile>) -> Option<String> {
        parts.into_iter().find_map(|p| {
            let name = p.name();
            match (self.ids.get(&name), p.file_id()) {
                (Some(Some(absorbed)), Some(on_disk)) if *absorbed != on_disk => Some(format!(
                    "it lists {name} as compacted into it, but the {name} here is another file: it was compacted from another run's parts and would hide this run's {name}"
                )),
                _ => None,
            }
        })
    }
}

fn corrupt_key(file: &ParquetFile, key: &'static str, value: &str, problem: &str) -> Error {
    Error::CorruptMetadata {
        path: file.path.clone(),
        key,
        value: value.chars().take(200).collect(),
        problem: problem.to_string(),
    }
}

/// Parses the JSON array of names (or ids) we write (`["part-00000.parquet",…]`) from the
/// footer key `key` of `file`.
fn parse_name_list(file: &ParquetFile, key: &'static str, v: &str) -> Result<Vec<String>> {
    serde_json::from_str(v).map_err(|e| {
        corrupt_key(
            file,
            key,
            v,
            &format!("is not a JSON array of strings ({e})"),
        )
    })
}

pub fn name_list_json(names: &[String]) -> String {
    serde_json::Value::from(names.to_vec()).to_string()
}

/// Keeps the first file of each file id, in the given order; later copies become foreign.
pub fn drop_copies<T>(
    files: Vec<T>,
    file_of: impl Fn(&T) -> &ParquetFile,
    foreign: &mut Vec<SkippedFile>,
    seen: &mut HashMap<String, String>,
) -> Vec<T> {
    let mut kept = Vec::with_capacity(files.len());
    for f in files {
        let pf = file_of(&f);
        match pf.file_id() {
            Some(id) => match seen.get(&id) {
                Some(first) => foreign.push(SkippedFile {
                    path: pf.path.clone(),
                    reason: format!("a copy of {first} (the same rlprobe.file_id): its rows are read once, from {first}"),
                }),
                None => {
                    seen.insert(id, pf.name());
                    kept.push(f);
                }
            },
            None => kept.push(f),
        }
    }
    kept
}

/// The error a read of a stream with damaged files gives: the first's, and how many more.
pub fn damaged_error(damaged: &[DamagedFile]) -> Option<Error> {
    let first = damaged.first()?.error.clone();
    Some(match damaged.len() {
        1 => first,
        n => Error::DamagedFiles {
            first: Box::new(first),
            more: n - 1,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_lists_are_json() {
        let names = vec![
            "part-00000.parquet".to_string(),
            "a \"quoted\", name".to_string(),
        ];
        assert_eq!(
            serde_json::from_str::<Vec<String>>(&name_list_json(&names)).unwrap(),
            names
        );
        assert_eq!(name_list_json(&[]), "[]");
        assert_eq!(name_list_json(&["".into(), "ab".into()]), r#"["","ab"]"#);
    }

    #[test]
    fn a_table_of_another_stream_is_named_as_such() {
        use arrow::datatypes::{DataType, Field};
        let steps = Schema::new(vec![
            Field::new("step", DataType::Int64, true),
            Field::new("loss", DataType::Float64, true),
        ]);
        let samples = Schema::new(vec![
            Field::new("step", DataType::Int64, true),
            Field::new("sample_id", DataType::Utf8, true),
        ]);
        assert_eq!(Stream::Steps.schema_problem(&steps), None);
        assert_eq!(Stream::Samples.schema_problem(&samples), None);
        assert!(Stream::Samples
            .schema_problem(&steps)
            .unwrap()
            .contains("not a samples table"));
        assert!(Stream::Steps
            .schema_problem(&samples)
            .unwrap()
            .contains("a samples table"));
        assert!(Stream::Spans.schema_problem(&steps).is_some());
    }
}

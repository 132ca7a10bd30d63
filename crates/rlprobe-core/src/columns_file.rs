//! `columns.parquet`: a zero-row file in `steps/` and `samples/` whose schema is the union
//! of the columns of every file in that directory.
//!
//! Parts hold only the columns their rows used, so a column first logged mid-run is absent
//! from the earlier parts. Tools that take one file's schema for a whole directory then
//! lose it: pyarrow's `read_table(dir)` and DuckDB's plain glob silently drop it. This file
//! sorts before `part-*` and `shard-*`, so it is the file those tools take the schema from:
//! pyarrow reads every column (nulls where a part lacks one), and DuckDB and polars, which
//! want every file to have the first file's columns, fail loudly instead of dropping data
//! (their recipes, `union_by_name` and `missing_columns='insert'`, then read everything).
//!
//! It is published before the part that brings a new column, so whenever a part is on disk
//! its columns are in this file. Readers of the recorder's format skip it (it has no rows).

use std::fs;
use std::path::Path;

use std::sync::Arc;

use arrow::datatypes::{FieldRef, Schema, SchemaRef};

use crate::atomic::publish_in_stream_dir;
use crate::error::{Error, Result};
use crate::layout::{list_stream_dir, COLUMNS_FILE};
use crate::parquet_io::{arrow_writer, ParquetFile};
use crate::props::Codec;
use crate::samples::schema::union_sample_schema;
use crate::stream_files::Stream;

/// The union of `schemas` as `stream` unifies its files (canonical column order and types).
pub fn union_of(stream: Stream, schemas: &[SchemaRef]) -> Result<SchemaRef> {
    match stream {
        Stream::Samples => union_sample_schema(schemas),
        Stream::Steps | Stream::Spans => crate::compact::union_schema(schemas),
    }
}

/// Publishes `dir/columns.parquet` with `schema` and no rows, atomically, creating `dir`.
pub fn write_columns_file(dir: &Path, schema: &SchemaRef) -> Result<()> {
    publish_in_stream_dir(dir, COLUMNS_FILE, |file, tmp| {
        let w = arrow_writer(file, tmp, schema.clone(), Codec::default(), Vec::new())?;
        Ok(((), w.into_inner()?))
    })
}

/// What the writer last published as a directory's `columns.parquet`, kept so that a part
/// republishes it only when it brings a column the file lacks (or the file is gone: a
/// compaction of the live run removed it with the parts).
#[derive(Debug, Default)]
pub struct ColumnsHead {
    published: Option<SchemaRef>,
    /// Columns whose type conflict was reported already (once each, not once per part).
    conflicts: Vec<String>,
}

impl ColumnsHead {
    /// Makes `dir/columns.parquet` hold every column of `part` before the part is published.
    /// The first call also takes in what the directory already holds (a resumed run: the
    /// existing file, or when there is none the schemas of the files on disk).
    pub fn before_part(&mut self, dir: &Path, stream: Stream, part: &SchemaRef) -> Result<()> {
        let path = dir.join(COLUMNS_FILE);
        let known = match self.published.take() {
            Some(s) => s,
            None => on_disk_union(dir, stream)?,
        };
        // from here on the directory has been read: a failure below is not read again
        self.published = Some(known.clone());
        let missing_column = part
            .fields()
            .iter()
            .any(|f| known.field_with_name(f.name()).is_err());
        let on_disk = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if !missing_column && on_disk {
            self.published = Some(known);
            return Ok(());
        }
        // a column whose type conflicts with the file's (another writer's part in the
        // directory): the other new columns still go in, the conflict is reported once
        let (union, conflict) = union_skipping_conflicts(stream, &known, part);
        let reported = match &conflict {
            Some((column, _)) if self.conflicts.contains(column) => true,
            Some((column, _)) => {
                self.conflicts.push(column.clone());
                false
            }
            None => true,
        };
        if union.fields().len() > known.fields().len() || !on_disk {
            write_columns_file(dir, &union)?;
            self.published = Some(union);
        }
        match conflict {
            Some((_, e)) if !reported => Err(e),
            _ => Ok(()),
        }
    }
}

/// The union of `known` and the part's columns, leaving out a part column whose type
/// conflicts with the file's (returned with the error).
fn union_skipping_conflicts(
    stream: Stream,
    known: &SchemaRef,
    part: &SchemaRef,
) -> (SchemaRef, Option<(String, Error)>) {
    match union_of(stream, &[known.clone(), part.clone()]) {
        Ok(u) => (u, None),
        Err(e) => {
            let fits: Vec<_> = part
                .fields()
                .iter()
                .filter(|f| union_of(stream, &[known.clone(), one_column(f)]).is_ok())
                .cloned()
                .collect();
            let conflicting = part
                .fields()
                .iter()
                .find(|f| !fits.contains(f))
                .map(|f| f.name().clone())
                .unwrap_or_default();
            let fits = Arc::new(Schema::new(fits));
            let union = union_of(stream, &[known.clone(), fits]).unwrap_or_else(|_| known.clone());
            (union, Some((conflicting, e)))
        }
    }
}

fn one_column(f: &FieldRef) -> SchemaRef {
    Arc::new(Schema::new(vec![f.as_ref().clone()]))
}

/// The columns a directory already holds: the union of its `columns.parquet` and its parts'
/// and shards' schemas (a directory written by another writer has no head; a compacted
/// table demoted to a part on resume is not in it). Read once per writer, from footers.
/// Unreadable files are skipped here: readers report them; the head only lists columns.
fn on_disk_union(dir: &Path, stream: Stream) -> Result<SchemaRef> {
    let listing = list_stream_dir(dir)?;
    let files = listing.columns.iter().chain(
        listing
            .parts
            .iter()
            .chain(&listing.shards)
            .map(|(_, path)| path),
    );
    let mut union = union_of(stream, &[])?;
    for path in files {
        if let Ok(f) = ParquetFile::open(path) {
            if stream.schema_problem(&f.schema()).is_none() {
                // a file whose column types conflict with the others' adds what fits
                union = union_skipping_conflicts(stream, &union, &f.schema()).0;
            }
        }
    }
    Ok(union)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field};

    fn schema(cols: &[&str]) -> SchemaRef {
        Arc::new(Schema::new(
            cols.iter()
                .map(|c| {
                    let t = if *c == "step" {
                        DataType::Int64
                    } else {
                        DataType::Float64
                    };
                    Field::new(*c, t, true)
                })
                .collect::<Vec<_>>(),
        ))
    }

    fn names(path: &Path) -> Vec<String> {
        let f = ParquetFile::open(path).unwrap();
        assert_eq!(f.rows(), 0);
        f.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    #[test]
    fn the_file_grows_with_each_new_column_and_is_rewritten_only_then() {
        let dir = crate::testutil::tempdir("columns-file").join("steps");
        let path = dir.join(COLUMNS_FILE);
        let mut head = ColumnsHead::default();
        head.before_part(&dir, Stream::Steps, &schema(&["step", "loss"]))
            .unwrap();
        assert_eq!(names(&path), ["step", "loss"]);
        // a publication is a new file (a rename over the old one): a new inode
        let inode = || std::os::unix::fs::MetadataExt::ino(&fs::metadata(&path).unwrap());
        let first = inode();
        // nothing new: not rewritten
        head.before_part(&dir, Stream::Steps, &schema(&["step"]))
            .unwrap();
        assert_eq!(inode(), first);
        // a column first logged mid-run: in the file before its part is published
        head.before_part(&dir, Stream::Steps, &schema(&["step", "extra.eval"]))
            .unwrap();
        assert_eq!(names(&path), ["step", "loss", "extra.eval"]);
        // removed by a compaction of the live run: put back, with everything known so far
        fs::remove_file(&path).unwrap();
        head.before_part(&dir, Stream::Steps, &schema(&["step"]))
            .unwrap();
        assert_eq!(names(&path), ["step", "loss", "extra.eval"]);
    }

    #[test]
    fn a_resumed_writer_starts_from_what_the_directory_holds() {
        let dir = crate::testutil::tempdir("columns-file").join("steps");
        ColumnsHead::default()
            .before_part(&dir, Stream::Steps, &schema(&["step", "a"]))
            .unwrap();
        let mut resumed = ColumnsHead::default();
        resumed
            .before_part(&dir, Stream::Steps, &schema(&["step", "b"]))
            .unwrap();
        assert_eq!(names(&dir.join(COLUMNS_FILE)), ["step", "a", "b"]);
    }

    #[test]
    fn a_type_conflict_is_reported_once_and_the_other_columns_still_go_in() {
        let dir = crate::testutil::tempdir("columns-conflict").join("samples");
        let mut head = ColumnsHead::default();
        let text = |name: &str| {
            Arc::new(Schema::new(vec![
                Field::new("step", DataType::Int64, true),
                Field::new("sample_id", DataType::Utf8, true),
                Field::new(name, DataType::Utf8, true),
            ])) as SchemaRef
        };
        head.before_part(&dir, Stream::Samples, &text("x")).unwrap();
        let conflicting = Arc::new(Schema::new(vec![
            Field::new("step", DataType::Int64, true),
            Field::new("x", DataType::Float64, true),
            Field::new("y", DataType::Float64, true),
        ])) as SchemaRef;
        let e = head
            .before_part(&dir, Stream::Samples, &conflicting)
            .unwrap_err();
        assert!(e.report().contains('x'), "{}", e.report());
        assert!(names(&dir.join(COLUMNS_FILE)).contains(&"y".to_string()));
        // the same conflict again: not reported again
        head.before_part(&dir, Stream::Samples, &conflicting)
            .unwrap();
    }
}

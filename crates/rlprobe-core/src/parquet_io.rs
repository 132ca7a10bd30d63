//! Parquet in and out of `Table`s: every file rlprobe writes goes through `arrow_writer`
//! (our properties, a file id, block checksums), every file it reads through `ParquetFile`
//! (a regular file, its footer verified, its blocks verified as they are read, every error
//! naming the file).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::errors::ParquetError;
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::checksums::{CheckedFile, ChecksumSink, DamageSlot, META_CHECKSUMS};
use crate::error::{Error, IoContext, Remedy, Result};
use crate::footer_cache::Footer;
use crate::layout::META_FILE_ID;
use crate::props::{writer_properties, Codec};
use crate::regular_file::open_regular;
use crate::table::Table;

/// A Parquet writer with our properties whose file carries a unique id and block checksums
/// (checksums.rs). Used like `ArrowWriter`: `write`, `flush`, then `into_inner`. Its errors
/// name the file being written.
pub struct ParquetWriter<W: io::Write + Send> {
    w: ArrowWriter<ChecksumSink<W>>,
    path: PathBuf,
}

impl<W: io::Write + Send> ParquetWriter<W> {
    fn failed(&self, e: ParquetError) -> Error {
        Error::WriteParquet {
            path: self.path.clone(),
            source: Arc::new(e),
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.w.write(batch).map_err(|e| self.failed(e))
    }

    /// Closes the row group in progress.
    pub fn flush(&mut self) -> Result<()> {
        self.w.flush().map_err(|e| self.failed(e))
    }

    pub fn in_progress_size(&self) -> usize {
        self.w.in_progress_size()
    }

    /// Writes the last row group and the footer, with the checksum record filled in.
    pub fn into_inner(mut self) -> Result<W> {
        self.flush()?;
        let data_len = self.w.bytes_written() as u64;
        let placeholder = self.w.inner_mut().footer_starts_at(data_len);
        self.w.append_key_value_metadata(KeyValue::new(
            META_CHECKSUMS.to_string(),
            placeholder.clone(),
        ));
        let path = self.path;
        let sink = self.w.into_inner().map_err(|e| Error::WriteParquet {
            path: path.clone(),
            source: Arc::new(e),
        })?;
        sink.finish(&placeholder, &path)
    }
}

/// An id no other file shares: a copy of a file under another name keeps it, so readers
/// read the copy's rows once.
fn new_file_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(SEQ.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", h.finish())
}

/// A writer over `sink` (the file at `path`, named in errors) with our properties,
/// `metadata` in the footer (compaction writes several batches; a part file one).
pub fn arrow_writer<W: io::Write + Send>(
    sink: W,
    path: &Path,
    schema: SchemaRef,
    codec: Codec,
    metadata: Vec<KeyValue>,
) -> Result<ParquetWriter<W>> {
    let mut metadata = metadata;
    metadata.push(KeyValue::new(META_FILE_ID.to_string(), new_file_id()));
    let props = writer_properties(schema.as_ref(), codec, metadata)?;
    let w = ArrowWriter::try_new(ChecksumSink::new(sink), Arc::clone(&schema), Some(props))
        .map_err(|e| Error::WriteParquet {
            path: path.to_path_buf(),
            source: Arc::new(e),
        })?;
    Ok(ParquetWriter {
        w,
        path: path.to_path_buf(),
    })
}

/// Writes `table` as one Parquet file into `sink` (the file at `path`) and hands the sink back.
pub fn write_table<W: io::Write + Send>(
    sink: W,
    path: &Path,
    table: &Table,
    codec: Codec,
    metadata: Vec<KeyValue>,
) -> Result<W> {
    let batch = table.to_record_batch()?;
    let mut w = arrow_writer(sink, path, batch.schema(), codec, metadata)?;
    w.write(&batch)?;
    w.into_inner()
}

/// A Parquet file opened for reading: a regular file, its footer verified and parsed.
pub struct ParquetFile {
    pub path: PathBuf,
    pub file: File,
    pub len: u64,
    footer: Footer,
    damage: DamageSlot,
}

impl ParquetFile {
    /// Opens `path`. A missing file is `Error::is_not_found` (the callers retry); any other
    /// failure names the file and says what is wrong and what to do.
    pub fn open(path: &Path) -> Result<ParquetFile> {
        let file = open_regular(path, Some(Remedy::MoveAside))?;
        let len = file.metadata().at("reading the metadata of", path)?.len();
        let footer = crate::footer_cache::footer(path, &file, len)?;
        Ok(ParquetFile {
            path: path.to_path_buf(),
            file,
            len,
            footer,
            damage: DamageSlot::default(),
        })
    }

    pub fn name(&self) -> String {
        self.path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string()
    }

    pub fn metadata(&self) -> &Arc<ParquetMetaData> {
        self.footer.meta.metadata()
    }

    pub fn schema(&self) -> SchemaRef {
        self.footer.meta.schema().clone()
    }

    /// Rows, from the footer.
    pub fn rows(&self) -> u64 {
        self.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The footer's key-value metadata, borrowed: a compacted file's lists of absorbed parts
    /// are tens of KB, and listing thousands of shards must not copy them per question.
    pub fn key_values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.metadata()
            .file_metadata()
            .key_value_metadata()
            .into_iter()
            .flatten()
            .map(|k| (k.key.as_str(), k.value.as_deref().unwrap_or_default()))
    }

    pub fn key_value(&self, key: &str) -> Option<String> {
        self.key_values()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
    }

    /// The id every file we write carries (None: another writer's, or an older rlprobe's).
    pub fn file_id(&self) -> Option<String> {
        self.key_value(META_FILE_ID).filter(|v| !v.is_empty())
    }

    /// A failure decoding this file, naming it and what to do: the damage its checked
    /// reads found, if they found any (the decoder's error then only repeats it as text).
    pub fn damaged(&self, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
        match self.damage.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(found) => found,
            None => Error::reading(&self.path, e),
        }
    }

    /// A batch reader builder over the verified bytes of the file.
    pub fn reader(
        &self,
        batch_rows: usize,
    ) -> Result<ParquetRecordBatchReaderBuilder<CheckedFile>> {
        Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(
            self.checked()?,
            self.footer.meta.clone(),
        )
        .with_batch_size(batch_rows))
    }

    /// The file's bytes, each block verified before it is served.
    pub fn checked(&self) -> Result<CheckedFile> {
        CheckedFile::new(
            &self.file,
            &self.path,
            self.len,
            self.footer.checksums.clone(),
            Arc::clone(&self.damage),
        )
    }

    /// Streams the file's batches to `f` (compaction: constant memory per batch).
    pub fn for_each_batch(
        &self,
        batch_rows: usize,
        mut f: impl FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        for batch in self
            .reader(batch_rows)?
            .build()
            .map_err(|e| self.damaged(e))?
        {
            f(batch.map_err(|e| self.damaged(e))?)?;
        }
        Ok(())
    }

    /// Appends the file's rows to `table` (columns unioned by name); `columns` restricts the
    /// read to those top-level columns when given.
    pub fn read_into(&self, table: &mut Table, columns: Option<&[String]>) -> Result<()> {
        self.read_groups_into(table, columns, None)
    }

    /// `read_into` of only row groups `groups` (None: all), in that order. Number columns
    /// are decoded by direct_read.rs, the others by the Arrow reader.
    pub fn read_groups_into(
        &self,
        table: &mut Table,
        columns: Option<&[String]>,
        groups: Option<&[usize]>,
    ) -> Result<()> {
        self.read_groups_with(table, columns, groups, true)
    }

    /// `read_groups_into`, with the Arrow reader for every column when `direct` is false
    /// (the tests hold one read to the other).
    pub(crate) fn read_groups_with(
        &self,
        table: &mut Table,
        columns: Option<&[String]>,
        groups: Option<&[usize]>,
        direct: bool,
    ) -> Result<()> {
        let meta = self.metadata();
        let groups: Vec<usize> = match groups {
            Some(g) => g.to_vec(),
            None => (0..meta.num_row_groups()).collect(),
        };
        let schema = self.schema();
        let start = table.rows;
        let planned = if direct {
            crate::direct_read::plan(meta, &schema, columns, &groups, table)
        } else {
            Vec::new()
        };
        if !planned.is_empty() {
            crate::direct_read::read(self, &planned, &groups, table)?;
        }
        let rest: Vec<usize> = column_indices(&schema, |n| {
            columns.is_none_or(|c| c.iter().any(|c| c == n)) && !planned.iter().any(|p| p.name == n)
        });
        if !rest.is_empty() {
            let b = self.reader(65_536)?.with_row_groups(groups.clone());
            let mask = ProjectionMask::roots(b.parquet_schema(), rest);
            for batch in b
                .with_projection(mask)
                .build()
                .map_err(|e| self.damaged(e))?
            {
                let batch = batch.map_err(|e| self.damaged(e))?;
                table
                    .append_batch(&batch)
                    .map_err(|e| e.in_file(&self.path))?;
            }
        }
        let rows: usize = groups
            .iter()
            .map(|&g| meta.row_group(g).num_rows().max(0) as usize)
            .sum();
        table.finish_rows(start + rows);
        Ok(())
    }
}

/// Row count from the footer alone (another tool's file, or a test's).
pub fn row_count(path: &Path) -> Result<u64> {
    let file = open_regular(path, None)?;
    let reader = SerializedFileReader::new(file).map_err(|e| Error::reading(path, e))?;
    Ok(reader.metadata().file_metadata().num_rows().max(0) as u64)
}

/// Indices of the top-level columns of `schema` whose name `keep` accepts.
pub fn column_indices(
    schema: &arrow::datatypes::Schema,
    keep: impl Fn(&str) -> bool,
) -> Vec<usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| keep(f.name()))
        .map(|(i, _)| i)
        .collect()
}

/// Pays the codec's one-time initialisation (zstd tables, page buffers) with a throwaway
/// in-memory write, so a crash seconds into a run does not find the first real flush
/// still paying it.
pub fn prewarm() {
    let mut t = Table::default();
    if let Ok(c) = t.column_mut("step", crate::schema::ColumnKind::I64) {
        c.push_number(0.0);
    }
    if let Ok(c) = t.column_mut("loss", crate::schema::ColumnKind::F64) {
        c.push_number(0.0);
    }
    t.finish_rows(1);
    // a throwaway: nothing is lost if it fails, and the first real write reports its own error
    let _ = write_table(
        Vec::new(),
        Path::new("(pre-warm, in memory)"),
        &t,
        Codec::default(),
        Vec::new(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tempdir;

    fn table(rows: usize) -> Table {
        let mut t = Table::default();
        for r in 0..rows {
            t.column_mut("step", crate::schema::ColumnKind::I64)
                .unwrap()
                .push_number(r as f64);
            t.column_mut("loss", crate::schema::ColumnKind::F64)
                .unwrap()
                .push_number((r as f64).sqrt());
            t.finish_rows(r + 1);
        }
        t
    }

    #[test]
    fn our_files_carry_an_id_and_checksums_and_read_back_verified() {
        let dir = tempdir("parquet-io");
        let path = dir.join("part-00000.parquet");
        // several checksum blocks and row groups
        write_table(
            File::create(&path).unwrap(),
            &path,
            &table(200_000),
            Codec::default(),
            Vec::new(),
        )
        .unwrap();
        let f = ParquetFile::open(&path).unwrap();
        assert_eq!(f.rows(), 200_000);
        assert_eq!(f.file_id().map(|id| id.len()), Some(16));
        let sums = f.footer.checksums.clone().expect("checksummed");
        assert!(sums.blocks.len() > 2, "{} blocks", sums.blocks.len());
        let mut t = Table::default();
        f.read_into(&mut t, None).unwrap();
        assert_eq!(t.rows, 200_000);
        assert_eq!(
            t.column("loss").unwrap().scalar(199_999),
            Some((199_999f64).sqrt())
        );
        // another copy of the same table is another file
        let other = dir.join("part-00001.parquet");
        write_table(
            File::create(&other).unwrap(),
            &other,
            &table(10),
            Codec::default(),
            Vec::new(),
        )
        .unwrap();
        assert_ne!(ParquetFile::open(&other).unwrap().file_id(), f.file_id());
    }

    #[test]
    fn another_writers_file_reads_unchecked() {
        let dir = tempdir("parquet-io-foreign");
        let path = dir.join("shard-00000.parquet");
        let batch = table(100).to_record_batch().unwrap();
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let f = ParquetFile::open(&path).unwrap();
        assert!(f.footer.checksums.is_none() && f.file_id().is_none());
        let mut t = Table::default();
        f.read_into(&mut t, None).unwrap();
        assert_eq!(t.rows, 100);
    }
}

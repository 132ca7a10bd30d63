//! Parquet in and out of `Table`s, with our writer properties.

use std::fs::File;
use std::io;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::metadata::KeyValue;

use crate::props::{writer_properties, Codec};
use crate::table::Table;

pub fn to_io(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Writes `table` as one Parquet file into `sink` and hands the sink back.
pub fn write_table<W: io::Write + Send>(sink: W, table: &Table, codec: Codec, metadata: Vec<KeyValue>) -> io::Result<W> {
    let batch = table.to_record_batch().map_err(to_io)?;
    let props = writer_properties(batch.schema().as_ref(), codec, metadata);
    let mut w = ArrowWriter::try_new(sink, batch.schema(), Some(props)).map_err(to_io)?;
    w.write(&batch).map_err(to_io)?;
    w.into_inner().map_err(to_io)
}

/// Footer key-value metadata of a Parquet file.
pub fn footer_metadata_of(file: File) -> io::Result<Vec<(String, String)>> {
    let reader = SerializedFileReader::new(file).map_err(to_io)?;
    let kv = reader.metadata().file_metadata().key_value_metadata().cloned().unwrap_or_default();
    Ok(kv.into_iter().map(|k| (k.key, k.value.unwrap_or_default())).collect())
}

/// Row count from the footer alone.
pub fn row_count(file: File) -> io::Result<u64> {
    let reader = SerializedFileReader::new(file).map_err(to_io)?;
    Ok(reader.metadata().file_metadata().num_rows().max(0) as u64)
}

/// The Arrow schema of a Parquet file (from its footer).
pub fn arrow_schema(file: File) -> io::Result<SchemaRef> {
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(to_io)?;
    Ok(b.schema().clone())
}

/// Reads a Parquet file, appending its rows to `table` (columns unioned by name).
/// `columns` restricts the read to those top-level columns when given.
pub fn read_into(file: File, table: &mut Table, columns: Option<&[String]>) -> io::Result<()> {
    let mut b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(to_io)?.with_batch_size(65_536);
    if let Some(cols) = columns {
        let mask = ProjectionMask::roots(b.parquet_schema(), column_indices(b.schema(), |n| cols.iter().any(|c| c == n)));
        b = b.with_projection(mask);
    }
    for batch in b.build().map_err(to_io)? {
        table.append_batch(&batch.map_err(to_io)?).map_err(to_io)?;
    }
    Ok(())
}

/// Indices of the top-level columns of `schema` whose name `keep` accepts.
pub fn column_indices(schema: &arrow::datatypes::Schema, keep: impl Fn(&str) -> bool) -> Vec<usize> {
    schema.fields().iter().enumerate().filter(|(_, f)| keep(f.name())).map(|(i, _)| i).collect()
}

/// Streams batches of a Parquet file to `f` (compaction: constant memory per batch).
pub fn for_each_batch(
    file: File,
    mut f: impl FnMut(arrow::array::RecordBatch) -> io::Result<()>,
) -> io::Result<()> {
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(to_io)?.with_batch_size(65_536);
    for batch in b.build().map_err(to_io)? {
        f(batch.map_err(to_io)?)?;
    }
    Ok(())
}

/// An ArrowWriter over `sink` with our properties (compaction writes several batches).
pub fn arrow_writer<W: io::Write + Send>(
    sink: W,
    schema: SchemaRef,
    codec: Codec,
    metadata: Vec<KeyValue>,
) -> io::Result<ArrowWriter<W>> {
    let props = writer_properties(schema.as_ref(), codec, metadata);
    ArrowWriter::try_new(sink, Arc::clone(&schema), Some(props)).map_err(to_io)
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
    let _ = write_table(Vec::new(), &t, Codec::default(), Vec::new());
}

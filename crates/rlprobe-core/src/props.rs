//! The one place Parquet writer properties are made. Every file rlprobe writes (part files,
//! compacted tables, the pre-warm) goes through `writer_properties` (through
//! `parquet_io::arrow_writer`, which adds the file id and the checksums), so encoding and
//! compression are chosen once, from measurements (`cargo bench --bench compression`,
//! figures in docs/architecture.md).

use arrow::datatypes::{DataType, Schema};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::metadata::KeyValue;
use parquet::schema::types::ColumnPath;

/// Rows per row group: bounds reader memory and lets readers skip by statistics.
pub const MAX_ROW_GROUP_ROWS: usize = 65_536;

/// Knobs the compression benchmark sweeps. `Codec::default()` is the shipped choice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Codec {
    pub zstd_level: i32,
    /// Dictionary encoding (for the columns BYTE_STREAM_SPLIT does not cover).
    pub dictionary: bool,
    /// BYTE_STREAM_SPLIT for float64 columns (instead of dictionary/plain): groups the
    /// bytes of each double so the exponent and high mantissa bytes compress.
    pub byte_stream_split: bool,
}

impl Default for Codec {
    fn default() -> Self {
        // Chosen from benches/compression.rs (100k steps, 46 columns; figures in
        // docs/architecture.md): BYTE_STREAM_SPLIT took 19.6 MB to 17.2 MB at zstd(3);
        // dictionaries only cost (the int columns are step-like, unique per row); zstd(6+)
        // saved under 1% for twice the write time.
        Codec { zstd_level: 3, dictionary: false, byte_stream_split: true }
    }
}

/// Writer properties for a table with `schema`, carrying `metadata` in the footer.
pub fn writer_properties(schema: &Schema, codec: Codec, metadata: Vec<KeyValue>) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(codec.zstd_level).unwrap_or_default()))
        .set_max_row_group_size(MAX_ROW_GROUP_ROWS)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(codec.dictionary)
        // no page index: nothing may be written between the last row group and the footer,
        // where the checksum record's length is fixed (checksums.rs); our readers skip row
        // groups by the chunk statistics and never used it
        .set_offset_index_disabled(true)
        // says the file carries checksums: without a readable record it is damaged
        .set_created_by(format!("rlprobe {} {}", env!("CARGO_PKG_VERSION"), crate::checksums::CHECKSUMMED_BY));
    if !metadata.is_empty() {
        b = b.set_key_value_metadata(Some(metadata));
    }
    if codec.byte_stream_split {
        for field in schema.fields() {
            if field.data_type() == &DataType::Float64 {
                let path = ColumnPath::new(vec![field.name().clone()]);
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT);
            }
        }
    }
    b.build()
}

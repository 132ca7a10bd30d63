//! The one place Parquet writer properties are made. Every file rlprobe writes (part files,
//! compacted tables, the pre-warm) goes through `writer_properties` (through
//! `parquet_io::arrow_writer`, which adds the file id and the checksums), so encoding and
//! compression are chosen once, from measurements (`cargo bench --bench compression`,
//! figures in docs/architecture.md).

use arrow::datatypes::{DataType, Schema};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

use crate::error::{Error, Result};

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
        Codec {
            zstd_level: 3,
            dictionary: false,
            byte_stream_split: true,
        }
    }
}

/// Writer properties for a table with `schema`, carrying `metadata` in the footer. A zstd
/// level outside 1..=22 is refused, not silently replaced by another.
pub fn writer_properties(
    schema: &Schema,
    codec: Codec,
    metadata: Vec<KeyValue>,
) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(codec.zstd_level).map_err(|e| Error::InvalidOption {
        option: "zstd level",
        value: codec.zstd_level.to_string(),
        reason: format!("expected 1 to 22 ({e})"),
    })?;
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_size(MAX_ROW_GROUP_ROWS)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(codec.dictionary)
        // no page index: nothing may be written between the last row group and the footer,
        // where the checksum record's length is fixed (checksums.rs); our readers skip row
        // groups by the chunk statistics and never used it
        .set_offset_index_disabled(true)
        // says the file carries checksums: without a readable record it is damaged
        .set_created_by(format!(
            "rlprobe {} {}",
            env!("CARGO_PKG_VERSION"),
            crate::checksums::CHECKSUMMED_BY
        ));
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
    Ok(b.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zstd_level_out_of_range_is_refused_naming_it() {
        let schema = Schema::empty();
        for level in [0, 23, -5] {
            let e = writer_properties(
                &schema,
                Codec {
                    zstd_level: level,
                    ..Codec::default()
                },
                Vec::new(),
            )
            .unwrap_err();
            assert_eq!(e.code(), crate::Code::Invalid);
            assert!(
                e.to_string()
                    .starts_with(&format!("invalid zstd level {level}: expected 1 to 22")),
                "{e}"
            );
        }
        let props = writer_properties(
            &schema,
            Codec {
                zstd_level: 9,
                ..Codec::default()
            },
            Vec::new(),
        )
        .unwrap();
        assert_eq!(
            props.compression(&ColumnPath::new(vec!["x".into()])),
            Compression::ZSTD(ZstdLevel::try_new(9).unwrap())
        );
    }
}

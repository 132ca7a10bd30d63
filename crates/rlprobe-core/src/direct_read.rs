//! The table reader's own decoder for number columns: a top-level float64 or int64 column,
//! optional or required, in data pages v1 or v2, PLAIN, BYTE_STREAM_SPLIT or dictionary
//! encoded, zstd-compressed or not — every step column rlprobe and Python rlprobe write.
//!
//! Why not the Arrow reader: at a million steps it makes a zstd context per page and
//! decompresses through its window, decodes into Arrow arrays of 65,536 rows, and the table
//! copies them once more. Here one zstd context serves a whole file, a page is decompressed
//! in one call into a reused buffer, and its values go straight into the table's column.
//! Everything else (other codecs, encodings, types, lists) still goes through the Arrow
//! reader: `plan` decides per column from the footer, before a byte is read. Pages are read
//! through `CheckedFile` (block checksums) and the parquet crate's page reader (page CRCs),
//! as the Arrow reader reads them.

use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use parquet::basic::{Compression, Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use parquet::file::serialized_reader::SerializedPageReader;

use crate::checksums::CheckedFile;
use crate::error::Result;
use crate::parquet_io::ParquetFile;
use crate::schema::ColumnKind;
use crate::table::{ColumnBuf, ColumnValues, Table};

/// A column this decoder reads: its name, its leaf in the Parquet schema, its stored type.
#[derive(Debug, Clone)]
pub struct DirectColumn {
    pub name: String,
    leaf: usize,
    stored: Stored,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stored {
    Double,
    Int64,
}

/// The columns of a file (those `columns` asks for, or all) that this decoder reads in every
/// row group of `groups`; the others are left to the Arrow reader. A column the table
/// already holds as a list is left to it too (it reports the conflict).
pub fn plan(
    meta: &ParquetMetaData,
    schema: &Schema,
    columns: Option<&[String]>,
    groups: &[usize],
    table: &Table,
) -> Vec<DirectColumn> {
    // no rows to add: nothing to plan (the Arrow reader makes no column of an empty file)
    let rows: i64 = groups.iter().map(|&g| meta.row_group(g).num_rows()).sum();
    if rows <= 0 {
        return Vec::new();
    }
    let descr = meta.file_metadata().schema_descr();
    let mut out = Vec::new();
    for field in schema.fields() {
        let name = field.name();
        if !columns.is_none_or(|c| c.iter().any(|n| n == name)) {
            continue;
        }
        let stored = match field.data_type() {
            DataType::Float64 => Stored::Double,
            DataType::Int64 => Stored::Int64,
            _ => continue,
        };
        if matches!(
            table.column(name).map(|c| c.kind()),
            Some(ColumnKind::ListF64)
        ) {
            continue;
        }
        let Some(leaf) = (0..descr.num_columns()).find(|&i| {
            let column = descr.column(i);
            let parts = column.path().parts();
            parts.len() == 1 && parts[0] == *name
        }) else {
            continue;
        };
        let c = descr.column(leaf);
        let physical = match stored {
            Stored::Double => PhysicalType::DOUBLE,
            Stored::Int64 => PhysicalType::INT64,
        };
        if c.max_rep_level() != 0 || c.max_def_level() > 1 || c.physical_type() != physical {
            continue;
        }
        if groups
            .iter()
            .all(|&g| readable(meta.row_group(g).column(leaf)))
        {
            out.push(DirectColumn {
                name: name.clone(),
                leaf,
                stored,
            });
        }
    }
    out
}

/// Whether this decoder knows the chunk's codec and every encoding it lists.
fn readable(chunk: &ColumnChunkMetaData) -> bool {
    matches!(
        chunk.compression(),
        Compression::UNCOMPRESSED | Compression::ZSTD(_)
    ) && chunk.encodings().all(|e| {
        matches!(
            e,
            Encoding::PLAIN
                | Encoding::RLE
                | Encoding::BYTE_STREAM_SPLIT
                | Encoding::RLE_DICTIONARY
                | Encoding::PLAIN_DICTIONARY
        )
    })
}

/// A failure of this decoder: the caller names the file (`ParquetFile::damaged`).
pub type DecodeError = Box<dyn std::error::Error + Send + Sync>;

fn bad(detail: String) -> DecodeError {
    detail.into()
}

/// Appends the rows of `groups` (in that order) of the planned columns to `table`, from row
/// `table.rows` on; the caller finishes the rows. A decoding failure names the file.
pub fn read(
    file: &ParquetFile,
    plan: &[DirectColumn],
    groups: &[usize],
    table: &mut Table,
) -> Result<()> {
    let start = table.rows;
    let checked = Arc::new(file.checked()?);
    let meta = file.metadata();
    let mut decoder = Decoder::new().map_err(|e| file.damaged(e))?;
    for c in plan {
        let kind = match c.stored {
            Stored::Double => ColumnKind::F64,
            Stored::Int64 => ColumnKind::I64,
        };
        let col = table
            .column_mut(&c.name, kind)
            .map_err(|e| e.in_file(&file.path))?;
        col.pad_to(start);
        for &g in groups {
            let group = meta.row_group(g);
            let chunk = group.column(c.leaf);
            let rows = group.num_rows().max(0) as usize;
            if let Err(e) = decoder.read_chunk(Arc::clone(&checked), chunk, rows, c.stored, col) {
                // the planned columns back to the table's rows: a table is whole or not read
                for p in plan {
                    if let Some(i) = table.names.iter().position(|n| *n == p.name) {
                        table.columns[i].truncate(start);
                    }
                }
                return Err(file.damaged(ChunkError {
                    column: c.name.clone(),
                    group: g,
                    source: e,
                }));
            }
        }
    }
    Ok(())
}

/// A decoding failure with the column and row group it happened in; its source is the
/// failure itself (which may carry a checksum's finding: `ParquetFile::damaged` looks).
#[derive(Debug)]
struct ChunkError {
    column: String,
    group: usize,
    source: DecodeError,
}

impl std::fmt::Display for ChunkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "column {:?}, row group {}: {}",
            self.column, self.group, self.source
        )
    }
}

impl std::error::Error for ChunkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// Buffers reused from page to page and chunk to chunk.
struct Decoder {
    zstd: zstd::bulk::Decompressor<'static>,
    /// A page's decompressed bytes.
    page: Vec<u8>,
    /// A page's definition levels, one byte each (0: null, 1: set).
    levels: Vec<u8>,
    /// A page's set values, as stored bits.
    bits: Vec<u64>,
    indices: Vec<u32>,
    dictionary: Vec<u64>,
}

impl Decoder {
    fn new() -> std::result::Result<Decoder, DecodeError> {
        Ok(Decoder {
            zstd: zstd::bulk::Decompressor::new()?,
            page: Vec::new(),
            levels: Vec::new(),
            bits: Vec::new(),
            indices: Vec::new(),
            dictionary: Vec::new(),
        })
    }

    /// Appends the chunk's `rows` rows to `col`.
    fn read_chunk(
        &mut self,
        file: Arc<CheckedFile>,
        chunk: &ColumnChunkMetaData,
        rows: usize,
        stored: Stored,
        col: &mut ColumnBuf,
    ) -> std::result::Result<(), DecodeError> {
        let compressed = chunk.compression() != Compression::UNCOMPRESSED;
        // the page reader hands over pages as stored: they are decompressed here, into one buffer
        let raw = chunk
            .clone()
            .into_builder()
            .set_compression(Compression::UNCOMPRESSED)
            .build()?;
        let mut pages = SerializedPageReader::new(file, &raw, rows, None)?;
        let optional = chunk.column_descr().max_def_level() == 1;
        self.dictionary.clear();
        let mut have_dictionary = false;
        let mut read = 0usize;
        while let Some(page) = pages.get_next_page()? {
            // each page's values and levels, then one fill for either page version
            let (n, set, encoding, values) = match &page {
                Page::DictionaryPage {
                    buf, num_values, ..
                } => {
                    // a chunk's dictionary holds at most one entry per value: a larger count
                    // is damage, not a reason to reserve its size
                    let n = *num_values as usize;
                    if n > rows {
                        return Err(bad(format!("a dictionary of {n} entries for {rows} rows")));
                    }
                    let body =
                        decompress(&mut self.zstd, &mut self.page, buf, compressed, 64 + n * 8)?;
                    self.dictionary.clear();
                    plain(body, n, &mut self.dictionary, |b| b)?;
                    have_dictionary = true;
                    continue;
                }
                Page::DataPage {
                    buf,
                    num_values,
                    encoding,
                    def_level_encoding,
                    ..
                } => {
                    let n = *num_values as usize;
                    // before anything is sized by it
                    check_rows(read, n, rows)?;
                    let body =
                        decompress(&mut self.zstd, &mut self.page, buf, compressed, bound(n))?;
                    let (set, values) = if optional {
                        if *def_level_encoding != Encoding::RLE {
                            return Err(bad(format!(
                                "definition levels encoded {def_level_encoding}"
                            )));
                        }
                        let len = body
                            .get(..4)
                            .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
                            .ok_or_else(|| bad("a page shorter than its level length".into()))?;
                        let levels = body
                            .get(4..4 + len)
                            .ok_or_else(|| bad("definition levels past the page's end".into()))?;
                        let set = def_levels(levels, n, &mut self.levels)?;
                        (set, &body[4 + len..])
                    } else {
                        (n, body)
                    };
                    (n, set, *encoding, values)
                }
                Page::DataPageV2 {
                    buf,
                    num_values,
                    encoding,
                    def_levels_byte_len,
                    rep_levels_byte_len,
                    is_compressed,
                    ..
                } => {
                    let n = *num_values as usize;
                    check_rows(read, n, rows)?;
                    let (rep, def) = (*rep_levels_byte_len as usize, *def_levels_byte_len as usize);
                    let levels = buf
                        .get(rep..rep + def)
                        .ok_or_else(|| bad("definition levels past the page's end".into()))?;
                    let set = if optional {
                        def_levels(levels, n, &mut self.levels)?
                    } else {
                        n
                    };
                    let body = decompress(
                        &mut self.zstd,
                        &mut self.page,
                        &buf[rep + def..],
                        compressed && *is_compressed,
                        bound(n),
                    )?;
                    (n, set, *encoding, body)
                }
            };
            fill_page(
                col,
                stored,
                encoding,
                values_of(set, values),
                (set < n).then_some(self.levels.as_slice()),
                have_dictionary.then_some(self.dictionary.as_slice()),
                &mut self.indices,
                &mut self.bits,
            )?;
            read += n;
        }
        if read != rows {
            return Err(bad(format!(
                "pages hold {read} values for the row group's {rows} rows"
            )));
        }
        Ok(())
    }
}

/// Fails when a page of `n` values would take the row group past its `rows` rows.
fn check_rows(read: usize, n: usize, rows: usize) -> std::result::Result<(), DecodeError> {
    if read + n > rows {
        return Err(bad(format!(
            "pages hold more values than the row group's {rows} rows"
        )));
    }
    Ok(())
}

/// Decodes a data page into `col`: straight into the column when every row is set, through
/// `bits` (then spread over the rows) when `levels` says some are null.
#[allow(
    clippy::too_many_arguments,
    reason = "the decoder's buffers, passed apart from the page they decode"
)]
fn fill_page(
    col: &mut ColumnBuf,
    stored: Stored,
    encoding: Encoding,
    v: Values<'_>,
    levels: Option<&[u8]>,
    dictionary: Option<&[u64]>,
    indices: &mut Vec<u32>,
    bits: &mut Vec<u64>,
) -> std::result::Result<(), DecodeError> {
    if let Some(levels) = levels {
        bits.clear();
        decode_values(encoding, v, dictionary, indices, bits, |b| b)?;
        return append(col, bits, levels, stored);
    }
    let n = v.count;
    match (&mut col.values, stored) {
        (ColumnValues::F64(out), Stored::Double) => {
            decode_values(encoding, v, dictionary, indices, out, f64::from_bits)?
        }
        (ColumnValues::F64(out), Stored::Int64) => {
            decode_values(encoding, v, dictionary, indices, out, |b| b as i64 as f64)?
        }
        (ColumnValues::I64(out), Stored::Int64) => {
            decode_values(encoding, v, dictionary, indices, out, |b| b as i64)?
        }
        (_, stored) => return Err(mismatch(stored, col)),
    }
    col.valid.push_run(true, n);
    Ok(())
}

fn mismatch(stored: Stored, col: &ColumnBuf) -> DecodeError {
    bad(format!(
        "a {stored:?} column read into a {} column",
        col.kind().as_str()
    ))
}

/// A page's set values and how many there are.
struct Values<'a> {
    count: usize,
    bytes: &'a [u8],
}

fn values_of(count: usize, bytes: &[u8]) -> Values<'_> {
    Values { count, bytes }
}

/// An upper bound on the decompressed size of a data page of `n` values of 8 bytes: values
/// (8n, or dictionary indices at most 5n), levels at their least compact (2n) and headers.
fn bound(n: usize) -> usize {
    64 + n.saturating_mul(10)
}

/// The page's bytes decompressed into `out` (or `src` itself when stored uncompressed), in
/// one call with the file's context. More than `bound` bytes is damage: no page of the
/// encodings read here can hold more, and a damaged size must not size an allocation.
fn decompress<'a>(
    zstd: &mut zstd::bulk::Decompressor<'static>,
    out: &'a mut Vec<u8>,
    src: &'a [u8],
    compressed: bool,
    bound: usize,
) -> std::result::Result<&'a [u8], DecodeError> {
    // an empty compressed page holds no set values (the format allows it)
    if !compressed || src.is_empty() {
        return Ok(src);
    }
    out.clear();
    let size = match zstd::zstd_safe::get_frame_content_size(src) {
        Ok(Some(n)) => (n as usize).min(bound),
        _ => bound,
    };
    out.reserve(size);
    if let Err(e) = zstd.decompress_to_buffer(src, out) {
        return Err(bad(format!(
            "a zstd page that does not decompress into the {bound} bytes its values allow: {e}"
        )));
    }
    Ok(out)
}

/// Reads a ULEB128 number at `*pos`.
fn uleb128(buf: &[u8], pos: &mut usize) -> std::result::Result<u64, DecodeError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf
            .get(*pos)
            .ok_or_else(|| bad("a run header past the levels' end".into()))?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(bad("a run header longer than 64 bits".into()))
}

/// One run of the RLE/bit-packed hybrid encoding.
enum Run<'a> {
    /// `count` times one value.
    Repeated(u32, usize),
    /// The first `count` values packed in these bytes.
    Packed(&'a [u8], usize),
}

/// The runs of `n` values of `width` bits, in order.
fn hybrid_runs<'a>(
    buf: &'a [u8],
    width: usize,
    n: usize,
    mut run: impl FnMut(Run<'a>),
) -> std::result::Result<(), DecodeError> {
    let mut pos = 0;
    let mut done = 0;
    while done < n {
        let header = uleb128(buf, &mut pos)?;
        if header & 1 == 1 {
            let groups = (header >> 1) as usize;
            // an empty run says nothing: skipped, as the Arrow reader does
            let count = groups.saturating_mul(8).min(n - done);
            // the values taken need their bits; the rest of the last group may be cut short
            let need = (count * width).div_ceil(8);
            let end = pos + groups.saturating_mul(width).min(buf.len() - pos);
            let bytes = buf
                .get(pos..end)
                .filter(|b| b.len() >= need)
                .ok_or_else(|| bad("a bit-packed run past the data's end".into()))?;
            if count > 0 {
                run(Run::Packed(bytes, count));
            }
            pos = end;
            done += count;
        } else {
            let count = ((header >> 1) as usize).min(n - done);
            let size = width.div_ceil(8);
            let bytes = buf
                .get(pos..pos + size)
                .ok_or_else(|| bad("a repeated run past the data's end".into()))?;
            let mut value = 0u32;
            for (i, b) in bytes.iter().enumerate() {
                value |= u32::from(*b) << (8 * i);
            }
            if count > 0 {
                run(Run::Repeated(value, count));
            }
            pos += size;
            done += count;
        }
    }
    Ok(())
}

/// Definition levels (bit width 1) of `n` values into `out`, one byte each; returns how
/// many are set.
fn def_levels(buf: &[u8], n: usize, out: &mut Vec<u8>) -> std::result::Result<usize, DecodeError> {
    out.clear();
    out.reserve(n);
    let mut over = false;
    hybrid_runs(buf, 1, n, |run| match run {
        Run::Repeated(value, count) => {
            over |= value > 1;
            out.resize(out.len() + count, value as u8);
        }
        Run::Packed(bytes, count) => out.extend(
            bytes
                .iter()
                .flat_map(|b| (0..8).map(move |bit| (b >> bit) & 1))
                .take(count),
        ),
    })?;
    if over {
        return Err(bad("a definition level above 1".into()));
    }
    Ok(out.iter().map(|&l| l as usize).sum())
}

/// `n` dictionary indices of `width` bits into `out`.
fn indices(
    buf: &[u8],
    width: usize,
    n: usize,
    out: &mut Vec<u32>,
) -> std::result::Result<(), DecodeError> {
    if width > 32 {
        return Err(bad(format!("dictionary indices of {width} bits")));
    }
    out.clear();
    out.reserve(n);
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    hybrid_runs(buf, width, n, |run| match run {
        Run::Repeated(value, count) => out.resize(out.len() + count, value),
        Run::Packed(bytes, count) => {
            for i in 0..count {
                let bit = i * width;
                let mut word = [0u8; 8];
                let from = bit / 8;
                let avail = (bytes.len() - from).min(8);
                word[..avail].copy_from_slice(&bytes[from..from + avail]);
                out.push((u64::from_le_bytes(word) >> (bit % 8)) as u32 & mask);
            }
        }
    })
}

/// `n` PLAIN values of 8 bytes appended to `out`, each through `from`.
fn plain<T>(
    bytes: &[u8],
    n: usize,
    out: &mut Vec<T>,
    from: impl Fn(u64) -> T,
) -> std::result::Result<(), DecodeError> {
    let data = bytes
        .get(..n * 8)
        .ok_or_else(|| bad(format!("{} bytes for {n} values", bytes.len())))?;
    out.extend(
        data.chunks_exact(8)
            .map(|c| from(u64::from_le_bytes(c.try_into().unwrap()))),
    );
    Ok(())
}

/// `n` BYTE_STREAM_SPLIT values of 8 bytes (byte k of every value in stream k) into `out`.
fn byte_stream_split<T>(
    bytes: &[u8],
    n: usize,
    out: &mut Vec<T>,
    from: impl Fn(u64) -> T,
) -> std::result::Result<(), DecodeError> {
    // each stream is an eighth of the bytes (as the Arrow reader splits them)
    let stride = bytes.len() / 8;
    if stride < n {
        return Err(bad(format!(
            "{} bytes of split streams for {n} values",
            bytes.len()
        )));
    }
    if n == 0 {
        return Ok(());
    }
    let s: Vec<&[u8]> = bytes.chunks_exact(stride).collect();
    out.reserve(n);
    // eight values at a time: eight bytes of each stream, transposed as an 8×8 byte matrix
    let whole = n / 8 * 8;
    for at in (0..whole).step_by(8) {
        let mut rows = [0u64; 8];
        for (row, stream) in rows.iter_mut().zip(&s) {
            *row = u64::from_le_bytes(stream[at..at + 8].try_into().unwrap());
        }
        out.extend(transpose_bytes(rows).map(&from));
    }
    out.extend((whole..n).map(|i| {
        let mut value = [0u8; 8];
        for (byte, stream) in value.iter_mut().zip(&s) {
            *byte = stream[i];
        }
        from(u64::from_le_bytes(value))
    }));
    Ok(())
}

/// The 8×8 matrix of bytes (byte j of `rows[k]`) transposed: byte k of row j of the result is
/// byte j of `rows[k]`. Three rounds of swapping blocks (4, 2, then 1 bytes wide).
fn transpose_bytes(mut rows: [u64; 8]) -> [u64; 8] {
    for (step, mask) in [
        (4, 0x0000_0000_ffff_ffffu64),
        (2, 0x0000_ffff_0000_ffff),
        (1, 0x00ff_00ff_00ff_00ff),
    ] {
        for k in (0..8).filter(|k| k & step == 0) {
            let shift = 8 * step as u32;
            let t = ((rows[k] >> shift) ^ rows[k + step]) & mask;
            rows[k] ^= t << shift;
            rows[k + step] ^= t;
        }
    }
    rows
}

/// A data page's set values appended to `out`, each through `from` (from its stored bits).
fn decode_values<T>(
    encoding: Encoding,
    v: Values<'_>,
    dictionary: Option<&[u64]>,
    indices_buf: &mut Vec<u32>,
    out: &mut Vec<T>,
    from: impl Fn(u64) -> T,
) -> std::result::Result<(), DecodeError> {
    out.reserve(v.count);
    match encoding {
        Encoding::PLAIN => plain(v.bytes, v.count, out, from),
        Encoding::BYTE_STREAM_SPLIT => byte_stream_split(v.bytes, v.count, out, from),
        Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY => {
            let dictionary = dictionary
                .ok_or_else(|| bad("a dictionary-encoded page before any dictionary".into()))?;
            if v.count == 0 {
                return Ok(());
            }
            let (&width, rest) = v
                .bytes
                .split_first()
                .ok_or_else(|| bad("a dictionary-encoded page without its bit width".into()))?;
            indices(rest, width as usize, v.count, indices_buf)?;
            for &i in indices_buf.iter() {
                let value = dictionary.get(i as usize).ok_or_else(|| {
                    bad(format!(
                        "index {i} into a dictionary of {}",
                        dictionary.len()
                    ))
                })?;
                out.push(from(*value));
            }
            Ok(())
        }
        other => Err(bad(format!("a page encoded {other}"))),
    }
}

/// Appends a page's rows to `col`: `bits` are its set values, `levels` say which rows they
/// fill; a null's slot holds what `ColumnBuf::push_null` writes.
fn append(
    col: &mut ColumnBuf,
    bits: &[u64],
    levels: &[u8],
    stored: Stored,
) -> std::result::Result<(), DecodeError> {
    match (&mut col.values, stored) {
        (ColumnValues::F64(v), Stored::Double) => put(v, bits, levels, f64::from_bits, f64::NAN),
        (ColumnValues::F64(v), Stored::Int64) => {
            put(v, bits, levels, |b| b as i64 as f64, f64::NAN)
        }
        (ColumnValues::I64(v), Stored::Int64) => put(v, bits, levels, |b| b as i64, 0),
        (_, stored) => return Err(mismatch(stored, col)),
    }
    col.valid.extend(levels.iter().map(|&x| x == 1));
    Ok(())
}

fn put<T: Copy>(v: &mut Vec<T>, bits: &[u64], levels: &[u8], from: impl Fn(u64) -> T, null: T) {
    // the caller checked that `bits` holds one value per set level
    let mut set = bits.iter();
    v.extend(levels.iter().map(|&l| match l {
        1 => set.next().map_or(null, |&b| from(b)),
        _ => null,
    }));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
    use arrow::datatypes::{Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::{WriterProperties, WriterVersion};

    use super::*;
    use crate::testutil::tempdir;

    #[test]
    fn definition_levels_decode_from_repeated_and_bit_packed_runs() {
        let mut out = Vec::new();
        // 5 × 1, then one packed group 0b1011_0101 (LSB first), of which 6 are taken
        let buf = [5 << 1, 1, (1 << 1) | 1, 0b1011_0101];
        assert_eq!(def_levels(&buf, 11, &mut out).unwrap(), 5 + 4);
        assert_eq!(out, [1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1]);
        assert!(
            def_levels(&[3 << 1, 2], 3, &mut out).is_err(),
            "a level of 2"
        );
        assert!(
            def_levels(&[9 << 1, 1], 10, &mut out).is_err(),
            "runs end early"
        );
        assert_eq!(
            def_levels(&[0, 1, 1 << 1, 1], 1, &mut out).unwrap(),
            1,
            "an empty run is skipped"
        );
        assert!(
            def_levels(&[0, 1], 1, &mut out).is_err(),
            "only an empty run"
        );
    }

    #[test]
    fn dictionary_indices_decode_at_any_width() {
        let mut out = Vec::new();
        // width 3, one packed group: 0..8 as 3-bit values, LSB first
        let mut bits = 0u32;
        for (i, v) in (0u32..8).enumerate() {
            bits |= v << (3 * i);
        }
        let b = bits.to_le_bytes();
        indices(&[3, b[0], b[1], b[2], 4 << 1, 6], 3, 12, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 5, 6, 7, 6, 6, 6, 6]);
        // width 0: a one-entry dictionary
        indices(&[7 << 1], 0, 7, &mut out).unwrap();
        assert_eq!(out, [0; 7]);
        // width 17, repeated value in 3 bytes
        indices(&[2 << 1, 0x01, 0x00, 0x01], 17, 2, &mut out).unwrap();
        assert_eq!(out, [65_537, 65_537]);
        assert!(indices(&[1 << 1], 33, 1, &mut out).is_err());
    }

    #[test]
    fn byte_stream_split_puts_byte_k_of_each_value_in_stream_k() {
        let values = [1.5f64, -0.0, f64::NAN, f64::INFINITY];
        let mut streams = vec![0u8; 32];
        for (i, v) in values.iter().enumerate() {
            for (k, byte) in v.to_le_bytes().iter().enumerate() {
                streams[k * 4 + i] = *byte;
            }
        }
        let mut out = Vec::new();
        byte_stream_split(&streams, 4, &mut out, |b| b).unwrap();
        let want: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(out, want);
        assert!(byte_stream_split(&streams[..31], 4, &mut out, |b| b).is_err());
        // streams of 5 bytes of which 4 are values (as the Arrow reader reads them)
        let mut wide = vec![0u8; 40];
        for k in 0..8 {
            wide[k * 5..k * 5 + 4].copy_from_slice(&streams[k * 4..k * 4 + 4]);
        }
        out.clear();
        byte_stream_split(&wide, 4, &mut out, |b| b).unwrap();
        assert_eq!(out, want);
        // whole blocks of eight and a remainder
        for n in [8, 21, 64] {
            let values: Vec<u64> = (0..n as u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 3))
                .collect();
            let mut streams = vec![0u8; n * 8];
            for (i, v) in values.iter().enumerate() {
                for (k, byte) in v.to_le_bytes().iter().enumerate() {
                    streams[k * n + i] = *byte;
                }
            }
            let mut out = Vec::new();
            byte_stream_split(&streams, n, &mut out, |b| b).unwrap();
            assert_eq!(out, values, "{n} values");
        }
    }

    /// A small deterministic generator (xorshift64*), so a failing layout can be rerun.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.next() % 100 < percent
        }
    }

    /// Columns of every sort a step file holds: nulls here and there, runs of nulls, NaN and
    /// ±Inf, few distinct ints (dictionary), many distinct ones, constants, all null, required.
    fn batch(rows: usize, seed: u64) -> RecordBatch {
        let mut r = Rng(seed | 1);
        let mut floats = Vec::new();
        let mut run_nulls = 0;
        for i in 0..rows {
            if run_nulls > 0 || r.chance(2) {
                run_nulls = if run_nulls > 0 { run_nulls - 1 } else { 40 };
                floats.push(None);
                continue;
            }
            let x = match r.next() % 50 {
                0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                _ => (r.next() as f64 / u64::MAX as f64) * 10.0 - i as f64 * 1e-3,
            };
            floats.push(if r.chance(20) { None } else { Some(x) });
        }
        let dense: Vec<f64> = (0..rows).map(|i| (i as f64).sin()).collect();
        let small_ints: Vec<Option<i64>> = (0..rows)
            .map(|_| (!r.chance(10)).then(|| (r.next() % 7) as i64 - 3))
            .collect();
        let big_ints: Vec<Option<i64>> = (0..rows)
            .map(|_| (!r.chance(5)).then(|| r.next() as i64))
            .collect();
        let schema = Schema::new(vec![
            Field::new("step", DataType::Int64, false),
            Field::new("loss", DataType::Float64, true),
            Field::new("dense", DataType::Float64, true),
            Field::new("required", DataType::Float64, false),
            Field::new("constant", DataType::Float64, true),
            Field::new("never", DataType::Float64, true),
            Field::new("small_ints", DataType::Int64, true),
            Field::new("big_ints", DataType::Int64, true),
        ]);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..rows as i64)),
            Arc::new(Float64Array::from(floats)),
            Arc::new(Float64Array::from(dense.clone())),
            Arc::new(Float64Array::from(
                dense.iter().map(|x| x * 2.0).collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from(vec![Some(0.25); rows])),
            Arc::new(Float64Array::from(vec![None::<f64>; rows])),
            Arc::new(Int64Array::from(small_ints)),
            Arc::new(Int64Array::from(big_ints)),
        ];
        RecordBatch::try_new(Arc::new(schema), columns).unwrap()
    }

    fn write(path: &std::path::Path, batch: &RecordBatch, props: Option<WriterProperties>) {
        let file = std::fs::File::create(path).unwrap();
        // several writes: several pages and row groups
        let slices = (0..batch.num_rows())
            .step_by(1_500)
            .map(|start| batch.slice(start, 1_500.min(batch.num_rows() - start)));
        match props {
            Some(props) => {
                let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
                for b in slices {
                    w.write(&b).unwrap();
                }
                w.close().unwrap();
            }
            // what rlprobe writes (its properties, checksums); a row group per 4,500 rows
            None => {
                let mut w = crate::parquet_io::arrow_writer(
                    file,
                    path,
                    batch.schema(),
                    crate::props::Codec::default(),
                    Vec::new(),
                )
                .unwrap();
                for (i, b) in slices.enumerate() {
                    w.write(&b).unwrap();
                    if i % 3 == 2 {
                        w.flush().unwrap();
                    }
                }
                w.into_inner().unwrap();
            }
        }
    }

    /// Every cell of a table, by bits (NaN is a value here), with whether it is set: a null's
    /// slot must hold what `push_null` writes, as JS reads the values buffer whole.
    fn cells(t: &Table) -> Vec<(String, Vec<(bool, u64)>)> {
        let mut out: Vec<(String, Vec<(bool, u64)>)> = t
            .names
            .iter()
            .zip(&t.columns)
            .map(|(n, c)| {
                let v = (0..t.rows)
                    .map(|r| {
                        let bits = match &c.values {
                            ColumnValues::F64(v) => v[r].to_bits(),
                            ColumnValues::I64(v) => v[r] as u64,
                            ColumnValues::ListF64 { .. } => unreachable!(),
                        };
                        (c.valid.get(r), bits)
                    })
                    .collect();
                (format!("{n} {}", c.kind().as_str()), v)
            })
            .collect();
        out.sort();
        out
    }

    fn props() -> parquet::file::properties::WriterPropertiesBuilder {
        WriterProperties::builder().set_max_row_group_size(4_000)
    }

    #[test]
    fn the_direct_read_equals_the_arrow_read_cell_for_cell_in_every_layout() {
        let dir = tempdir("direct-read");
        let zstd = Compression::ZSTD(ZstdLevel::try_new(1).unwrap());
        let layouts: Vec<(&str, Option<WriterProperties>, bool)> = vec![
            ("ours: byte stream split, zstd", None, true),
            (
                "pages v2, zstd",
                Some(
                    props()
                        .set_writer_version(WriterVersion::PARQUET_2_0)
                        .set_compression(zstd)
                        .build(),
                ),
                true,
            ),
            (
                "dictionary everywhere, uncompressed, small pages",
                Some(
                    props()
                        .set_compression(Compression::UNCOMPRESSED)
                        .set_data_page_row_count_limit(700)
                        .set_write_batch_size(100)
                        .build(),
                ),
                true,
            ),
            (
                "plain, zstd",
                Some(
                    props()
                        .set_dictionary_enabled(false)
                        .set_compression(zstd)
                        .build(),
                ),
                true,
            ),
            (
                "a dictionary that overflows into plain",
                Some(
                    props()
                        .set_dictionary_page_size_limit(512)
                        .set_compression(zstd)
                        .set_write_batch_size(64)
                        .build(),
                ),
                true,
            ),
            (
                "pages v2 uncompressed, byte stream split",
                Some(
                    props()
                        .set_writer_version(WriterVersion::PARQUET_2_0)
                        .set_dictionary_enabled(false)
                        .set_encoding(Encoding::BYTE_STREAM_SPLIT)
                        .build(),
                ),
                true,
            ),
            (
                "snappy (the arrow reader's)",
                Some(props().set_compression(Compression::SNAPPY).build()),
                false,
            ),
        ];
        for (k, (what, props, direct)) in layouts.into_iter().enumerate() {
            let path = dir.join(format!("{k}.parquet"));
            let b = batch(10_007, 0x5eed + k as u64);
            write(&path, &b, props);
            let file = ParquetFile::open(&path).unwrap();
            let groups: Vec<usize> = (0..file.metadata().num_row_groups()).collect();
            assert!(groups.len() >= 3, "{what}: several row groups");
            let planned = plan(
                file.metadata(),
                &file.schema(),
                None,
                &groups,
                &Table::default(),
            );
            assert_eq!(
                planned.len(),
                if direct { 8 } else { 0 },
                "{what}: {planned:?}"
            );
            for (columns, groups) in [
                (None, None),
                (
                    Some(vec!["loss".to_string(), "big_ints".into()]),
                    Some(vec![2, 0]),
                ),
            ] {
                let read = |direct: bool| {
                    let mut t = Table::default();
                    file.read_groups_with(&mut t, columns.as_deref(), groups.as_deref(), direct)
                        .unwrap();
                    t
                };
                let (a, b) = (read(false), read(true));
                assert_eq!(b.rows, a.rows, "{what}");
                assert_eq!(
                    cells(&b),
                    cells(&a),
                    "{what}, {columns:?}, groups {groups:?}"
                );
            }
        }
    }

    #[test]
    fn ints_then_floats_in_one_column_widen_as_the_arrow_read_does() {
        let dir = tempdir("direct-widen");
        let schema_of = |t: DataType| Arc::new(Schema::new(vec![Field::new("x", t, true)]));
        let ints = RecordBatch::try_new(
            schema_of(DataType::Int64),
            vec![Arc::new(Int64Array::from(vec![Some(3), None, Some(-7)]))],
        )
        .unwrap();
        let floats = RecordBatch::try_new(
            schema_of(DataType::Float64),
            vec![Arc::new(Float64Array::from(vec![None, Some(0.5)]))],
        )
        .unwrap();
        // ints without a null: decoded straight into the column, converted there
        let full = RecordBatch::try_new(
            schema_of(DataType::Int64),
            vec![Arc::new(Int64Array::from(vec![Some(5), Some(1 << 60)]))],
        )
        .unwrap();
        write(&dir.join("a.parquet"), &ints, Some(props().build()));
        write(&dir.join("b.parquet"), &floats, Some(props().build()));
        write(&dir.join("c.parquet"), &full, Some(props().build()));
        for order in [["a", "b", "c"], ["b", "c", "a"], ["c", "b", "a"]] {
            let read = |direct: bool| {
                let mut t = Table::default();
                for name in order {
                    let f = ParquetFile::open(&dir.join(format!("{name}.parquet"))).unwrap();
                    let planned = plan(f.metadata(), &f.schema(), None, &[0], &t);
                    assert_eq!(planned.len(), 1, "{name}: the direct path reads x");
                    f.read_groups_with(&mut t, None, None, direct).unwrap();
                }
                t
            };
            let (a, b) = (read(false), read(true));
            assert_eq!(b.rows, 7);
            assert_eq!(cells(&b), cells(&a), "{order:?}");
            assert_eq!(b.columns[0].kind(), ColumnKind::F64);
        }
    }

    #[test]
    fn a_file_without_rows_adds_no_column_and_a_list_column_is_left_to_the_arrow_reader() {
        let dir = tempdir("direct-edges");
        let schema_of = |t: DataType| Arc::new(Schema::new(vec![Field::new("x", t, true)]));
        // closed without a write: no row group
        let empty = std::fs::File::create(dir.join("empty.parquet")).unwrap();
        ArrowWriter::try_new(empty, schema_of(DataType::Int64), None)
            .unwrap()
            .close()
            .unwrap();
        let f = ParquetFile::open(&dir.join("empty.parquet")).unwrap();
        assert!(plan(f.metadata(), &f.schema(), None, &[], &Table::default()).is_empty());
        for direct in [false, true] {
            let mut t = Table::default();
            f.read_groups_with(&mut t, None, None, direct).unwrap();
            assert_eq!((t.rows, t.names.len()), (0, 0), "direct: {direct}");
        }
        // a column the table holds as a list: both readers refuse it alike
        let floats = RecordBatch::try_new(
            schema_of(DataType::Float64),
            vec![Arc::new(Float64Array::from(vec![1.0, 2.0]))],
        )
        .unwrap();
        write(&dir.join("floats.parquet"), &floats, Some(props().build()));
        let f = ParquetFile::open(&dir.join("floats.parquet")).unwrap();
        let mut with_list = Table::default();
        with_list
            .column_mut("x", ColumnKind::ListF64)
            .unwrap()
            .push_list(&[1.0]);
        with_list.finish_rows(1);
        assert!(plan(f.metadata(), &f.schema(), None, &[0], &with_list).is_empty());
        let errors: Vec<String> = [false, true]
            .map(|direct| {
                let mut t = with_list.clone();
                f.read_groups_with(&mut t, None, None, direct)
                    .unwrap_err()
                    .to_string()
            })
            .into();
        assert_eq!(errors[0], errors[1]);
    }

    #[test]
    fn a_damaged_page_is_the_same_error_either_way_naming_the_file() {
        let dir = tempdir("direct-damage");
        let path = dir.join("damaged.parquet");
        write(&path, &batch(6_000, 7), None);
        let mut bytes = std::fs::read(&path).unwrap();
        // a byte in the middle of the data (before the footer): a page of some column
        let at = bytes.len() / 3;
        bytes[at] ^= 0x5a;
        std::fs::write(&path, &bytes).unwrap();
        let errors: Vec<String> = [false, true]
            .map(|direct| {
                let f = ParquetFile::open(&path).unwrap();
                let mut t = Table::default();
                let e = f.read_groups_with(&mut t, None, None, direct).unwrap_err();
                assert!(
                    matches!(e, crate::error::Error::CorruptFile { .. }),
                    "direct: {direct}: {e:?}"
                );
                e.to_string()
            })
            .into();
        assert!(errors[1].contains("damaged.parquet"), "{}", errors[1]);
        assert_eq!(errors[0], errors[1]);
    }
}

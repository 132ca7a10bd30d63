//! Parsed and verified Parquet footers, kept per file for the life of the process. A report
//! or a forensics session asks the reader many small questions (one step's samples, then
//! another's); with hundreds of sample shards, re-parsing every footer on every question
//! cost more than reading the rows. A cached footer is used only when the file's footer
//! bytes still hash as the ones parsed (length and a 64-bit SipHash): path, inode, size and
//! mtime can all repeat when compaction replaces a shard within one clock tick, the bytes
//! cannot differ unnoticed.
//!
//! A footer carrying our checksum record (checksums.rs) is verified before it is parsed, so
//! the Parquet decoder never sees a damaged footer of ours. Errors name the file and say
//! what is wrong with its footer.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::ParquetMetaDataReader;

use crate::checksums::{BlockChecksums, CHECKSUMMED_BY};
use crate::error::{Error, IoContext, Result};

/// Files remembered; past this the cache starts over (footers are small, runs have fewer files).
const MAX_FILES: usize = 16_384;
/// Footers above this are parsed every time rather than held (a very wide file).
const MAX_FOOTER: u64 = 4 << 20;

/// A file's footer: the parsed metadata and, for our files, the block checksums.
#[derive(Clone)]
pub struct Footer {
    pub meta: ArrowReaderMetadata,
    pub checksums: Option<Arc<BlockChecksums>>,
}

/// What a cached footer was parsed from: its length and a 64-bit hash of its bytes (the
/// bytes themselves were most of a small file's cached footprint: 28 KB of a sample
/// shard's, times thousands of shards).
#[derive(PartialEq, Eq, Clone, Copy)]
struct Seen {
    len: usize,
    hash: u64,
}

impl Seen {
    fn of(bytes: &[u8]) -> Seen {
        use std::hash::Hasher;
        // SipHash with fixed keys: the same bytes hash the same in every process
        let mut h = std::hash::DefaultHasher::new();
        h.write(bytes);
        Seen {
            len: bytes.len(),
            hash: h.finish(),
        }
    }
}

type Cache = Mutex<HashMap<PathBuf, (Seen, Footer)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The footer's metadata bytes (without the 8-byte trailer).
fn metadata_bytes(path: &Path, file: &File, len: u64) -> Result<Vec<u8>> {
    if len < 12 {
        return Err(Error::corrupt(
            path,
            format!("{len} bytes: too short for a Parquet file"),
        ));
    }
    let trailer = read_at(path, file, len - 8, 8)?;
    if &trailer[4..] != b"PAR1" {
        return Err(Error::corrupt(
            path,
            "no Parquet footer (the file does not end in PAR1)",
        ));
    }
    let meta_len = u64::from(u32::from_le_bytes([
        trailer[0], trailer[1], trailer[2], trailer[3],
    ]));
    if meta_len + 12 > len {
        return Err(Error::corrupt(path, format!("corrupt footer: it says {meta_len} bytes of metadata, the file has {len} bytes in all")));
    }
    read_at(path, file, len - 8 - meta_len, meta_len as usize)
}

fn read_at(path: &Path, file: &File, offset: u64, len: usize) -> Result<Vec<u8>> {
    crate::checksums::read_at(file, offset, len).at("reading the footer of", path)
}

/// Verifies (when it carries our checksums) and parses a footer's metadata bytes.
fn parse(path: &Path, metadata: &[u8], len: u64) -> Result<Footer> {
    let corrupt = |detail: String| Error::corrupt(path, detail);
    let checksums = match BlockChecksums::find_in(metadata) {
        Some(record) => {
            let record = record.map_err(corrupt)?;
            record.verify_footer(metadata, len).map_err(corrupt)?;
            Some(Arc::new(record))
        }
        None => None,
    };
    let parsed = ParquetMetaDataReader::decode_metadata(metadata)
        .map_err(|e| corrupt(format!("corrupt footer: {e}")))?;
    // a file of ours that says it is checksummed must carry the record (a flipped bit in
    // the record's tag would otherwise pass the file off as unchecked)
    if checksums.is_none()
        && parsed
            .file_metadata()
            .created_by()
            .is_some_and(|c| c.contains(CHECKSUMMED_BY))
    {
        return Err(corrupt("its checksum record is missing or damaged".into()));
    }
    let meta = ArrowReaderMetadata::try_new(Arc::new(parsed), ArrowReaderOptions::new())
        .map_err(|e| corrupt(format!("corrupt footer: {e}")))?;
    Ok(Footer { meta, checksums })
}

/// The verified, parsed footer of the open `file` (`len` bytes) at `path`, parsed again only
/// when its bytes changed.
pub fn footer(path: &Path, file: &File, len: u64) -> Result<Footer> {
    let bytes = metadata_bytes(path, file, len)?;
    let seen_now = Seen::of(&bytes);
    if let Some((seen, footer)) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(path) {
        if *seen == seen_now {
            return Ok(footer.clone());
        }
    }
    // parsed outside the lock: another thread's reads need not wait on this file
    let footer = parse(path, &bytes, len)?;
    if bytes.len() as u64 <= MAX_FOOTER {
        let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
        if c.len() >= MAX_FILES {
            c.clear();
        }
        c.insert(path.to_path_buf(), (seen_now, footer.clone()));
    }
    Ok(footer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tempdir;

    fn write(path: &Path, rows: i64) {
        use arrow::array::{Int64Array, RecordBatch};
        let batch = RecordBatch::try_from_iter([(
            "step",
            Arc::new(Int64Array::from_iter_values(0..rows)) as _,
        )])
        .unwrap();
        let tmp = path.with_extension("tmp");
        let mut w =
            parquet::arrow::ArrowWriter::try_new(File::create(&tmp).unwrap(), batch.schema(), None)
                .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    fn footer_of(path: &Path) -> Footer {
        let f = File::open(path).unwrap();
        footer(path, &f, f.metadata().unwrap().len()).unwrap()
    }

    #[test]
    fn a_file_replaced_under_the_same_name_is_parsed_again() {
        // (same name, and possibly the same inode, size and mtime tick: only the bytes tell)
        let dir = tempdir("footer-cache");
        let path = dir.join("shard-00000.parquet");
        write(&path, 10);
        let first = footer_of(&path);
        assert_eq!(first.meta.metadata().file_metadata().num_rows(), 10);
        assert!(
            first.checksums.is_none(),
            "another writer's file has no checksums of ours"
        );
        let again = footer_of(&path);
        assert!(
            Arc::ptr_eq(first.meta.metadata(), again.meta.metadata()),
            "the same file is served from the cache"
        );
        write(&path, 25);
        let replaced = footer_of(&path);
        assert_eq!(replaced.meta.metadata().file_metadata().num_rows(), 25);
    }

    #[test]
    fn what_is_wrong_with_a_footer_is_said() {
        let dir = tempdir("footer-errors");
        let cases: [(&str, &[u8], &str); 3] = [
            ("empty", b"", "too short"),
            ("text", b"not a parquet file at all", "does not end in PAR1"),
            (
                "long",
                b"PAR1\x00\x00\x00\x00\xff\xff\xff\x7fPAR1",
                "says 2147483647 bytes",
            ),
        ];
        for (name, bytes, expected) in cases {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let f = File::open(&path).unwrap();
            let err = footer(&path, &f, bytes.len() as u64).err().unwrap();
            assert_eq!(err.code(), crate::Code::CorruptFile, "{name}: {err}");
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("{}: damaged Parquet file (", path.display())),
                "{name}: names the file: {text}"
            );
            assert!(text.contains(expected), "{name}: {text}");
        }
    }
}

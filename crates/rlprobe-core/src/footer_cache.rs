//! Parsed Parquet footers, kept per file for the life of the process. A report or a
//! forensics session asks the reader many small questions (one step's samples, then
//! another's); with hundreds of sample shards, re-parsing every footer on every question
//! cost more than reading the rows. A cached footer is used only when the file's footer
//! bytes are still exactly the ones parsed: path, inode, size and mtime can all repeat when
//! compaction replaces a shard within one clock tick, the bytes cannot differ unnoticed.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};

use crate::parquet_io::to_io;

/// Files remembered; past this the cache starts over (footers are small, runs have fewer files).
const MAX_FILES: usize = 16_384;
/// Footers above this are parsed every time rather than held (a very wide file).
const MAX_FOOTER: u64 = 4 << 20;

type Cache = Mutex<HashMap<PathBuf, (Vec<u8>, ArrowReaderMetadata)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The footer's bytes (metadata and its 8-byte trailer), or None when it is not a whole Parquet footer.
fn footer_bytes(file: &File) -> io::Result<Option<Vec<u8>>> {
    let len = file.metadata()?.len();
    if len < 12 {
        return Ok(None);
    }
    // a clone shares the offset, which the Parquet reader never relies on (it seeks per read)
    let mut f = file.try_clone()?;
    let mut trailer = [0u8; 8];
    f.seek(SeekFrom::Start(len - 8))?;
    f.read_exact(&mut trailer)?;
    let meta_len = u64::from(u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]));
    if &trailer[4..] != b"PAR1" || meta_len + 8 > len || meta_len > MAX_FOOTER {
        return Ok(None);
    }
    let mut bytes = vec![0u8; meta_len as usize + 8];
    f.seek(SeekFrom::Start(len - 8 - meta_len))?;
    f.read_exact(&mut bytes)?;
    Ok(Some(bytes))
}

/// The parsed footer of the open `file` at `path`, parsed again only when its bytes changed.
pub fn arrow_metadata(path: &Path, file: &File) -> io::Result<ArrowReaderMetadata> {
    let bytes = footer_bytes(file)?;
    if let Some(bytes) = &bytes {
        if let Some((seen, meta)) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(path) {
            if seen == bytes {
                return Ok(meta.clone());
            }
        }
    }
    // parsed outside the lock: another thread's reads need not wait on this file
    let meta = ArrowReaderMetadata::load(file, ArrowReaderOptions::new()).map_err(|e| to_io(format!("{}: {e}", path.display())))?;
    if let Some(bytes) = bytes {
        let mut c = cache().lock().unwrap_or_else(|p| p.into_inner());
        if c.len() >= MAX_FILES {
            c.clear();
        }
        c.insert(path.to_path_buf(), (bytes, meta.clone()));
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tempdir;

    fn write(path: &Path, rows: i64) {
        use arrow::array::{Int64Array, RecordBatch};
        use std::sync::Arc;
        let batch = RecordBatch::try_from_iter([("step", Arc::new(Int64Array::from_iter_values(0..rows)) as _)]).unwrap();
        let tmp = path.with_extension("tmp");
        let mut w = parquet::arrow::ArrowWriter::try_new(File::create(&tmp).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }

    #[test]
    fn a_file_replaced_under_the_same_name_is_parsed_again() {
        // (same name, and possibly the same inode, size and mtime tick: only the bytes tell)
        let dir = tempdir("footer-cache");
        let path = dir.join("shard-00000.parquet");
        write(&path, 10);
        let first = arrow_metadata(&path, &File::open(&path).unwrap()).unwrap();
        assert_eq!(first.metadata().file_metadata().num_rows(), 10);
        let again = arrow_metadata(&path, &File::open(&path).unwrap()).unwrap();
        assert!(std::sync::Arc::ptr_eq(first.metadata(), again.metadata()), "the same file is served from the cache");
        write(&path, 25);
        let replaced = arrow_metadata(&path, &File::open(&path).unwrap()).unwrap();
        assert_eq!(replaced.metadata().file_metadata().num_rows(), 25);
    }
}

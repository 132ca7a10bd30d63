//! Checksums of every Parquet file rlprobe writes (docs/format.md#checksums-rlprobechecksums).
//!
//! The parquet crate (v57) verifies page CRCs but cannot write them, so our files carry
//! their own, in the footer key `rlprobe.checksums`: a CRC32 of each 64 KiB block of the
//! bytes before the footer, and a CRC32 of the footer itself. A reader checks the footer
//! before parsing it and each block before any of its bytes are decoded, so a flipped bit is
//! an error naming the file, never a wrong number.
//!
//! Writing: `ChecksumSink` sits under the Parquet writer, hashing blocks as bytes pass and
//! holding the footer back; the record is first written with zeros (its length is known once
//! the last row group is out) and filled in before the footer reaches the file.
//! Reading: `BlockChecksums` from a verified footer, and `CheckedFile`, a `ChunkReader` that
//! serves only verified bytes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, IoContext, Result};

/// Footer key of the checksum record.
pub const META_CHECKSUMS: &str = "rlprobe.checksums";
/// Bytes per checksummed block: small enough that a reader reading one column of a file
/// reads little more than that column, large enough that the record stays small (8 hex
/// digits per 64 KiB: 13 KB of footer for a 100 MB file).
pub const BLOCK: u64 = 64 * 1024;
/// The record's version tag.
const TAG: &str = "crc32-v1";
/// Part of the `created_by` of every file written with checksums (props.rs): such a file
/// without a readable record is damaged, not an unchecked file.
pub const CHECKSUMMED_BY: &str = "(checksums crc32-v1)";

/// A file's checksum record: `crc32-v1 block=65536 data=<bytes> footer=<crc> blocks=<crc>…`,
/// each crc as 8 hex digits, the blocks' concatenated.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockChecksums {
    pub block: u64,
    /// Bytes before the footer (the checksummed region).
    pub data_len: u64,
    pub footer: u32,
    pub blocks: Vec<u32>,
}

impl BlockChecksums {
    fn block_count(data_len: u64, block: u64) -> usize {
        data_len.div_ceil(block) as usize
    }

    pub fn encode(&self) -> String {
        let mut s = format!(
            "{TAG} block={} data={} footer={:08x} blocks=",
            self.block, self.data_len, self.footer
        );
        for c in &self.blocks {
            s.push_str(&format!("{c:08x}"));
        }
        s
    }

    /// The record with every checksum zero: what the writer puts in the footer first.
    fn placeholder(data_len: u64) -> BlockChecksums {
        BlockChecksums {
            block: BLOCK,
            data_len,
            footer: 0,
            blocks: vec![0; Self::block_count(data_len, BLOCK)],
        }
    }

    pub fn parse(v: &str) -> Result<BlockChecksums, String> {
        let mut fields = v.split(' ');
        if fields.next() != Some(TAG) {
            return Err(format!(
                "unknown checksum record {:?}",
                v.chars().take(40).collect::<String>()
            ));
        }
        let mut get = |name: &str| -> Result<&str, String> {
            fields
                .next()
                .and_then(|f| f.strip_prefix(name))
                .and_then(|f| f.strip_prefix('='))
                .ok_or(format!("checksum record lacks {name}"))
        };
        let block: u64 = get("block")?
            .parse()
            .map_err(|_| "bad checksum block size")?;
        let data_len: u64 = get("data")?.parse().map_err(|_| "bad checksummed length")?;
        let footer = u32::from_str_radix(get("footer")?, 16).map_err(|_| "bad footer checksum")?;
        let hex = get("blocks")?;
        if !(4096..=1 << 30).contains(&block) || hex.len() != 8 * Self::block_count(data_len, block)
        {
            return Err("checksum record does not match its block count".into());
        }
        let blocks = (0..hex.len() / 8)
            .map(|i| {
                u32::from_str_radix(&hex[8 * i..8 * i + 8], 16)
                    .map_err(|_| "bad block checksum".to_string())
            })
            .collect::<Result<_, _>>()?;
        Ok(BlockChecksums {
            block,
            data_len,
            footer,
            blocks,
        })
    }

    /// The record in a footer's raw metadata bytes, found before the footer is parsed (so a
    /// damaged footer is never decoded): None when there is none (another writer's file).
    pub fn find_in(metadata: &[u8]) -> Option<Result<BlockChecksums, String>> {
        let start = rfind(metadata, format!("{TAG} block=").as_bytes())?;
        let rest = &metadata[start..];
        let Some(hex_at) =
            find(&rest[..rest.len().min(128)], b" blocks=").map(|i| i + " blocks=".len())
        else {
            return Some(Err("damaged checksum record".into()));
        };
        let head = String::from_utf8_lossy(&rest[..hex_at]).to_string();
        let count = head
            .split(' ')
            .map(|f| f.split_once('=').map(|(k, v)| (k, v.parse::<u64>().ok())))
            .fold((None, None), |(b, d), kv| match kv {
                Some(("block", v)) => (v, d),
                Some(("data", v)) => (b, v),
                _ => (b, d),
            });
        let (Some(block), Some(data_len)) = count else {
            return Some(Err("damaged checksum record".into()));
        };
        if block == 0 {
            return Some(Err("damaged checksum record".into()));
        }
        let end = (data_len.div_ceil(block) as usize)
            .saturating_mul(8)
            .saturating_add(hex_at);
        if end > rest.len() {
            return Some(Err("damaged checksum record (cut short)".into()));
        }
        Some(BlockChecksums::parse(&String::from_utf8_lossy(
            &rest[..end],
        )))
    }

    /// Checks the footer's metadata bytes (without the 8-byte trailer) against the record
    /// found in them: its CRC is taken with the record's own footer digits as zeros.
    pub fn verify_footer(&self, metadata: &[u8], file_len: u64) -> Result<(), String> {
        if self.data_len + metadata.len() as u64 + 8 != file_len {
            return Err(format!(
                "checksums cover {} bytes before the footer, the file has {}",
                self.data_len,
                file_len - 8 - metadata.len() as u64
            ));
        }
        let encoded = self.encode();
        let at = rfind(metadata, encoded.as_bytes())
            .ok_or("checksum record not found in the footer bytes")?;
        let digits = at + encoded.find("footer=").unwrap() + "footer=".len();
        let mut zeroed = metadata.to_vec();
        zeroed[digits..digits + 8].copy_from_slice(b"00000000");
        let actual = crc32fast::hash(&zeroed);
        if actual != self.footer {
            return Err(format!(
                "footer checksum mismatch (stored {:08x}, computed {actual:08x})",
                self.footer
            ));
        }
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len().max(1)).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| &hay[i..i + needle.len()] == needle)
}

/// The sink under a Parquet writer: passes the bytes before the footer through, hashing
/// them per block, and holds the footer back until `finish` has filled in the record.
pub struct ChecksumSink<W: Write> {
    inner: W,
    written: u64,
    hasher: crc32fast::Hasher,
    blocks: Vec<u32>,
    /// Where the footer starts, once the last row group is out.
    data_end: Option<u64>,
    held: Vec<u8>,
}

impl<W: Write> ChecksumSink<W> {
    pub fn new(inner: W) -> Self {
        ChecksumSink {
            inner,
            written: 0,
            hasher: crc32fast::Hasher::new(),
            blocks: Vec::new(),
            data_end: None,
            held: Vec::new(),
        }
    }

    /// Marks where the footer starts (every byte before it has been handed to the writer)
    /// and returns the placeholder record to put in the footer.
    pub fn footer_starts_at(&mut self, data_len: u64) -> String {
        self.data_end = Some(data_len);
        BlockChecksums::placeholder(data_len).encode()
    }

    /// Fills the held footer's record in, writes the footer, returns the inner sink. `path`
    /// names the file being written in errors.
    pub fn finish(mut self, placeholder: &str, path: &Path) -> Result<W> {
        let broken = |what: &str| Error::Internal {
            what: format!("writing {}: checksum sink: {what}", path.display()),
        };
        let data_len = self
            .data_end
            .ok_or_else(|| broken("finished before the footer"))?;
        if self.written != data_len + self.held.len() as u64 {
            return Err(broken("the writer's byte count and the bytes seen differ"));
        }
        if data_len % BLOCK != 0 {
            self.blocks.push(self.hasher.clone().finalize());
        }
        // the held bytes must be exactly the metadata and its trailer (nothing written between)
        let n = self.held.len();
        let meta_len = if n >= 8 {
            u32::from_le_bytes(self.held[n - 8..n - 4].try_into().unwrap()) as usize
        } else {
            usize::MAX
        };
        if n < 8 || meta_len + 8 != n || &self.held[n - 4..] != b"PAR1" {
            return Err(broken("unexpected bytes between the data and the footer"));
        }
        let at = rfind(&self.held[..meta_len], placeholder.as_bytes())
            .ok_or_else(|| broken("the checksum record is not in the footer"))?;
        let mut record = BlockChecksums {
            block: BLOCK,
            data_len,
            footer: 0,
            blocks: std::mem::take(&mut self.blocks),
        };
        let filled = record.encode();
        debug_assert_eq!(filled.len(), placeholder.len());
        self.held[at..at + filled.len()].copy_from_slice(filled.as_bytes());
        record.footer = crc32fast::hash(&self.held[..meta_len]);
        let digits = at + filled.find("footer=").unwrap() + "footer=".len();
        self.held[digits..digits + 8].copy_from_slice(format!("{:08x}", record.footer).as_bytes());
        self.inner
            .write_all(&self.held)
            .at("writing the footer of", path)?;
        Ok(self.inner)
    }

    fn hash_data(&mut self, mut buf: &[u8]) {
        while !buf.is_empty() {
            let room = (BLOCK - self.written % BLOCK) as usize;
            let n = room.min(buf.len());
            self.hasher.update(&buf[..n]);
            self.written += n as u64;
            buf = &buf[n..];
            if self.written.is_multiple_of(BLOCK) {
                self.blocks
                    .push(std::mem::take(&mut self.hasher).finalize());
            }
        }
    }
}

impl<W: Write> Write for ChecksumSink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let data = match self.data_end {
            Some(end) => (end.saturating_sub(self.written) as usize).min(buf.len()),
            None => buf.len(),
        };
        if data > 0 {
            self.inner.write_all(&buf[..data])?;
            self.hash_data(&buf[..data]);
        }
        self.held.extend_from_slice(&buf[data..]);
        self.written += (buf.len() - data) as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// An open Parquet file whose reads are checked against its block checksums (when it has
/// them): no byte of a block reaches the decoder before the block's CRC matches.
pub struct CheckedFile {
    file: Arc<File>,
    path: Arc<PathBuf>,
    len: u64,
    sums: Option<Arc<BlockChecksums>>,
    damage: DamageSlot,
}

/// Where a `CheckedFile` leaves the damage it found: the decoder above it turns errors into
/// text, so its reader takes the typed error from here (`ParquetFile::damaged`).
pub type DamageSlot = Arc<std::sync::Mutex<Option<Error>>>;

impl CheckedFile {
    pub fn new(
        file: &File,
        path: &Path,
        len: u64,
        sums: Option<Arc<BlockChecksums>>,
        damage: DamageSlot,
    ) -> Result<CheckedFile> {
        let file = file.try_clone().at("duplicating the descriptor of", path)?;
        Ok(CheckedFile {
            file: Arc::new(file),
            path: Arc::new(path.to_path_buf()),
            len,
            sums,
            damage,
        })
    }

    /// `read_range`, leaving its error in the damage slot too.
    fn read_checked(&self, start: u64, end: u64) -> Result<Bytes> {
        self.read_range(start, end).inspect_err(|e| {
            *self.damage.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
        })
    }

    fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        read_at(&self.file, offset, len as usize).at("reading", &self.path)
    }

    /// Bytes `[start, end)`, each checksummed block among them verified.
    fn read_range(&self, start: u64, end: u64) -> Result<Bytes> {
        if end > self.len {
            return Err(Error::corrupt(
                &self.path,
                format!(
                    "a read of bytes {start}..{end} past the end of the file ({} bytes)",
                    self.len
                ),
            ));
        }
        let Some(sums) = &self.sums else {
            return self.read(start, end - start).map(Bytes::from);
        };
        let checked_end = end.min(sums.data_len);
        if start < checked_end && end == checked_end {
            // all of it checked (a column chunk): the blocks read are handed on as they are,
            // a view of the range, without copying megabytes a second time
            let (from, bytes) = self.read_verified_blocks(sums, start, checked_end)?;
            return Ok(Bytes::from(bytes).slice((start - from) as usize..(end - from) as usize));
        }
        let mut out = Vec::with_capacity((end - start) as usize);
        if start < checked_end {
            let (from, bytes) = self.read_verified_blocks(sums, start, checked_end)?;
            out.extend_from_slice(&bytes[(start - from) as usize..(checked_end - from) as usize]);
        }
        if end > checked_end {
            // the footer's bytes: verified as a whole when the footer was parsed
            let from = start.max(checked_end);
            out.extend_from_slice(&self.read(from, end - from)?);
        }
        Ok(Bytes::from(out))
    }

    /// The whole blocks covering `[start, end)` (`end` within the checked data), each
    /// verified, and the offset of the first.
    fn read_verified_blocks(
        &self,
        sums: &BlockChecksums,
        start: u64,
        end: u64,
    ) -> Result<(u64, Vec<u8>)> {
        let first = start / sums.block;
        let from = first * sums.block;
        let to = (((end - 1) / sums.block + 1) * sums.block).min(sums.data_len);
        let bytes = self.read(from, to - from)?;
        for (i, chunk) in bytes.chunks(sums.block as usize).enumerate() {
            let b = first as usize + i;
            if crc32fast::hash(chunk) != sums.blocks[b] {
                let at = b as u64 * sums.block;
                return Err(Error::corrupt(
                    &self.path,
                    format!(
                        "checksum mismatch in bytes {at}..{}",
                        at + chunk.len() as u64
                    ),
                ));
            }
        }
        Ok((from, bytes))
    }
}

pub(crate) fn read_at(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(&mut buf, offset)?;
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < len {
            let n = file.seek_read(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
    }
    Ok(buf)
}

impl Length for CheckedFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for CheckedFile {
    type T = CheckedRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<CheckedRead> {
        Ok(CheckedRead {
            source: self.clone_handle(),
            pos: start,
            buf: Bytes::new(),
            buf_start: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        // through the decoder and back out as this file's report (`Error::reading`)
        self.read_checked(start, start + length as u64)
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}

impl CheckedFile {
    fn clone_handle(&self) -> CheckedFile {
        CheckedFile {
            file: Arc::clone(&self.file),
            path: Arc::clone(&self.path),
            len: self.len,
            sums: self.sums.clone(),
            damage: Arc::clone(&self.damage),
        }
    }
}

/// A sequential reader over a `CheckedFile`, one verified block at a time.
pub struct CheckedRead {
    source: CheckedFile,
    pos: u64,
    buf: Bytes,
    buf_start: u64,
}

impl Read for CheckedRead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buffered_end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos >= buffered_end {
            if self.pos >= self.source.len || out.is_empty() {
                return Ok(0);
            }
            // the whole block holding `pos` (verified), or up to 64 KiB of the footer
            let block = self.source.sums.as_ref().map_or(BLOCK, |s| s.block);
            let (from, to) = match &self.source.sums {
                Some(s) if self.pos < s.data_len => {
                    let from = self.pos / block * block;
                    (from, (from + block).min(s.data_len))
                }
                _ => (self.pos, (self.pos + block).min(self.source.len)),
            };
            // an io error only to pass through `Read`; `Error::reading` unwraps it again
            self.buf = self
                .source
                .read_checked(from, to)
                .map_err(io::Error::other)?;
            self.buf_start = from;
        }
        let at = (self.pos - self.buf_start) as usize;
        let n = (self.buf.len() - at).min(out.len());
        out[..n].copy_from_slice(&self.buf[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_its_block_count_must_match() {
        let r = BlockChecksums {
            block: BLOCK,
            data_len: 3 * BLOCK + 5,
            footer: 0xdeadbeef,
            blocks: vec![1, 2, 0xffffffff, 7],
        };
        assert_eq!(BlockChecksums::parse(&r.encode()).unwrap(), r);
        let short = BlockChecksums {
            blocks: vec![1, 2, 3],
            ..r.clone()
        };
        assert!(BlockChecksums::parse(&short.encode()).is_err());
        assert!(BlockChecksums::parse("crc32-v2 block=65536").is_err());
        assert_eq!(BlockChecksums::placeholder(0).blocks.len(), 0);
        assert_eq!(BlockChecksums::placeholder(BLOCK).blocks.len(), 1);
        assert_eq!(BlockChecksums::placeholder(BLOCK + 1).blocks.len(), 2);
    }

    #[test]
    fn a_record_is_found_in_raw_footer_bytes() {
        let r = BlockChecksums {
            block: BLOCK,
            data_len: BLOCK + 1,
            footer: 0x0102_0304,
            blocks: vec![5, 6],
        };
        let mut raw = b"\x15\x02thrift bytes\x18".to_vec();
        raw.extend_from_slice(r.encode().as_bytes());
        raw.extend_from_slice(b"\x00more");
        assert_eq!(BlockChecksums::find_in(&raw), Some(Ok(r.clone())));
        assert_eq!(BlockChecksums::find_in(b"no record here"), None);
        let cut = &raw[..raw.len() - 10];
        assert!(matches!(BlockChecksums::find_in(cut), Some(Err(_))));
    }
}

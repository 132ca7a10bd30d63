//! Reading the little-endian wire batches the JS encoders write (samples/wire.rs,
//! spans/wire.rs): every read is bounds-checked, so a torn or corrupt buffer is an error,
//! never a panic.

pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub at: usize,
    /// What the buffer holds, for messages ("sample batch").
    what: &'static str,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Self {
        Cursor { buf, at: 0, what }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| format!("truncated {}", self.what))?;
        let s = &self.buf[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }

    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    pub fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    /// `len` bytes of UTF-8.
    pub fn str(&mut self, len: usize) -> Result<&'a str, String> {
        let what = self.what;
        std::str::from_utf8(self.take(len)?).map_err(|_| format!("invalid UTF-8 in {what}"))
    }

    /// The whole buffer was read.
    pub fn finish(&self) -> Result<(), String> {
        if self.at == self.buf.len() {
            Ok(())
        } else {
            Err(format!("trailing bytes after {}", self.what))
        }
    }
}

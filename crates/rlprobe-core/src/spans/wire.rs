//! The wire form of a batch of spans, as the JS recorder encodes them (ts/wire/span-encoder.ts),
//! and its decoding on the writer thread. Little-endian throughout:
//!
//! ```text
//! batch := u32 MAGIC, u32 count, span*count
//! span  := str span_id, ostr parent_id, str root_id, str kind, str name, ostr key,
//!          f64 step (NaN: none), f64 start_time, f64 end_time (NaN: still open),
//!          u8 status, ostr error, ostr sample_id, ostr group_id, ostr labels, ostr attributes
//! str   := u32 len, utf8          ostr := str, or u32 0xFFFF_FFFF for null
//! ```
//!
//! Times are Unix seconds. `labels` and `attributes` are JSON objects (text), written by
//! `JSON.stringify` on the JS side; the writer stores them as given.

use crate::wire_cursor::Cursor;

pub const MAGIC: u32 = 0x314e_5053; // "SPN1"
const NULL_LEN: u32 = u32::MAX;

/// How a span ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanStatus {
    Ok,
    Error,
    /// Not ended when the recording was flushed (a crash, a flush mid-span, close).
    Open,
}

impl SpanStatus {
    pub fn from_code(c: u8) -> Option<SpanStatus> {
        match c {
            0 => Some(SpanStatus::Ok),
            1 => Some(SpanStatus::Error),
            2 => Some(SpanStatus::Open),
            _ => None,
        }
    }

    pub fn code(self) -> u8 {
        match self {
            SpanStatus::Ok => 0,
            SpanStatus::Error => 1,
            SpanStatus::Open => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SpanStatus::Ok => "ok",
            SpanStatus::Error => "error",
            SpanStatus::Open => "open",
        }
    }
}

/// One span as written (docs/format.md#spans).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRow {
    pub span_id: String,
    pub parent_id: Option<String>,
    pub root_id: String,
    pub kind: String,
    pub name: String,
    pub key: Option<String>,
    pub step: Option<i64>,
    pub start_time: f64,
    pub end_time: Option<f64>,
    pub status: SpanStatus,
    pub error: Option<String>,
    pub sample_id: Option<String>,
    pub group_id: Option<String>,
    pub labels: Option<String>,
    pub attributes: Option<String>,
    pub rank: i64,
}

impl SpanRow {
    /// A root span of `kind` with nothing else set: the start of a struct literal.
    pub fn new(
        span_id: &str,
        kind: &str,
        name: &str,
        start_time: f64,
        end_time: Option<f64>,
    ) -> SpanRow {
        SpanRow {
            span_id: span_id.into(),
            parent_id: None,
            root_id: span_id.into(),
            kind: kind.into(),
            name: name.into(),
            key: None,
            step: None,
            start_time,
            end_time,
            status: if end_time.is_some() {
                SpanStatus::Ok
            } else {
                SpanStatus::Open
            },
            error: None,
            sample_id: None,
            group_id: None,
            labels: None,
            attributes: None,
            rank: 0,
        }
    }

    /// Rough in-memory size, for the writer's byte bounds.
    pub fn approx_bytes(&self) -> usize {
        let s = |o: &Option<String>| o.as_ref().map_or(0, String::len);
        96 + self.span_id.len()
            + self.root_id.len()
            + self.kind.len()
            + self.name.len()
            + s(&self.parent_id)
            + s(&self.key)
            + s(&self.error)
            + s(&self.sample_id)
            + s(&self.group_id)
            + s(&self.labels)
            + s(&self.attributes)
    }
}

/// A span refused by the decoder: becomes a `bad_record` event.
#[derive(Debug, Clone, PartialEq)]
pub struct BadSpan {
    pub span_id: String,
    pub field: &'static str,
    pub reason: String,
}

/// A nullable string: u32 length (`NULL_LEN` for null), then UTF-8.
fn ostr<'a>(c: &mut Cursor<'a>) -> Result<Option<&'a str>, String> {
    let n = c.u32()?;
    if n == NULL_LEN {
        return Ok(None);
    }
    c.str(n as usize).map(Some)
}

fn str<'a>(c: &mut Cursor<'a>) -> Result<&'a str, String> {
    Ok(ostr(c)?.unwrap_or_default())
}

fn is_step(x: f64) -> bool {
    x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_992.0
}

/// One decoded span, borrowing its text from the batch: the writer appends it to its
/// column builders without an allocation per field.
#[derive(Debug, Clone, Copy)]
pub struct SpanView<'a> {
    pub span_id: &'a str,
    pub parent_id: Option<&'a str>,
    /// The span's own id when it is a root.
    pub root_id: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub key: Option<&'a str>,
    pub step: Option<i64>,
    pub start_time: f64,
    pub end_time: Option<f64>,
    pub status: SpanStatus,
    pub error: Option<&'a str>,
    pub sample_id: Option<&'a str>,
    pub group_id: Option<&'a str>,
    pub labels: Option<&'a str>,
    pub attributes: Option<&'a str>,
}

impl SpanView<'_> {
    /// Rough in-memory size once appended, for the writer's byte bounds.
    pub fn approx_bytes(&self) -> usize {
        let s = |o: Option<&str>| o.map_or(0, str::len);
        64 + self.span_id.len()
            + self.root_id.len()
            + self.kind.len()
            + self.name.len()
            + s(self.parent_id)
            + s(self.key)
            + s(self.error)
            + s(self.sample_id)
            + s(self.group_id)
            + s(self.labels)
            + s(self.attributes)
    }

    pub fn to_row(&self, rank: i64) -> SpanRow {
        let own = |o: Option<&str>| o.map(str::to_string);
        SpanRow {
            span_id: self.span_id.to_string(),
            parent_id: own(self.parent_id),
            root_id: self.root_id.to_string(),
            kind: self.kind.to_string(),
            name: self.name.to_string(),
            key: own(self.key),
            step: self.step,
            start_time: self.start_time,
            end_time: self.end_time,
            status: self.status,
            error: own(self.error),
            sample_id: own(self.sample_id),
            group_id: own(self.group_id),
            labels: own(self.labels),
            attributes: own(self.attributes),
            rank,
        }
    }
}

impl SpanRow {
    pub fn view(&self) -> SpanView<'_> {
        SpanView {
            span_id: &self.span_id,
            parent_id: self.parent_id.as_deref(),
            root_id: &self.root_id,
            kind: &self.kind,
            name: &self.name,
            key: self.key.as_deref(),
            step: self.step,
            start_time: self.start_time,
            end_time: self.end_time,
            status: self.status,
            error: self.error.as_deref(),
            sample_id: self.sample_id.as_deref(),
            group_id: self.group_id.as_deref(),
            labels: self.labels.as_deref(),
            attributes: self.attributes.as_deref(),
        }
    }
}

/// Decodes a batch, handing each valid span to `f`; returns the refused ones. Err only
/// when the buffer itself is malformed (an encoder bug), never for a bad value; `f` may
/// then have seen some of its spans, so a caller that must take all or none collects the
/// views first.
pub fn decode_views<'a>(
    buf: &'a [u8],
    mut f: impl FnMut(SpanView<'a>),
) -> Result<Vec<BadSpan>, String> {
    let mut c = Cursor::new(buf, "span batch");
    if c.u32()? != MAGIC {
        return Err("not a span batch (bad magic)".into());
    }
    let count = c.u32()? as usize;
    let mut bad = Vec::new();
    for _ in 0..count {
        let span_id = str(&mut c)?;
        let parent_id = ostr(&mut c)?;
        let root_id = str(&mut c)?;
        let kind = str(&mut c)?;
        let name = str(&mut c)?;
        let key = ostr(&mut c)?;
        let step = c.f64()?;
        let start_time = c.f64()?;
        let end_time = c.f64()?;
        let status = c.u8()?;
        let error = ostr(&mut c)?;
        let sample_id = ostr(&mut c)?;
        let group_id = ostr(&mut c)?;
        let labels = ostr(&mut c)?;
        let attributes = ostr(&mut c)?;
        let refuse = |field: &'static str, reason: String| BadSpan {
            span_id: span_id.to_string(),
            field,
            reason,
        };
        let checked = if span_id.is_empty() {
            Err(refuse("span_id", "empty".into()))
        } else if kind.is_empty() {
            Err(refuse("kind", "empty".into()))
        } else if !(step.is_nan() || is_step(step)) {
            Err(refuse(
                "step",
                format!("expected a non-negative integer, got {step}"),
            ))
        } else if !start_time.is_finite() {
            Err(refuse(
                "start_time",
                format!("expected a finite time, got {start_time}"),
            ))
        } else if !(end_time.is_nan() || end_time.is_finite()) {
            Err(refuse(
                "end_time",
                format!("expected a finite time, got {end_time}"),
            ))
        } else {
            SpanStatus::from_code(status)
                .ok_or_else(|| refuse("status", format!("unknown status code {status}")))
        };
        match checked {
            Ok(status) => f(SpanView {
                root_id: if root_id.is_empty() { span_id } else { root_id },
                span_id,
                parent_id: parent_id.filter(|p| !p.is_empty()),
                kind,
                name,
                key,
                step: (!step.is_nan()).then_some(step as i64),
                start_time,
                end_time: (!end_time.is_nan()).then_some(end_time),
                status,
                error,
                sample_id,
                group_id,
                labels,
                attributes,
            }),
            Err(b) => bad.push(b),
        }
    }
    c.finish()?;
    Ok(bad)
}

/// Decodes a batch into owned rows: the valid spans and the refused ones.
pub fn decode_spans(buf: &[u8], rank: i64) -> Result<(Vec<SpanRow>, Vec<BadSpan>), String> {
    let mut rows = Vec::new();
    let bad = decode_views(buf, |v| rows.push(v.to_row(rank)))?;
    Ok((rows, bad))
}

/// Encodes spans in the wire form (the JS encoder's twin; used by tests and benches).
pub fn encode_spans(rows: &[SpanRow]) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + rows.iter().map(SpanRow::approx_bytes).sum::<usize>());
    b.extend_from_slice(&MAGIC.to_le_bytes());
    b.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    let ostr = |b: &mut Vec<u8>, s: Option<&str>| match s {
        None => b.extend_from_slice(&NULL_LEN.to_le_bytes()),
        Some(s) => {
            b.extend_from_slice(&(s.len() as u32).to_le_bytes());
            b.extend_from_slice(s.as_bytes());
        }
    };
    for r in rows {
        ostr(&mut b, Some(&r.span_id));
        ostr(&mut b, r.parent_id.as_deref());
        ostr(&mut b, Some(&r.root_id));
        ostr(&mut b, Some(&r.kind));
        ostr(&mut b, Some(&r.name));
        ostr(&mut b, r.key.as_deref());
        b.extend_from_slice(&r.step.map_or(f64::NAN, |s| s as f64).to_le_bytes());
        b.extend_from_slice(&r.start_time.to_le_bytes());
        b.extend_from_slice(&r.end_time.unwrap_or(f64::NAN).to_le_bytes());
        b.push(r.status.code());
        ostr(&mut b, r.error.as_deref());
        ostr(&mut b, r.sample_id.as_deref());
        ostr(&mut b, r.group_id.as_deref());
        ostr(&mut b, r.labels.as_deref());
        ostr(&mut b, r.attributes.as_deref());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, parent: Option<&str>, kind: &str, step: i64) -> SpanRow {
        let start = 1_700_000_000.0 + step as f64;
        SpanRow {
            parent_id: parent.map(Into::into),
            root_id: parent.unwrap_or(id).into(),
            step: Some(step),
            ..SpanRow::new(id, kind, &format!("{kind} {id}"), start, Some(start + 0.5))
        }
    }

    #[test]
    fn round_trips_and_fills_the_root() {
        let mut a = span("a", None, "rollout", 3);
        a.root_id = String::new(); // a root written without its own id as root
        a.labels = Some(r#"{"sample":"s1"}"#.into());
        let mut b = span("b", Some("a"), "tool_call", 3);
        b.end_time = None;
        b.status = SpanStatus::Open;
        b.step = None;
        let (rows, bad) = decode_spans(&encode_spans(&[a.clone(), b.clone()]), 2).unwrap();
        assert!(bad.is_empty());
        assert_eq!(rows[0].root_id, "a");
        assert_eq!(rows[0].rank, 2);
        assert_eq!(rows[0].labels.as_deref(), Some(r#"{"sample":"s1"}"#));
        assert_eq!(rows[1], SpanRow { rank: 2, ..b });
    }

    #[test]
    fn refuses_bad_values_one_by_one_and_torn_buffers_whole() {
        let mut no_start = span("x", None, "turn", 1);
        no_start.start_time = f64::NAN;
        let rows = [
            span("", None, "turn", 1),
            no_start,
            span("k", None, "", 1),
            span("good", None, "turn", 1),
        ];
        let mut buf = encode_spans(&rows);
        let (ok, bad) = decode_spans(&buf, 0).unwrap();
        assert_eq!(
            ok.iter().map(|r| r.span_id.as_str()).collect::<Vec<_>>(),
            ["good"]
        );
        assert_eq!(
            bad.iter().map(|b| b.field).collect::<Vec<_>>(),
            ["span_id", "start_time", "kind"]
        );
        for cut in 0..buf.len() {
            assert!(decode_spans(&buf[..cut], 0).is_err());
        }
        buf[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            decode_spans(&buf, 0).is_err(),
            "a corrupt count is an error, not an abort"
        );
    }
}

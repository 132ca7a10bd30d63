//! The wire form of one `logSamples` call, as the JS encoder writes it, and its decoding
//! and validation into `SampleRow`s on the writer thread (off the training thread).
//!
//! The encoder writes each value by its JS type and leaves every judgement to this side,
//! so one place decides what a valid sample is. Little-endian throughout:
//!
//! ```text
//! batch  := u32 MAGIC, f64 call_step (NaN: none), u32 count, sample*count
//! sample := u32 index, u8 reason (0: none), u16 nfields, field*nfields
//! field  := u8 tag, u16 key_len, key utf8, value
//! value  := NULL | NUMBER f64 | STRING u32 len, utf8 | BOOL u8 | NUMBERS u32 n, f64*n
//!         | OBJECT u16 nfields, field*nfields | OTHER u32 len, utf8 (type and preview)
//! ```

use super::select::CaptureReason;
use crate::wire_cursor::Cursor;

pub const MAGIC: u32 = 0x3150_4d53; // "SMP1"

pub const TAG_NULL: u8 = 0;
pub const TAG_NUMBER: u8 = 1;
pub const TAG_STRING: u8 = 2;
pub const TAG_BOOL: u8 = 3;
pub const TAG_NUMBERS: u8 = 4;
pub const TAG_OBJECT: u8 = 5;
pub const TAG_OTHER: u8 = 6;

/// One validated sample (docs/format.md#samples).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleRow {
    pub step: i64,
    pub sample_id: String,
    pub rank: i64,
    pub group_id: Option<String>,
    pub prompt_id: Option<String>,
    pub prompt_text: Option<String>,
    pub completion_text: Option<String>,
    pub completion_token_ids: Option<Vec<i64>>,
    pub reward_total: Option<f64>,
    pub reward_components: Vec<(String, f64)>,
    pub advantage: Option<f64>,
    pub logprob_mean: Option<f64>,
    pub kl_contribution: Option<f64>,
    pub completion_len: Option<i64>,
    pub truncated: Option<bool>,
    pub capture_reason: Option<String>,
    /// The span the sample was logged under (the recorder's ambient span), if any.
    pub span_id: Option<String>,
    /// The ambient unit's labels, a JSON object of strings
    /// (docs/format.md#units-what-samples-events-and-spans-carry).
    pub labels: Option<String>,
    /// Unknown numeric fields and the `extra` dict: `extra.<name>` columns.
    pub extra: Vec<(String, f64)>,
}

impl SampleRow {
    /// Rough in-memory size, for the writer's byte bounds.
    pub fn approx_bytes(&self) -> usize {
        let s = |o: &Option<String>| o.as_ref().map_or(0, String::len);
        128 + self.sample_id.len()
            + s(&self.group_id)
            + s(&self.prompt_id)
            + s(&self.prompt_text)
            + s(&self.completion_text)
            + s(&self.span_id)
            + s(&self.labels)
            + self
                .completion_token_ids
                .as_ref()
                .map_or(0, |v| v.len() * 8)
            + (self.reward_components.len() + self.extra.len()) * 32
    }
}

/// A sample refused by validation: becomes a `bad_record` event.
#[derive(Debug, Clone, PartialEq)]
pub struct BadSample {
    pub step: Option<i64>,
    pub index: u32,
    pub field: String,
    pub reason: String,
    pub value_type: String,
    pub value_preview: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Value<'a> {
    Null,
    Number(f64),
    Str(&'a str),
    Bool(bool),
    Numbers(Vec<f64>),
    Object(Vec<(&'a str, Value<'a>)>),
    Other(&'a str),
}

impl Value<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Number(_) => "number",
            Value::Str(_) => "string",
            Value::Bool(_) => "boolean",
            Value::Numbers(_) => "array",
            Value::Object(_) => "object",
            Value::Other(_) => "other",
        }
    }

    fn preview(&self) -> String {
        const MAX: usize = 80;
        let s = match self {
            Value::Null => "null".to_string(),
            Value::Number(x) => format_number(*x),
            Value::Str(s) => format!("{s:?}"),
            Value::Bool(b) => b.to_string(),
            Value::Numbers(v) => format!("[{} numbers]", v.len()),
            Value::Object(f) => format!("{{{} keys}}", f.len()),
            Value::Other(d) => d.to_string(),
        };
        if s.len() <= MAX {
            return s;
        }
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

fn format_number(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        x.to_string()
    }
}

/// One field of a sample (`depth` 1 inside an object, where objects may not nest).
fn field<'a>(c: &mut Cursor<'a>, depth: u8) -> Result<(&'a str, Value<'a>), String> {
    let tag = c.u8()?;
    let key_len = c.u16()? as usize;
    let key = c.str(key_len)?;
    let value = match tag {
        TAG_NULL => Value::Null,
        TAG_NUMBER => Value::Number(c.f64()?),
        TAG_STRING => {
            let n = c.u32()? as usize;
            Value::Str(c.str(n)?)
        }
        TAG_BOOL => Value::Bool(c.u8()? != 0),
        TAG_NUMBERS => {
            let n = c.u32()? as usize;
            let bytes = c.take(n.checked_mul(8).ok_or("truncated sample batch")?)?;
            Value::Numbers(
                bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            )
        }
        TAG_OBJECT if depth == 0 => {
            let n = c.u16()?;
            let mut fields = Vec::with_capacity((n as usize).min(c.buf.len() / 3));
            for _ in 0..n {
                fields.push(field(c, 1)?);
            }
            Value::Object(fields)
        }
        TAG_OTHER => {
            let n = c.u32()? as usize;
            Value::Other(c.str(n)?)
        }
        t => return Err(format!("unknown value tag {t} in sample batch")),
    };
    Ok((key, value))
}

/// Decodes one call's batch: the valid samples, and the refused ones. Err only when the
/// buffer itself is malformed (an encoder bug), never for a bad value.
pub fn decode_batch(buf: &[u8], rank: i64) -> Result<(Vec<SampleRow>, Vec<BadSample>), String> {
    let mut c = Cursor::new(buf, "sample batch");
    if c.u32()? != MAGIC {
        return Err("not a sample batch (bad magic)".into());
    }
    let call_step = c.f64()?;
    let count = c.u32()?;
    // the count comes from the buffer: bound the allocation by what the buffer can hold
    // (a sample takes at least 7 bytes), so a corrupt count cannot abort the process
    let mut rows = Vec::with_capacity((count as usize).min(buf.len() / 7));
    let mut bad = Vec::new();
    for _ in 0..count {
        let index = c.u32()?;
        let reason = CaptureReason::from_code(c.u8()?);
        let n = c.u16()?;
        let mut fields = Vec::with_capacity((n as usize).min(buf.len() / 3));
        for _ in 0..n {
            fields.push(field(&mut c, 0)?);
        }
        match build_row(&fields, call_step, index, reason, rank) {
            Ok(row) => rows.push(row),
            Err(b) => bad.push(b),
        }
    }
    c.finish()?;
    Ok((rows, bad))
}

fn is_int(x: f64) -> bool {
    x.is_finite() && x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0
}

fn build_row(
    fields: &[(&str, Value)],
    call_step: f64,
    index: u32,
    reason: Option<CaptureReason>,
    rank: i64,
) -> Result<SampleRow, BadSample> {
    let mut row = SampleRow {
        rank,
        ..SampleRow::default()
    };
    let mut step: Option<i64> = None;
    let mut sample_id: Option<String> = None;
    let mut user_reason: Option<String> = None;
    let step_of = |fields: &[(&str, Value)]| {
        fields.iter().rev().find_map(|(k, v)| match (k, v) {
            (&"step", Value::Number(x)) if is_int(*x) && *x >= 0.0 => Some(*x as i64),
            _ => None,
        })
    };
    let bad = |field: &str, reason: &str, v: &Value| BadSample {
        step: step_of(fields)
            .or_else(|| (is_int(call_step) && call_step >= 0.0).then_some(call_step as i64)),
        index,
        field: field.to_string(),
        reason: reason.to_string(),
        value_type: v.type_name().to_string(),
        value_preview: v.preview(),
    };
    let id_string = |field: &str, v: &Value| -> Result<Option<String>, BadSample> {
        match v {
            Value::Null => Ok(None),
            Value::Str(s) => Ok(Some(s.to_string())),
            Value::Number(x) if is_int(*x) => Ok(Some(format!("{}", *x as i64))),
            _ => Err(bad(field, "expected a string (or an integer id)", v)),
        }
    };
    let text = |field: &str, v: &Value| -> Result<Option<String>, BadSample> {
        match v {
            Value::Null => Ok(None),
            Value::Str(s) => Ok(Some(s.to_string())),
            _ => Err(bad(field, "expected a string", v)),
        }
    };
    let number = |field: &str, v: &Value| -> Result<Option<f64>, BadSample> {
        match v {
            Value::Null => Ok(None),
            Value::Number(x) => Ok(Some(*x)),
            _ => Err(bad(field, "expected a number", v)),
        }
    };
    let dict = |field: &str, v: &Value| -> Result<Vec<(String, f64)>, BadSample> {
        match v {
            Value::Null => Ok(Vec::new()),
            Value::Object(entries) => {
                let mut out: Vec<(String, f64)> = Vec::with_capacity(entries.len());
                for (k, x) in entries {
                    match x {
                        Value::Null => {}
                        Value::Number(x) => {
                            out.retain(|(n, _)| n != k);
                            out.push((k.to_string(), *x));
                        }
                        other => {
                            return Err(bad(&format!("{field}.{k}"), "expected a number", other))
                        }
                    }
                }
                Ok(out)
            }
            _ => Err(bad(field, "expected an object of numbers", v)),
        }
    };

    for (key, v) in fields {
        match *key {
            "step" => match v {
                Value::Null => {}
                Value::Number(x) if is_int(*x) && *x >= 0.0 => step = Some(*x as i64),
                _ => return Err(bad("step", "expected a non-negative integer", v)),
            },
            "sample_id" => sample_id = id_string("sample_id", v)?,
            "rank" => match v {
                Value::Null => {}
                Value::Number(x) if is_int(*x) && *x >= 0.0 => row.rank = *x as i64,
                _ => return Err(bad("rank", "expected a non-negative integer", v)),
            },
            "group_id" => row.group_id = id_string("group_id", v)?,
            "prompt_id" => row.prompt_id = id_string("prompt_id", v)?,
            "prompt_text" => row.prompt_text = text("prompt_text", v)?,
            "completion_text" => row.completion_text = text("completion_text", v)?,
            "completion_token_ids" => match v {
                Value::Null => row.completion_token_ids = None,
                Value::Numbers(xs) => {
                    if let Some(x) = xs.iter().find(|x| !is_int(**x)) {
                        return Err(bad(
                            "completion_token_ids",
                            &format!("expected integer token ids, found {}", format_number(*x)),
                            v,
                        ));
                    }
                    row.completion_token_ids = Some(xs.iter().map(|&x| x as i64).collect());
                }
                _ => return Err(bad("completion_token_ids", "expected an array of integers", v)),
            },
            "reward_total" => row.reward_total = number("reward_total", v)?,
            "advantage" => row.advantage = number("advantage", v)?,
            "logprob_mean" => row.logprob_mean = number("logprob_mean", v)?,
            "kl_contribution" => row.kl_contribution = number("kl_contribution", v)?,
            "reward_components" => row.reward_components = dict("reward_components", v)?,
            "extra" => {
                for (k, x) in dict("extra", v)? {
                    row.extra.retain(|(n, _)| *n != k);
                    row.extra.push((k, x));
                }
            }
            "completion_len" => match v {
                Value::Null => row.completion_len = None,
                Value::Number(x) if is_int(*x) && *x >= 0.0 => row.completion_len = Some(*x as i64),
                _ => return Err(bad("completion_len", "expected a non-negative integer", v)),
            },
            "truncated" => match v {
                Value::Null => row.truncated = None,
                Value::Bool(b) => row.truncated = Some(*b),
                Value::Number(x) if *x == 0.0 || *x == 1.0 => row.truncated = Some(*x == 1.0),
                _ => return Err(bad("truncated", "expected a boolean", v)),
            },
            "capture_reason" => user_reason = text("capture_reason", v)?,
            "span_id" => row.span_id = id_string("span_id", v)?,
            "labels" => row.labels = labels_json(v).map_err(|reason| bad("labels", reason, v))?,
            // the encoder's marker for a sample it could not read (not an object, a throwing getter)
            "record" if matches!(v, Value::Other(_)) => return Err(bad("record", "not a readable sample object", v)),
            other => match v {
                Value::Null => {}
                // an unknown numeric field is kept as extra.<name>, as log_step does
                Value::Number(x) => {
                    row.extra.retain(|(n, _)| n != other);
                    row.extra.push((other.to_string(), *x));
                }
                _ => {
                    return Err(bad(
                        other,
                        "unknown sample field (only numbers may be extra fields; see SampleRecord for the known ones)",
                        v,
                    ))
                }
            },
        }
    }
    let step = match step
        .or_else(|| (is_int(call_step) && call_step >= 0.0).then_some(call_step as i64))
    {
        Some(s) => s,
        None => {
            return Err(bad(
                "step",
                "no step: give {step} to logSamples or a step on each sample",
                &Value::Null,
            ))
        }
    };
    row.step = step;
    row.sample_id = sample_id.unwrap_or_else(|| format!("{step}_{index}"));
    // The recorder's selection says why a sample was kept; with select: false the caller's
    // own reason (if any) stands, else `all`.
    row.capture_reason = match reason {
        // no selection ran (`select: false`): the caller's own reason stands, else `all`
        None => Some(user_reason.unwrap_or_else(|| "all".into())),
        Some(r) => Some(r.as_str().to_string()),
    };
    Ok(row)
}

/// A sample's labels as the JSON object text stored in the `labels` column: the recorder
/// sends the text it built; a caller may give an object of strings, numbers or booleans.
fn labels_json(v: &Value) -> Result<Option<String>, &'static str> {
    match v {
        Value::Null => Ok(None),
        Value::Str(s) if s.starts_with('{') && s.ends_with('}') => Ok(Some(s.to_string())),
        Value::Object(entries) => {
            // every value as a string, in the caller's key order (as JSON.stringify writes it)
            let mut members = serde_json::Map::with_capacity(entries.len());
            for (k, x) in entries {
                let text = match x {
                    Value::Str(s) => s.to_string(),
                    Value::Number(n) => format_number(*n),
                    Value::Bool(b) => b.to_string(),
                    Value::Null => continue,
                    _ => return Err("expected label values that are strings, numbers or booleans"),
                };
                members.insert(k.to_string(), serde_json::Value::String(text));
            }
            Ok(Some(serde_json::Value::Object(members).to_string()))
        }
        _ => Err("expected an object of labels"),
    }
}

/// Encodes samples in the wire form (the JS encoder's twin; used by tests and benches).
#[derive(Default)]
pub struct WireWriter {
    pub buf: Vec<u8>,
    count_at: usize,
    count: u32,
}

pub enum WireValue<'a> {
    Null,
    Number(f64),
    Str(&'a str),
    Bool(bool),
    Numbers(&'a [f64]),
    Object(Vec<(&'a str, f64)>),
    Other(&'a str),
}

impl WireWriter {
    pub fn new(call_step: Option<i64>) -> Self {
        let mut w = WireWriter::default();
        w.buf.extend_from_slice(&MAGIC.to_le_bytes());
        w.buf
            .extend_from_slice(&call_step.map_or(f64::NAN, |s| s as f64).to_le_bytes());
        w.count_at = w.buf.len();
        w.buf.extend_from_slice(&0u32.to_le_bytes());
        w
    }

    pub fn sample(
        &mut self,
        index: u32,
        reason: Option<CaptureReason>,
        fields: &[(&str, WireValue)],
    ) {
        self.buf.extend_from_slice(&index.to_le_bytes());
        self.buf.push(reason.map_or(0, CaptureReason::code));
        self.buf
            .extend_from_slice(&(fields.len() as u16).to_le_bytes());
        for (k, v) in fields {
            self.field(k, v);
        }
        self.count += 1;
        self.buf[self.count_at..self.count_at + 4].copy_from_slice(&self.count.to_le_bytes());
    }

    fn key(&mut self, tag: u8, k: &str) {
        self.buf.push(tag);
        self.buf.extend_from_slice(&(k.len() as u16).to_le_bytes());
        self.buf.extend_from_slice(k.as_bytes());
    }

    fn field(&mut self, k: &str, v: &WireValue) {
        match v {
            WireValue::Null => self.key(TAG_NULL, k),
            WireValue::Number(x) => {
                self.key(TAG_NUMBER, k);
                self.buf.extend_from_slice(&x.to_le_bytes());
            }
            WireValue::Str(s) => {
                self.key(TAG_STRING, k);
                self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
                self.buf.extend_from_slice(s.as_bytes());
            }
            WireValue::Bool(b) => {
                self.key(TAG_BOOL, k);
                self.buf.push(*b as u8);
            }
            WireValue::Numbers(xs) => {
                self.key(TAG_NUMBERS, k);
                self.buf.extend_from_slice(&(xs.len() as u32).to_le_bytes());
                for x in xs.iter() {
                    self.buf.extend_from_slice(&x.to_le_bytes());
                }
            }
            WireValue::Object(entries) => {
                self.key(TAG_OBJECT, k);
                self.buf
                    .extend_from_slice(&(entries.len() as u16).to_le_bytes());
                for (ek, x) in entries {
                    self.field(ek, &WireValue::Number(*x));
                }
            }
            WireValue::Other(d) => {
                self.key(TAG_OTHER, k);
                self.buf.extend_from_slice(&(d.len() as u32).to_le_bytes());
                self.buf.extend_from_slice(d.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use WireValue as W;

    #[test]
    fn decodes_a_full_sample_with_defaults_filled_in() {
        let mut w = WireWriter::new(Some(12));
        w.sample(
            3,
            Some(CaptureReason::TopK),
            &[
                ("prompt_text", W::Str("2+2?")),
                ("completion_text", W::Str("4 ✓")),
                ("completion_token_ids", W::Numbers(&[19.0, 4.0])),
                ("reward_total", W::Number(f64::NAN)),
                (
                    "reward_components",
                    W::Object(vec![("format", 1.0), ("correct", 0.5)]),
                ),
                ("group_id", W::Number(7.0)),
                ("completion_len", W::Number(2.0)),
                ("truncated", W::Bool(false)),
                ("my_score", W::Number(0.25)),
                ("advantage", W::Null),
            ],
        );
        let (rows, bad) = decode_batch(&w.buf, 2).unwrap();
        assert!(bad.is_empty());
        let r = &rows[0];
        assert_eq!((r.step, r.rank, r.sample_id.as_str()), (12, 2, "12_3"));
        assert_eq!(r.completion_text.as_deref(), Some("4 ✓"));
        assert_eq!(r.completion_token_ids, Some(vec![19, 4]));
        assert!(r.reward_total.unwrap().is_nan());
        assert_eq!(
            r.reward_components,
            vec![("format".into(), 1.0), ("correct".into(), 0.5)]
        );
        assert_eq!(r.group_id.as_deref(), Some("7"));
        assert_eq!(r.advantage, None);
        assert_eq!(r.extra, vec![("my_score".into(), 0.25)]);
        assert_eq!(r.capture_reason.as_deref(), Some("top_k"));
    }

    #[test]
    fn malformed_samples_are_refused_one_by_one() {
        let mut w = WireWriter::new(Some(5));
        w.sample(0, None, &[("completion_len", W::Number(3.5))]);
        w.sample(1, None, &[("reward_total", W::Str("high"))]);
        w.sample(2, None, &[("prompt", W::Str("forgot the _text"))]);
        w.sample(
            3,
            None,
            &[("reward_components", W::Other("function: () => 1"))],
        );
        w.sample(
            4,
            None,
            &[("completion_token_ids", W::Numbers(&[1.0, 2.5]))],
        );
        w.sample(
            5,
            None,
            &[
                ("sample_id", W::Str("keep-me")),
                ("capture_reason", W::Str("flagged")),
            ],
        );
        w.sample(
            6,
            Some(CaptureReason::All),
            &[("capture_reason", W::Str("mine"))],
        );
        let (rows, bad) = decode_batch(&w.buf, 0).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].sample_id, "keep-me");
        assert_eq!(
            rows[0].capture_reason.as_deref(),
            Some("flagged"),
            "no selection ran: the caller's reason"
        );
        assert_eq!(
            rows[1].capture_reason.as_deref(),
            Some("all"),
            "selection kept the whole batch"
        );
        let fields: Vec<&str> = bad.iter().map(|b| b.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "completion_len",
                "reward_total",
                "prompt",
                "reward_components",
                "completion_token_ids"
            ]
        );
        assert_eq!(bad[1].value_type, "string");
        assert_eq!(bad[1].value_preview, "\"high\"");
        assert!(bad.iter().all(|b| b.step == Some(5)));
    }

    #[test]
    fn span_ids_and_labels_are_kept() {
        let mut w = WireWriter::new(Some(3));
        w.sample(
            0,
            None,
            &[
                ("span_id", W::Str("ab12")),
                ("labels", W::Str(r#"{"sample":"s1"}"#)),
            ],
        );
        w.sample(1, None, &[("labels", W::Str("not json"))]);
        let (rows, bad) = decode_batch(&w.buf, 0).unwrap();
        assert_eq!(rows[0].span_id.as_deref(), Some("ab12"));
        assert_eq!(rows[0].labels.as_deref(), Some(r#"{"sample":"s1"}"#));
        assert_eq!(bad[0].field, "labels");
    }

    #[test]
    fn a_sample_needs_a_step_from_somewhere() {
        let mut w = WireWriter::new(None);
        w.sample(0, None, &[("step", W::Number(9.0))]);
        w.sample(1, None, &[]);
        let (rows, bad) = decode_batch(&w.buf, 0).unwrap();
        assert_eq!(rows[0].step, 9);
        assert_eq!(bad[0].field, "step");
    }

    #[test]
    fn a_corrupt_count_is_an_error_not_an_abort() {
        let mut buf = MAGIC.to_le_bytes().to_vec();
        buf.extend_from_slice(&1.0f64.to_le_bytes());
        buf.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_batch(&buf, 0).is_err());
    }

    #[test]
    fn a_torn_buffer_is_an_error_not_a_panic() {
        let mut w = WireWriter::new(Some(1));
        w.sample(0, None, &[("prompt_text", W::Str("hello"))]);
        for cut in 0..w.buf.len() {
            assert!(decode_batch(&w.buf[..cut], 0).is_err());
        }
    }
}

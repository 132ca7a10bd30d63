//! The slot encoding of a step record, shared by the JS encoder and the writer thread.
//!
//! A record is a run of f64 slots:
//!
//! ```text
//! [step, timestamp, id, value, id, value, ..., id(list), len, x0 .. x(len-1), ...]
//! ```
//!
//! `timestamp` is NaN when the caller gave none (the queue fills in the wall clock).
//! Ids come from the recorder's `Registry`; the registry's kind of an id says whether one
//! value or a length-prefixed list follows. The JS side validates values before encoding;
//! `StepBatch::append` re-checks the structure so a corrupt record can never poison a batch.

use crate::error::{Error, Result};
use crate::schema::{ColumnKind, Registry};
use crate::table::Table;

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidRecord {
        reason: reason.into(),
    }
}

/// The longest list a record may carry (a kl_positional of a few thousand buckets is sane;
/// a million is a bug upstream).
pub const MAX_LIST_LEN: usize = 65_536;

/// The largest integer an f64 holds exactly.
pub const MAX_SAFE_INT: f64 = 9_007_199_254_740_991.0;

/// One field for `encode_step` (Rust-side producers: tests and benchmarks).
pub enum FieldValue<'a> {
    Num(&'a str, f64),
    List(&'a str, &'a [f64]),
}

/// Encodes a record the way the TypeScript encoder does.
pub fn encode_step(
    registry: &mut Registry,
    step: i64,
    timestamp: Option<f64>,
    fields: &[FieldValue<'_>],
    out: &mut Vec<f64>,
) -> Result<()> {
    out.clear();
    out.push(step as f64);
    out.push(timestamp.unwrap_or(f64::NAN));
    for f in fields {
        match f {
            FieldValue::Num(name, v) => {
                let (id, kind) = registry.register(name)?;
                if kind == ColumnKind::ListF64 {
                    return Err(invalid(format!("`{name}` is a list")));
                }
                out.push(id as f64);
                out.push(*v);
            }
            FieldValue::List(name, xs) => {
                let (id, kind) = registry.register(name)?;
                if kind != ColumnKind::ListF64 {
                    return Err(invalid(format!("`{name}` is not a list")));
                }
                out.push(id as f64);
                out.push(xs.len() as f64);
                out.extend_from_slice(xs);
            }
        }
    }
    Ok(())
}

/// Accumulates decoded step records as columns until the writer publishes a part.
pub struct StepBatch {
    rank: i64,
    table: Table,
    /// registry id → column index in `table`.
    column_of: Vec<Option<usize>>,
}

fn is_step_number(x: f64) -> bool {
    x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= MAX_SAFE_INT
}

impl StepBatch {
    pub fn new(rank: i64) -> StepBatch {
        let mut b = StepBatch {
            rank,
            table: Table::default(),
            column_of: Vec::new(),
        };
        b.reset();
        b
    }

    pub fn rows(&self) -> usize {
        self.table.rows
    }

    /// Empties the batch, keeping the fixed columns.
    pub fn reset(&mut self) {
        self.table = Table::default();
        for (name, kind) in crate::schema::FIXED_STEP_COLUMNS {
            self.table.column_mut(name, *kind).expect("fresh table");
        }
        self.column_of.clear();
    }

    /// Checks a record's structure without touching the batch.
    fn validate(record: &[f64], registry: &Registry) -> Result<()> {
        if record.len() < 2 {
            return Err(invalid("record shorter than its header"));
        }
        if !is_step_number(record[0]) {
            return Err(invalid(format!(
                "step {} is not a non-negative integer",
                record[0]
            )));
        }
        let mut i = 2;
        while i < record.len() {
            let id = record[i];
            let def = (id >= 0.0 && id.fract() == 0.0)
                .then(|| registry.get(id as u32))
                .flatten()
                .ok_or_else(|| invalid(format!("unknown column id {id}")))?;
            match def.kind {
                ColumnKind::ListF64 => {
                    let len = *record
                        .get(i + 1)
                        .ok_or_else(|| invalid("list without length"))?;
                    if !(len >= 0.0 && len.fract() == 0.0 && (len as usize) <= MAX_LIST_LEN) {
                        return Err(invalid(format!("bad list length {len} for `{}`", def.name)));
                    }
                    i += 2 + len as usize;
                    if i > record.len() {
                        return Err(invalid(format!("list `{}` runs past the record", def.name)));
                    }
                }
                ColumnKind::I64 => {
                    let v = *record
                        .get(i + 1)
                        .ok_or_else(|| invalid("id without value"))?;
                    if !(v.is_finite() && v.fract() == 0.0 && v.abs() <= MAX_SAFE_INT) {
                        return Err(invalid(format!(
                            "`{}` must be an integer, got {v}",
                            def.name
                        )));
                    }
                    i += 2;
                }
                ColumnKind::F64 => {
                    if i + 1 >= record.len() {
                        return Err(invalid("id without value"));
                    }
                    i += 2;
                }
            }
        }
        Ok(())
    }

    /// Appends one record as a row. On error nothing is appended.
    pub fn append(&mut self, record: &[f64], registry: &Registry) -> Result<()> {
        Self::validate(record, registry)?;
        let row = self.table.rows;
        let mut i = 2;
        while i < record.len() {
            let id = record[i] as usize;
            if id >= self.column_of.len() {
                self.column_of.resize(id + 1, None);
            }
            let col_index = match self.column_of[id] {
                Some(c) => c,
                None => {
                    let def = registry.get(id as u32).expect("validated");
                    self.table.column_mut(&def.name, def.kind)?;
                    let c = self
                        .table
                        .names
                        .iter()
                        .position(|n| *n == def.name)
                        .expect("just added");
                    self.column_of[id] = Some(c);
                    c
                }
            };
            let col = &mut self.table.columns[col_index];
            // the same column twice in one record (`extra.x` and a top-level `x`): last wins
            col.truncate(row);
            col.pad_to(row);
            if col.kind() == ColumnKind::ListF64 {
                let len = record[i + 1] as usize;
                col.push_list(&record[i + 2..i + 2 + len]);
                i += 2 + len;
            } else {
                col.push_number(record[i + 1]);
                i += 2;
            }
        }
        // fixed columns sit at 0, 1, 2 (FIXED_STEP_COLUMNS order, see `reset`)
        let [step, ts, rank] = [0, 1, 2];
        self.table.columns[step].push_number(record[0]);
        if record[1].is_nan() {
            self.table.columns[ts].push_null();
        } else {
            self.table.columns[ts].push_number(record[1]);
        }
        self.table.columns[rank].push_number(self.rank as f64);
        self.table.rows = row + 1;
        Ok(())
    }

    /// The batch as a table in canonical column order, ready to write. Leaves the batch empty.
    pub fn take(&mut self) -> Table {
        let rows = self.table.rows;
        let mut t = std::mem::take(&mut self.table);
        t.finish_rows(rows);
        t.sort_columns();
        self.reset();
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(reg: &mut Registry, step: i64, fields: &[FieldValue<'_>]) -> Vec<f64> {
        let mut out = Vec::new();
        encode_step(reg, step, Some(1.0e9 + step as f64), fields, &mut out).unwrap();
        out
    }

    #[test]
    fn rows_with_new_columns_mid_batch_are_padded() {
        let mut reg = Registry::default();
        let mut b = StepBatch::new(0);
        let r1 = rec(&mut reg, 1, &[FieldValue::Num("loss", 0.5)]);
        let r2 = rec(
            &mut reg,
            2,
            &[
                FieldValue::Num("reward_component.fmt", 1.0),
                FieldValue::List("kl_positional", &[0.1, 0.2]),
            ],
        );
        let r3 = rec(&mut reg, 3, &[FieldValue::Num("nan_count", 2.0)]);
        for r in [&r1, &r2, &r3] {
            b.append(r, &reg).unwrap();
        }
        let t = b.take();
        assert_eq!(t.rows, 3);
        assert_eq!(
            t.names,
            vec![
                "step",
                "timestamp",
                "rank",
                "kl_positional",
                "loss",
                "nan_count",
                "reward_component.fmt"
            ]
        );
        assert_eq!(t.column("loss").unwrap().scalar(1), None);
        assert_eq!(
            t.column("reward_component.fmt").unwrap().scalar(1),
            Some(1.0)
        );
        assert_eq!(
            t.column("kl_positional").unwrap().list(1),
            Some(&[0.1, 0.2][..])
        );
        assert_eq!(t.column("kl_positional").unwrap().list(2), None);
        assert_eq!(t.column("nan_count").unwrap().kind(), ColumnKind::I64);
        assert_eq!(t.column("step").unwrap().scalar(2), Some(3.0));
        assert_eq!(t.column("timestamp").unwrap().scalar(0), Some(1.0e9 + 1.0));
        assert_eq!(b.rows(), 0, "take leaves the batch empty");
    }

    #[test]
    fn duplicate_field_in_a_record_keeps_the_last() {
        let mut reg = Registry::default();
        let mut b = StepBatch::new(0);
        let r = rec(
            &mut reg,
            1,
            &[FieldValue::Num("x", 1.0), FieldValue::Num("extra.x", 2.0)],
        );
        b.append(&r, &reg).unwrap();
        let t = b.take();
        assert_eq!(t.column("extra.x").unwrap().scalar(0), Some(2.0));
        assert_eq!(t.column("extra.x").unwrap().len(), 1);
    }

    #[test]
    fn malformed_records_leave_the_batch_untouched() {
        let mut reg = Registry::default();
        let (loss, _) = reg.register("loss").unwrap();
        let (kl, _) = reg.register("kl_positional").unwrap();
        let (nan_count, _) = reg.register("nan_count").unwrap();
        let mut b = StepBatch::new(0);
        let bad: Vec<Vec<f64>> = vec![
            vec![],
            vec![-1.0, 0.0],
            vec![1.5, 0.0],
            vec![f64::NAN, 0.0],
            vec![1.0, 0.0, 99.0, 1.0],
            vec![1.0, 0.0, loss as f64],
            vec![1.0, 0.0, kl as f64, 5.0, 1.0],
            vec![1.0, 0.0, kl as f64, -1.0],
            vec![1.0, 0.0, nan_count as f64, 0.5],
        ];
        for r in &bad {
            assert!(b.append(r, &reg).is_err(), "{r:?} should be refused");
        }
        assert_eq!(b.rows(), 0);
        b.append(&[4.0, f64::NAN, loss as f64, f64::NAN], &reg)
            .unwrap();
        let t = b.take();
        assert!(
            t.column("loss").unwrap().scalar(0).unwrap().is_nan(),
            "NaN metrics are kept"
        );
        assert_eq!(t.column("timestamp").unwrap().scalar(0), None);
    }
}

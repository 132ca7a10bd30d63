//! Rows of samples → one Arrow batch, with the column names and types the Python package
//! writes (docs/format.md#samples): strings as utf8, `completion_token_ids` as list<int64>,
//! `truncated` as bool, `reward_component.*` and `extra.*` as float64. Every fixed column
//! is always written (typed, null where unset), so parts and shards share one schema.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, RecordBatch, StringBuilder,
};
use arrow::datatypes::{DataType, Field, Schema};

use super::wire::SampleRow;
use crate::error::{Error, Result};
use crate::schema::{EXTRA_PREFIX, REWARD_COMPONENT_PREFIX};

/// The fixed SampleRecord columns, in the Python package's order.
pub const SAMPLE_COLUMNS: &[(&str, SampleColumnType)] = &[
    ("step", SampleColumnType::Int),
    ("sample_id", SampleColumnType::Text),
    ("rank", SampleColumnType::Int),
    ("group_id", SampleColumnType::Text),
    ("prompt_id", SampleColumnType::Text),
    ("prompt_text", SampleColumnType::Text),
    ("completion_text", SampleColumnType::Text),
    ("completion_token_ids", SampleColumnType::IntList),
    ("reward_total", SampleColumnType::Float),
    ("advantage", SampleColumnType::Float),
    ("logprob_mean", SampleColumnType::Float),
    ("kl_contribution", SampleColumnType::Float),
    ("completion_len", SampleColumnType::Int),
    ("truncated", SampleColumnType::Bool),
    ("capture_reason", SampleColumnType::Text),
    // ours (docs/format.md#units-what-samples-events-and-spans-carry); the Python package's
    // reader ignores them
    ("span_id", SampleColumnType::Text),
    ("labels", SampleColumnType::Text),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleColumnType {
    Int,
    Float,
    Text,
    Bool,
    IntList,
}

impl SampleColumnType {
    pub fn data_type(self) -> DataType {
        match self {
            SampleColumnType::Int => DataType::Int64,
            SampleColumnType::Float => DataType::Float64,
            SampleColumnType::Text => DataType::Utf8,
            SampleColumnType::Bool => DataType::Boolean,
            SampleColumnType::IntList => {
                DataType::List(Arc::new(Field::new("item", DataType::Int64, true)))
            }
        }
    }
}

/// Buffered rows between two part files.
#[derive(Default)]
pub struct SampleBatch {
    rows: Vec<SampleRow>,
    bytes: usize,
}

impl SampleBatch {
    pub fn push(&mut self, row: SampleRow) {
        self.bytes += row.approx_bytes();
        self.rows.push(row);
    }

    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Drops the buffered rows (a writer failure: the caller counts them as lost).
    pub fn clear(&mut self) {
        self.rows.clear();
        self.bytes = 0;
    }

    /// Empties the buffer into an Arrow batch.
    pub fn take(&mut self) -> Result<RecordBatch> {
        let rows = std::mem::take(&mut self.rows);
        self.bytes = 0;
        to_record_batch(&rows)
    }
}

pub fn to_record_batch(rows: &[SampleRow]) -> Result<RecordBatch> {
    let n = rows.len();
    let ints = |f: &dyn Fn(&SampleRow) -> Option<i64>| -> ArrayRef {
        let mut b = Int64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let floats = |f: &dyn Fn(&SampleRow) -> Option<f64>| -> ArrayRef {
        let mut b = Float64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let texts = |f: &dyn Fn(&SampleRow) -> Option<&str>| -> ArrayRef {
        let bytes: usize = rows.iter().map(|r| f(r).map_or(0, str::len)).sum();
        let mut b = StringBuilder::with_capacity(n, bytes);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let mut fields: Vec<Field> = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for &(name, ty) in SAMPLE_COLUMNS {
        let array =
            match name {
                "step" => ints(&|r| Some(r.step)),
                "sample_id" => texts(&|r| Some(r.sample_id.as_str())),
                "rank" => ints(&|r| Some(r.rank)),
                "group_id" => texts(&|r| r.group_id.as_deref()),
                "prompt_id" => texts(&|r| r.prompt_id.as_deref()),
                "prompt_text" => texts(&|r| r.prompt_text.as_deref()),
                "completion_text" => texts(&|r| r.completion_text.as_deref()),
                "completion_token_ids" => {
                    let mut b = ListBuilder::new(Int64Builder::new())
                        .with_field(Arc::new(Field::new("item", DataType::Int64, true)));
                    for r in rows {
                        match &r.completion_token_ids {
                            Some(ids) => {
                                b.values().append_slice(ids);
                                b.append(true);
                            }
                            None => b.append(false),
                        }
                    }
                    Arc::new(b.finish())
                }
                "reward_total" => floats(&|r| r.reward_total),
                "advantage" => floats(&|r| r.advantage),
                "logprob_mean" => floats(&|r| r.logprob_mean),
                "kl_contribution" => floats(&|r| r.kl_contribution),
                "completion_len" => ints(&|r| r.completion_len),
                "truncated" => {
                    let mut b = BooleanBuilder::with_capacity(n);
                    rows.iter().for_each(|r| b.append_option(r.truncated));
                    Arc::new(b.finish())
                }
                "capture_reason" => texts(&|r| r.capture_reason.as_deref()),
                "span_id" => texts(&|r| r.span_id.as_deref()),
                "labels" => texts(&|r| r.labels.as_deref()),
                other => {
                    return Err(Error::Internal {
                        what: format!("no builder for sample column {other}"),
                    })
                }
            };
        fields.push(Field::new(name, ty.data_type(), true));
        arrays.push(array);
    }
    // dict columns: the union of this batch's names, sorted for a stable layout
    for (prefix, get) in [
        (
            REWARD_COMPONENT_PREFIX,
            (|r: &SampleRow| &r.reward_components) as fn(&SampleRow) -> &Vec<(String, f64)>,
        ),
        (EXTRA_PREFIX, |r: &SampleRow| &r.extra),
    ] {
        let mut names: BTreeMap<&str, ()> = BTreeMap::new();
        for r in rows {
            for (k, _) in get(r) {
                names.insert(k.as_str(), ());
            }
        }
        for name in names.keys() {
            arrays.push(floats(&|r| {
                get(r).iter().find(|(k, _)| k == name).map(|(_, x)| *x)
            }));
            fields.push(Field::new(
                format!("{prefix}{name}"),
                DataType::Float64,
                true,
            ));
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| Error::arrow("building a batch of samples", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;

    #[test]
    fn fixed_columns_always_and_dicts_unioned() {
        let a = SampleRow {
            step: 1,
            sample_id: "a".into(),
            reward_components: vec![("fmt".into(), 1.0)],
            truncated: Some(true),
            completion_token_ids: Some(vec![5, 6]),
            ..Default::default()
        };
        let b = SampleRow {
            step: 2,
            sample_id: "b".into(),
            extra: vec![("x".into(), 2.0)],
            ..Default::default()
        };
        let batch = to_record_batch(&[a, b]).unwrap();
        let names: Vec<String> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names.len(), SAMPLE_COLUMNS.len() + 2);
        assert!(names.contains(&"reward_component.fmt".to_string()));
        assert!(names.contains(&"extra.x".to_string()));
        let fmt = batch.column_by_name("reward_component.fmt").unwrap();
        assert_eq!(fmt.null_count(), 1);
        let ids = batch
            .column_by_name("completion_token_ids")
            .unwrap()
            .as_list::<i32>();
        assert_eq!(ids.value(0).as_primitive::<Int64Type>().values(), &[5, 6]);
        assert!(ids.is_null(1));
        assert_eq!(
            batch.column_by_name("truncated").unwrap().data_type(),
            &DataType::Boolean
        );
    }
}

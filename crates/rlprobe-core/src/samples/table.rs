//! A filtered sample read gathered into columns: numbers in one `f64` buffer per column,
//! texts as UTF-8 bytes with offsets. A bulk read (a million samples' rewards and ids)
//! then crosses into JS as a few buffers instead of a million records and strings.
//!
//! Batches from any writer are unified as `samples()` records are: the format's columns
//! get the format's kind (an integer `sample_id` becomes its text), a column some files
//! lack is null there, a column read as Arrow `null` or of a type the format does not know
//! (struct, binary) is left out, and `rank` is filled from the rank directory where a row
//! has none.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Float64Type};
use std::sync::Arc;

use std::path::PathBuf;

use super::batch::{SampleColumnType, SAMPLE_COLUMNS};
use super::{PrefetchCursor, SampleCursor, SampleFilter};
use crate::error::{Error, Result};

/// What a column holds, as JS sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Int,
    Float,
    Bool,
    Text,
    IntList,
    FloatList,
}

impl ColumnKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnKind::Int => "int",
            ColumnKind::Float => "float",
            ColumnKind::Bool => "bool",
            ColumnKind::Text => "text",
            ColumnKind::IntList => "int_list",
            ColumnKind::FloatList => "float_list",
        }
    }

    fn of_format(t: SampleColumnType) -> ColumnKind {
        match t {
            SampleColumnType::Int => ColumnKind::Int,
            SampleColumnType::Float => ColumnKind::Float,
            SampleColumnType::Text => ColumnKind::Text,
            SampleColumnType::Bool => ColumnKind::Bool,
            SampleColumnType::IntList => ColumnKind::IntList,
        }
    }

    /// The kind of an Arrow type, or None for one the format does not know (left out).
    fn of_arrow(dt: &DataType) -> Option<ColumnKind> {
        match dt {
            _ if dt.is_integer() => Some(ColumnKind::Int),
            _ if dt.is_floating() => Some(ColumnKind::Float),
            DataType::Boolean => Some(ColumnKind::Bool),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Some(ColumnKind::Text),
            // a list column holding only empty lists or nulls (pyarrow's list<null>)
            DataType::List(f) | DataType::LargeList(f)
                if f.data_type().is_integer() || f.data_type() == &DataType::Null =>
            {
                Some(ColumnKind::IntList)
            }
            DataType::List(f) | DataType::LargeList(f) if f.data_type().is_floating() => {
                Some(ColumnKind::FloatList)
            }
            _ => None,
        }
    }

    fn is_number(self) -> bool {
        matches!(self, ColumnKind::Int | ColumnKind::Float | ColumnKind::Bool)
    }

    fn is_list(self) -> bool {
        matches!(self, ColumnKind::IntList | ColumnKind::FloatList)
    }

    /// The kind two files' same-named columns share, if any (numbers widen to float).
    fn unify(self, other: ColumnKind) -> Option<ColumnKind> {
        match (self, other) {
            _ if self == other => Some(self),
            _ if self.is_number() && other.is_number() => Some(ColumnKind::Float),
            _ if self.is_list() && other.is_list() => Some(ColumnKind::FloatList),
            // a column that is text in some file: text, numbers written as JS writes them
            (ColumnKind::Text, o) | (o, ColumnKind::Text) if o.is_number() => {
                Some(ColumnKind::Text)
            }
            _ => None,
        }
    }
}

/// A column's cells: numbers (NaN where null), text bytes or list items, with offsets for
/// text and lists (`rows + 1` of them).
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    Numbers(Vec<f64>),
    Text { bytes: Vec<u8>, offsets: Vec<u32> },
    List { items: Vec<f64>, offsets: Vec<u32> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableColumn {
    pub name: String,
    pub kind: ColumnKind,
    pub values: ColumnValues,
    /// 1 where the row has a value.
    pub valid: Vec<u8>,
    pub nulls: usize,
}

impl TableColumn {
    fn new(name: &str, kind: ColumnKind) -> TableColumn {
        let values = match kind {
            ColumnKind::Text => ColumnValues::Text {
                bytes: Vec::new(),
                offsets: vec![0],
            },
            ColumnKind::IntList | ColumnKind::FloatList => ColumnValues::List {
                items: Vec::new(),
                offsets: vec![0],
            },
            _ => ColumnValues::Numbers(Vec::new()),
        };
        TableColumn {
            name: name.to_string(),
            kind,
            values,
            valid: Vec::new(),
            nulls: 0,
        }
    }

    fn push_nulls(&mut self, n: usize) {
        self.valid.resize(self.valid.len() + n, 0);
        self.nulls += n;
        match &mut self.values {
            ColumnValues::Numbers(v) => v.resize(v.len() + n, f64::NAN),
            ColumnValues::Text { offsets, .. } | ColumnValues::List { offsets, .. } => {
                let end = *offsets.last().unwrap_or(&0);
                offsets.resize(offsets.len() + n, end);
            }
        }
    }
}

/// Text and list offsets are 32-bit, as a JS buffer's length is at most 4 GiB.
fn offset(len: usize, column: &str) -> Result<u32> {
    u32::try_from(len).map_err(|_| Error::InvalidOption {
        option: "sample table columns",
        value: format!("`{column}`"),
        reason: "its cells pass 4 GiB; read texts this large with samples(), a batch at a time"
            .into(),
    })
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct SampleTable {
    pub rows: usize,
    pub columns: Vec<TableColumn>,
}

impl SampleTable {
    /// Appends a batch of one rank directory's samples. `fill_rank`: the directory's rank,
    /// written where a row has none (a `rank` column is made if the batch has none).
    pub fn append(&mut self, batch: &RecordBatch, fill_rank: Option<i64>) -> Result<()> {
        let n = batch.num_rows();
        let mut touched = vec![false; self.columns.len()];
        for (field, array) in batch.schema().fields().iter().zip(batch.columns()) {
            let Some(kind) = kind_of(field.name(), array.data_type()) else {
                continue;
            };
            let i = self.column(field.name(), kind, &mut touched)?;
            let col = &mut self.columns[i];
            append_array(col, array)?;
            touched[i] = true;
        }
        for (col, t) in self.columns.iter_mut().zip(&touched) {
            if !t {
                col.push_nulls(n);
            }
        }
        self.rows += n;
        if let Some(rank) = fill_rank {
            let i = self.column("rank", ColumnKind::Int, &mut Vec::new())?;
            let col = &mut self.columns[i];
            if col.valid.len() < self.rows {
                col.push_nulls(self.rows - col.valid.len());
            }
            if col.nulls > 0 {
                if let ColumnValues::Numbers(v) = &mut col.values {
                    let from = self.rows - n;
                    for (value, valid) in v[from..].iter_mut().zip(&mut col.valid[from..]) {
                        if *valid == 0 {
                            *value = rank as f64;
                            *valid = 1;
                            col.nulls -= 1;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The index of column `name`, made (null so far) if new; its kind widened to `kind`.
    fn column(&mut self, name: &str, kind: ColumnKind, touched: &mut Vec<bool>) -> Result<usize> {
        if let Some(i) = self.columns.iter().position(|c| c.name == name) {
            let col = &mut self.columns[i];
            if col.kind != kind {
                let to = col.kind.unify(kind).ok_or_else(|| Error::SchemaConflict {
                    column: name.to_string(),
                    detail: format!(
                        "of the samples is {} in one file and {} in another",
                        col.kind.as_str(),
                        kind.as_str()
                    ),
                    path: None,
                    source: None,
                })?;
                if to == ColumnKind::Text && col.kind != ColumnKind::Text {
                    col.values = numbers_as_text(col, name)?;
                }
                // numbers and list items are held as f64 already: otherwise only the label widens
                col.kind = to;
            }
            return Ok(i);
        }
        let mut col = TableColumn::new(name, kind);
        col.push_nulls(self.rows);
        self.columns.push(col);
        touched.push(false);
        Ok(self.columns.len() - 1)
    }
}

/// A number column's cells as text, as JS writes them (`String(x)`; bools `true`/`false`).
fn numbers_as_text(col: &TableColumn, name: &str) -> Result<ColumnValues> {
    let ColumnValues::Numbers(v) = &col.values else {
        return Err(Error::Internal {
            what: format!("sample column `{name}`: only numbers become text"),
        });
    };
    let mut bytes = Vec::new();
    let mut offsets = vec![0u32];
    for (x, ok) in v.iter().zip(&col.valid) {
        if *ok == 1 {
            let text = match col.kind {
                ColumnKind::Bool => (if *x != 0.0 { "true" } else { "false" }).to_string(),
                _ => js_number_text(*x),
            };
            bytes.extend_from_slice(text.as_bytes());
        }
        offsets.push(offset(bytes.len(), name)?);
    }
    Ok(ColumnValues::Text { bytes, offsets })
}

/// `String(x)` of a JS number: integers without `.0`, exponents past 1e21 and below 1e-6.
pub fn js_number_text(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-6..1e21).contains(&a) {
        // Rust's shortest digits; JS writes the exponent's sign
        let e = format!("{x:e}");
        return match e.split_once('e') {
            Some((m, exp)) if !exp.starts_with('-') => format!("{m}e+{exp}"),
            _ => e,
        };
    }
    // Rust's Display is the shortest round-trip form, as JS's, without an exponent here
    format!("{x}")
}

/// The kind a batch column is read as: the format's for its own columns.
fn kind_of(name: &str, dt: &DataType) -> Option<ColumnKind> {
    if dt == &DataType::Null {
        return None;
    }
    let own = ColumnKind::of_arrow(dt)?;
    Some(
        SAMPLE_COLUMNS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(own, |&(_, t)| ColumnKind::of_format(t)),
    )
}

fn cast(array: &ArrayRef, to: &DataType, name: &str) -> Result<ArrayRef> {
    arrow::compute::cast(array, to).map_err(|e| Error::SchemaConflict {
        column: name.to_string(),
        detail: format!("of the samples cannot be read as {to}"),
        path: None,
        source: Some(Arc::new(e)),
    })
}

fn append_array(col: &mut TableColumn, array: &ArrayRef) -> Result<()> {
    let name = col.name.clone();
    match &mut col.values {
        ColumnValues::Numbers(values) => {
            let a = cast(array, &DataType::Float64, &name)?;
            let a = a.as_primitive::<Float64Type>();
            // after the cast: a value it could not read is a null too
            col.nulls += a.null_count();
            values.reserve(a.len());
            col.valid.reserve(a.len());
            for i in 0..a.len() {
                let ok = a.is_valid(i);
                values.push(if ok { a.value(i) } else { f64::NAN });
                col.valid.push(ok as u8);
            }
        }
        ColumnValues::Text { bytes, offsets } => {
            let mut push = |text: Option<&str>| -> Result<()> {
                if let Some(t) = text {
                    bytes.extend_from_slice(t.as_bytes());
                }
                offsets.push(offset(bytes.len(), &name)?);
                col.valid.push(text.is_some() as u8);
                Ok(())
            };
            if array.data_type().is_floating() {
                // as JS writes the number (3, not Arrow's 3.0): what samples() gives
                let a = cast(array, &DataType::Float64, &name)?;
                let a = a.as_primitive::<Float64Type>();
                col.nulls += a.null_count();
                for i in 0..a.len() {
                    push(a.is_valid(i).then(|| js_number_text(a.value(i))).as_deref())?;
                }
            } else {
                let a = cast(array, &DataType::Utf8, &name)?;
                let a = a.as_string::<i32>();
                col.nulls += a.null_count();
                for i in 0..a.len() {
                    push(a.is_valid(i).then(|| a.value(i)))?;
                }
            }
        }
        ColumnValues::List { items, offsets } => {
            let item = Arc::new(Field::new("item", DataType::Float64, true));
            let a = cast(array, &DataType::List(item), &name)?;
            let l = a.as_list::<i32>();
            col.nulls += l.null_count();
            let inner = l.values().as_primitive::<Float64Type>();
            let o = l.value_offsets();
            for i in 0..l.len() {
                let ok = l.is_valid(i);
                if ok {
                    for j in o[i] as usize..o[i + 1] as usize {
                        items.push(if inner.is_valid(j) {
                            inner.value(j)
                        } else {
                            f64::NAN
                        });
                    }
                }
                offsets.push(offset(items.len(), &name)?);
                col.valid.push(ok as u8);
            }
        }
    }
    Ok(())
}

/// The samples of each `(directory, rank)` in turn that match `filter`, as one table of
/// `columns` (None: all) and `rank`. Files are decoded on the read-ahead threads.
pub fn read_sample_table(
    dirs: &[(PathBuf, i64)],
    filter: &SampleFilter,
    columns: Option<&[String]>,
) -> Result<SampleTable> {
    let mut table = SampleTable::default();
    for (dir, rank) in dirs {
        let cursor =
            SampleCursor::open(dir, filter.clone(), columns.map(<[String]>::to_vec), 16_384)?;
        let mut cursor = PrefetchCursor::start(cursor)?;
        while let Some(b) = cursor.next_batch()? {
            // a column whose kinds cannot meet: named with the directory it was met in
            table.append(&b, Some(*rank)).map_err(|e| e.in_file(dir))?;
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BooleanArray, Float64Array, Int64Array, ListArray, NullArray, StringArray};
    use arrow::datatypes::{Int64Type, Schema};

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = cols
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            cols.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap()
    }

    fn col<'a>(t: &'a SampleTable, name: &str) -> &'a TableColumn {
        t.columns.iter().find(|c| c.name == name).unwrap()
    }

    fn texts(c: &TableColumn) -> Vec<Option<String>> {
        let ColumnValues::Text { bytes, offsets } = &c.values else {
            panic!("{c:?}")
        };
        (0..c.valid.len())
            .map(|i| {
                (c.valid[i] == 1).then(|| {
                    String::from_utf8(bytes[offsets[i] as usize..offsets[i + 1] as usize].to_vec())
                        .unwrap()
                })
            })
            .collect()
    }

    fn numbers(c: &TableColumn) -> Vec<Option<f64>> {
        let ColumnValues::Numbers(v) = &c.values else {
            panic!("{c:?}")
        };
        v.iter()
            .zip(&c.valid)
            .map(|(x, ok)| (*ok == 1).then_some(*x))
            .collect()
    }

    #[test]
    fn batches_from_different_writers_unify_as_records_do() {
        let mut t = SampleTable::default();
        // ours: text ids, a rank column, a late extra
        t.append(
            &batch(vec![
                ("step", Arc::new(Int64Array::from(vec![1, 1])) as ArrayRef),
                (
                    "sample_id",
                    Arc::new(StringArray::from(vec![Some("a"), Some("b")])),
                ),
                ("rank", Arc::new(Int64Array::from(vec![Some(0), None]))),
                (
                    "reward_total",
                    Arc::new(Float64Array::from(vec![Some(0.5), None])),
                ),
                ("truncated", Arc::new(BooleanArray::from(vec![true, false]))),
            ]),
            Some(3),
        )
        .unwrap();
        // Python's: integer ids, no rank, a null column, a token list, an int extra
        let tokens = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(7), Some(8)]),
            None,
            Some(vec![]),
        ]);
        t.append(
            &batch(vec![
                (
                    "step",
                    Arc::new(Int64Array::from(vec![2, 2, 3])) as ArrayRef,
                ),
                ("sample_id", Arc::new(Int64Array::from(vec![10, 11, 12]))),
                ("group_id", Arc::new(NullArray::new(3))),
                ("completion_token_ids", Arc::new(tokens)),
                ("extra.k", Arc::new(Int64Array::from(vec![1, 2, 3]))),
            ]),
            Some(3),
        )
        .unwrap();
        // a float extra after an int one: the column widens
        t.append(
            &batch(vec![
                ("step", Arc::new(Int64Array::from(vec![4])) as ArrayRef),
                ("extra.k", Arc::new(Float64Array::from(vec![2.5]))),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(t.rows, 6);
        for c in &t.columns {
            assert_eq!(c.valid.len(), 6, "{}", c.name);
        }
        assert_eq!(
            texts(col(&t, "sample_id")),
            ["a", "b", "10", "11", "12"]
                .map(|s| Some(s.to_string()))
                .into_iter()
                .chain([None])
                .collect::<Vec<_>>()
        );
        // the row's own rank kept, a missing one filled; none filled without a rank to fill
        assert_eq!(
            numbers(col(&t, "rank")),
            [Some(0.0), Some(3.0), Some(3.0), Some(3.0), Some(3.0), None]
        );
        assert_eq!(
            numbers(col(&t, "reward_total")),
            [Some(0.5), None, None, None, None, None]
        );
        assert_eq!(col(&t, "truncated").kind, ColumnKind::Bool);
        assert_eq!(numbers(col(&t, "truncated"))[..2], [Some(1.0), Some(0.0)]);
        assert!(
            t.columns.iter().all(|c| c.name != "group_id"),
            "a null column is left out"
        );
        let k = col(&t, "extra.k");
        assert_eq!(k.kind, ColumnKind::Float);
        assert_eq!(
            numbers(k),
            [None, None, Some(1.0), Some(2.0), Some(3.0), Some(2.5)]
        );
        let ids = col(&t, "completion_token_ids");
        assert_eq!(ids.kind, ColumnKind::IntList);
        let ColumnValues::List { items, offsets } = &ids.values else {
            panic!()
        };
        assert_eq!(items, &[7.0, 8.0]);
        assert_eq!(offsets, &[0, 0, 0, 2, 2, 2, 2]);
        assert_eq!(ids.valid, [0, 0, 1, 0, 1, 0]);
        assert_eq!(col(&t, "sample_id").nulls, 1);
    }

    #[test]
    fn mixed_kinds_meet_as_samples_reads_them_and_lists_against_numbers_are_refused_by_name() {
        let mut t = SampleTable::default();
        let one = |name: &str, a: ArrayRef| batch(vec![(name, a)]);
        t.append(&one("extra.x", Arc::new(Int64Array::from(vec![1]))), None)
            .unwrap();
        t.append(
            &one("extra.x", Arc::new(Float64Array::from(vec![2.5]))),
            None,
        )
        .unwrap();
        // text in a later file: the column becomes text, its numbers as JS writes them
        t.append(
            &one("extra.x", Arc::new(StringArray::from(vec!["three"]))),
            None,
        )
        .unwrap();
        t.append(
            &one("extra.x", Arc::new(Float64Array::from(vec![4.0, 1e21]))),
            None,
        )
        .unwrap();
        t.append(
            &one("extra.x", Arc::new(BooleanArray::from(vec![true]))),
            None,
        )
        .unwrap();
        let x = col(&t, "extra.x");
        assert_eq!(x.kind, ColumnKind::Text);
        assert_eq!(
            texts(x),
            ["1", "2.5", "three", "4", "1e+21", "true"].map(|s| Some(s.to_string()))
        );
        // a float id (pandas' int column with a gap) reads as JS writes it: 3, not 3.0
        let mut ids = SampleTable::default();
        ids.append(
            &one(
                "group_id",
                Arc::new(Float64Array::from(vec![Some(3.0), None, Some(0.5)])),
            ),
            None,
        )
        .unwrap();
        assert_eq!(
            texts(col(&ids, "group_id")),
            [Some("3".to_string()), None, Some("0.5".to_string())]
        );
        assert_eq!(col(&ids, "group_id").nulls, 1);
        // a list against numbers cannot meet: refused, naming the column and both kinds
        let tokens = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![Some(vec![Some(1)])]);
        let e = t
            .append(&one("extra.x", Arc::new(tokens)), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`extra.x`") && e.contains("text") && e.contains("int_list"),
            "{e}"
        );
    }

    #[test]
    fn a_list_column_of_only_empty_lists_is_kept() {
        use arrow::array::new_empty_array;
        use arrow::buffer::OffsetBuffer;
        let item = Arc::new(Field::new("item", DataType::Null, true));
        let empty = ListArray::new(
            item,
            OffsetBuffer::from_lengths([0, 0]),
            new_empty_array(&DataType::Null),
            Some(vec![true, false].into()),
        );
        let mut t = SampleTable::default();
        t.append(
            &batch(vec![("completion_token_ids", Arc::new(empty) as ArrayRef)]),
            None,
        )
        .unwrap();
        let c = col(&t, "completion_token_ids");
        assert_eq!(c.kind, ColumnKind::IntList);
        assert_eq!(c.valid, [1, 0]);
        assert_eq!(c.nulls, 1);
    }

    #[test]
    fn numbers_are_written_as_js_writes_them() {
        for (x, js) in [
            (3.0, "3"),
            (-0.0, "0"),
            (0.1, "0.1"),
            (1e-7, "1e-7"),
            (1.5e300, "1.5e+300"),
            (123456789012.5, "123456789012.5"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(js_number_text(x), js, "{x}");
        }
    }
}

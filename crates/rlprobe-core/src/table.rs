//! Columnar buffers shared by the writer (rows in), the reader (Parquet in) and the
//! binding (typed arrays out). Nulls are tracked apart from values because NaN and ±Inf
//! are legitimate metric values, while a null means "not logged at this step".

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, ListArray, RecordBatch};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};

use crate::error::{Error, Result};
use crate::schema::{column_order_key, ColumnKind};
use crate::validity::Validity;

/// A column read from a file that cannot be read as its kind.
fn unreadable(detail: String, source: Option<arrow::error::ArrowError>) -> Error {
    // the caller names the column and the file (`Table::append_batch`, `Error::in_file`)
    Error::SchemaConflict {
        column: String::new(),
        detail,
        path: None,
        source: source.map(Arc::new),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    F64(Vec<f64>),
    I64(Vec<i64>),
    /// `offsets.len() == rows + 1`.
    ListF64 {
        offsets: Vec<i32>,
        values: Vec<f64>,
    },
}

/// Huge pages for the room a large column was made with (memory.rs says why).
fn advise_huge_pages<T>(v: &Vec<T>) {
    crate::memory::advise_huge_pages(v.as_ptr().cast(), v.capacity() * std::mem::size_of::<T>());
}

/// One growable column with its validity.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnBuf {
    pub values: ColumnValues,
    pub valid: Validity,
}

impl ColumnBuf {
    pub fn new(kind: ColumnKind) -> Self {
        Self::with_capacity(kind, 0)
    }

    /// A column with room for `rows` rows (a reader that knows the row count from the
    /// footers allocates once: no doubling, no shrinking copy when handed to JS).
    pub fn with_capacity(kind: ColumnKind, rows: usize) -> Self {
        let values = match kind {
            ColumnKind::F64 => ColumnValues::F64(Vec::with_capacity(rows)),
            ColumnKind::I64 => ColumnValues::I64(Vec::with_capacity(rows)),
            ColumnKind::ListF64 => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                ColumnValues::ListF64 {
                    offsets,
                    values: Vec::new(),
                }
            }
        };
        let buf = ColumnBuf {
            values,
            valid: Validity::with_capacity(rows),
        };
        // a reader sizes a column from the footers and fills it whole
        match &buf.values {
            ColumnValues::F64(v) => advise_huge_pages(v),
            ColumnValues::I64(v) => advise_huge_pages(v),
            ColumnValues::ListF64 { .. } => {}
        }
        buf
    }

    pub fn kind(&self) -> ColumnKind {
        match self.values {
            ColumnValues::F64(_) => ColumnKind::F64,
            ColumnValues::I64(_) => ColumnKind::I64,
            ColumnValues::ListF64 { .. } => ColumnKind::ListF64,
        }
    }

    pub fn len(&self) -> usize {
        self.valid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.valid.is_empty()
    }

    pub fn null_count(&self) -> usize {
        self.valid.null_count()
    }

    pub fn push_null(&mut self) {
        match &mut self.values {
            ColumnValues::F64(v) => v.push(f64::NAN),
            ColumnValues::I64(v) => v.push(0),
            ColumnValues::ListF64 { offsets, .. } => offsets.push(*offsets.last().unwrap()),
        }
        self.valid.push(false);
    }

    /// Appends nulls until the column has `rows` entries.
    pub fn pad_to(&mut self, rows: usize) {
        while self.len() < rows {
            self.push_null();
        }
    }

    /// Appends `other`'s rows; its kind must be this column's (or an int column into a
    /// float one: `Table::column_mut` widens first).
    fn append_buf(&mut self, other: ColumnBuf) {
        match (&mut self.values, other.values) {
            (ColumnValues::F64(a), ColumnValues::F64(b)) => a.extend_from_slice(&b),
            (ColumnValues::I64(a), ColumnValues::I64(b)) => a.extend_from_slice(&b),
            (ColumnValues::F64(a), ColumnValues::I64(b)) => {
                a.extend(b.iter().zip(other.valid.iter()).map(|(x, ok)| {
                    if ok {
                        *x as f64
                    } else {
                        f64::NAN
                    }
                }))
            }
            (
                ColumnValues::ListF64 { offsets, values },
                ColumnValues::ListF64 {
                    offsets: o,
                    values: v,
                },
            ) => {
                let base = *offsets.last().unwrap() - o[0];
                offsets.extend(o[1..].iter().map(|x| x + base));
                values.extend_from_slice(&v[o[0] as usize..*o.last().unwrap() as usize]);
            }
            (have, b) => unreachable!("append_buf: {have:?} and {b:?} do not unify"),
        }
        self.valid.append(&other.valid);
    }

    /// Drops entries past `rows` (a field given twice in one record: the last one wins).
    pub fn truncate(&mut self, rows: usize) {
        if rows >= self.len() {
            return;
        }
        match &mut self.values {
            ColumnValues::F64(v) => v.truncate(rows),
            ColumnValues::I64(v) => v.truncate(rows),
            ColumnValues::ListF64 { offsets, values } => {
                offsets.truncate(rows + 1);
                values.truncate(*offsets.last().unwrap() as usize);
            }
        }
        self.valid.truncate(rows);
    }

    /// Appends one scalar. For an int column the caller has already checked integrality.
    pub fn push_number(&mut self, x: f64) {
        match &mut self.values {
            ColumnValues::F64(v) => v.push(x),
            ColumnValues::I64(v) => v.push(x as i64),
            ColumnValues::ListF64 { offsets, values } => {
                values.push(x);
                offsets.push(values.len() as i32);
            }
        }
        self.valid.push(true);
    }

    pub fn push_list(&mut self, xs: &[f64]) {
        match &mut self.values {
            ColumnValues::ListF64 { offsets, values } => {
                values.extend_from_slice(xs);
                offsets.push(values.len() as i32);
            }
            _ => panic!("push_list on a scalar column"),
        }
        self.valid.push(true);
    }

    /// Value at `row` as f64 (scalars only; None when null).
    pub fn scalar(&self, row: usize) -> Option<f64> {
        if !self.valid.get(row) {
            return None;
        }
        match &self.values {
            ColumnValues::F64(v) => Some(v[row]),
            ColumnValues::I64(v) => Some(v[row] as f64),
            ColumnValues::ListF64 { .. } => None,
        }
    }

    pub fn list(&self, row: usize) -> Option<&[f64]> {
        match &self.values {
            ColumnValues::ListF64 { offsets, values } if self.valid.get(row) => {
                Some(&values[offsets[row] as usize..offsets[row + 1] as usize])
            }
            _ => None,
        }
    }

    fn null_buffer(&self) -> Option<NullBuffer> {
        match self.valid.null_count() {
            0 => None,
            _ => Some(NullBuffer::from(self.valid.to_vec())),
        }
    }

    pub fn data_type(kind: ColumnKind) -> DataType {
        match kind {
            ColumnKind::F64 => DataType::Float64,
            ColumnKind::I64 => DataType::Int64,
            ColumnKind::ListF64 => {
                DataType::List(Arc::new(Field::new("item", DataType::Float64, true)))
            }
        }
    }

    pub fn to_arrow(&self) -> ArrayRef {
        let nulls = self.null_buffer();
        match &self.values {
            ColumnValues::F64(v) => {
                Arc::new(Float64Array::new(ScalarBuffer::from(v.clone()), nulls))
            }
            ColumnValues::I64(v) => Arc::new(Int64Array::new(ScalarBuffer::from(v.clone()), nulls)),
            ColumnValues::ListF64 { offsets, values } => Arc::new(ListArray::new(
                Arc::new(Field::new("item", DataType::Float64, true)),
                OffsetBuffer::new(ScalarBuffer::from(offsets.clone())),
                Arc::new(Float64Array::from(values.clone())),
                nulls,
            )),
        }
    }

    /// Appends an Arrow array read from any Parquet writer. Integer and float types widen
    /// to this column's kind; a column of Arrow's Null type (pyarrow writes one for a field
    /// that was never set) appends nulls.
    pub fn append_arrow(&mut self, array: &dyn Array) -> Result<()> {
        if array.data_type() == &DataType::Null {
            for _ in 0..array.len() {
                self.push_null();
            }
            return Ok(());
        }
        match self.kind() {
            ColumnKind::ListF64 => {
                let list = match array.data_type() {
                    DataType::List(_) => array.as_list::<i32>().clone(),
                    DataType::LargeList(_) => {
                        let cast =
                            arrow::compute::cast(array, &ColumnBuf::data_type(ColumnKind::ListF64))
                                .map_err(|e| {
                                    unreadable("cannot be read as a list of floats".into(), Some(e))
                                })?;
                        cast.as_list::<i32>().clone()
                    }
                    other => {
                        return Err(unreadable(
                            format!("is a list column in one file and {other} in another"),
                            None,
                        ))
                    }
                };
                for row in 0..list.len() {
                    if list.is_null(row) {
                        self.push_null();
                        continue;
                    }
                    let inner = list.value(row);
                    let inner = arrow::compute::cast(&inner, &DataType::Float64).map_err(|e| {
                        unreadable(
                            "has list items that cannot be read as floats".into(),
                            Some(e),
                        )
                    })?;
                    let inner = inner.as_primitive::<Float64Type>();
                    let xs: Vec<f64> = (0..inner.len())
                        .map(|i| {
                            if inner.is_null(i) {
                                f64::NAN
                            } else {
                                inner.value(i)
                            }
                        })
                        .collect();
                    self.push_list(&xs);
                }
            }
            ColumnKind::I64 => {
                let cast = arrow::compute::cast(array, &DataType::Int64).map_err(|e| {
                    unreadable(
                        format!("cannot be read as integers (it is {})", array.data_type()),
                        Some(e),
                    )
                })?;
                let ints = cast.as_primitive::<Int64Type>();
                let ColumnValues::I64(v) = &mut self.values else {
                    unreachable!()
                };
                extend_whole(v, &mut self.valid, ints.values(), ints.nulls(), 0);
            }
            ColumnKind::F64 => {
                let cast = arrow::compute::cast(array, &DataType::Float64).map_err(|e| {
                    unreadable(
                        format!("cannot be read as floats (it is {})", array.data_type()),
                        Some(e),
                    )
                })?;
                let floats = cast.as_primitive::<Float64Type>();
                let ColumnValues::F64(v) = &mut self.values else {
                    unreachable!()
                };
                extend_whole(
                    v,
                    &mut self.valid,
                    floats.values(),
                    floats.nulls(),
                    f64::NAN,
                );
            }
        }
        Ok(())
    }
}

/// Appends an Arrow array's values as one buffer and its validity, then sets the nulls'
/// slots to `null` (what `push_null` writes), so a null never shows a stale value.
fn extend_whole<T: Copy>(
    values: &mut Vec<T>,
    valid: &mut Validity,
    from: &[T],
    nulls: Option<&NullBuffer>,
    null: T,
) {
    let start = values.len();
    values.extend_from_slice(from);
    match nulls {
        None => valid.push_run(true, from.len()),
        Some(n) => {
            valid.extend(n.iter());
            for (slot, ok) in values[start..].iter_mut().zip(n.iter()) {
                if !ok {
                    *slot = null;
                }
            }
        }
    }
}

/// The kind a column read from disk gets, given its Arrow type; None for a column we do not
/// keep (strings, structs…: a step table written by another tool may carry them).
pub fn kind_of_arrow(dt: &DataType) -> Option<ColumnKind> {
    match dt {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => Some(ColumnKind::F64),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Boolean => Some(ColumnKind::I64),
        DataType::List(f) | DataType::LargeList(f) => match kind_of_arrow(f.data_type()) {
            Some(ColumnKind::F64) | Some(ColumnKind::I64) => Some(ColumnKind::ListF64),
            _ if f.data_type() == &DataType::Null => Some(ColumnKind::ListF64),
            _ => None,
        },
        _ => None,
    }
}

/// The kind two files' columns of the same name unify to: ints widen to floats.
pub fn unify_kinds(a: ColumnKind, b: ColumnKind) -> Option<ColumnKind> {
    use ColumnKind::*;
    match (a, b) {
        (x, y) if x == y => Some(x),
        (F64, I64) | (I64, F64) => Some(F64),
        _ => None,
    }
}

/// Named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub rows: usize,
    pub names: Vec<String>,
    pub columns: Vec<ColumnBuf>,
    /// Rows a new column makes room for (the reader sets it from the footers).
    pub capacity_hint: usize,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&ColumnBuf> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| &self.columns[i])
    }

    /// Finds or adds a column, padding a new one with nulls for the rows before it.
    pub fn column_mut(&mut self, name: &str, kind: ColumnKind) -> Result<&mut ColumnBuf> {
        let i = match self.names.iter().position(|n| n == name) {
            Some(i) => {
                let have = self.columns[i].kind();
                match unify_kinds(have, kind) {
                    Some(k) if k == have => {}
                    Some(k) => self.columns[i] = widen(&self.columns[i], k),
                    None => {
                        return Err(Error::SchemaConflict {
                            column: name.to_string(),
                            detail: format!(
                                "is {} in one file and {} in another",
                                have.as_str(),
                                kind.as_str()
                            ),
                            path: None,
                            source: None,
                        })
                    }
                }
                i
            }
            None => {
                let mut col = ColumnBuf::with_capacity(kind, self.capacity_hint.max(self.rows));
                col.pad_to(self.rows);
                self.names.push(name.to_string());
                self.columns.push(col);
                self.columns.len() - 1
            }
        };
        Ok(&mut self.columns[i])
    }

    /// Pads every column to `rows` and records the new row count.
    pub fn finish_rows(&mut self, rows: usize) {
        for c in &mut self.columns {
            c.pad_to(rows);
        }
        self.rows = rows;
    }

    /// Appends a RecordBatch, unioning columns by name.
    pub fn append_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let start = self.rows;
        for (field, array) in batch.schema().fields().iter().zip(batch.columns()) {
            let kind = if field.data_type() == &DataType::Null {
                // an all-null column says nothing about its type; keep it only if known
                match self.column(field.name()) {
                    Some(c) => c.kind(),
                    None => continue,
                }
            } else {
                match kind_of_arrow(field.data_type()) {
                    Some(k) => k,
                    None => continue,
                }
            };
            let col = self.column_mut(field.name(), kind)?;
            col.pad_to(start);
            col.append_arrow(array.as_ref()).map_err(|e| match e {
                Error::SchemaConflict {
                    detail,
                    path,
                    source,
                    ..
                } => Error::SchemaConflict {
                    column: field.name().clone(),
                    detail,
                    path,
                    source,
                },
                other => other,
            })?;
        }
        self.finish_rows(start + batch.num_rows());
        Ok(())
    }

    /// Appends `other`'s rows below this table's, unioning columns by name (a table read
    /// in row shares is put back together in order).
    pub fn append_table(&mut self, other: Table) -> Result<()> {
        let start = self.rows;
        for (name, col) in other.names.into_iter().zip(other.columns) {
            let mine = self.column_mut(&name, col.kind())?;
            mine.pad_to(start);
            mine.append_buf(col);
        }
        self.finish_rows(start + other.rows);
        Ok(())
    }

    /// Columns in the canonical order (fixed, known fields, components, extras, others).
    pub fn sort_columns(&mut self) {
        // moves, not clones: a million-row table must not be held twice
        let mut pairs: Vec<(String, ColumnBuf)> = std::mem::take(&mut self.names)
            .into_iter()
            .zip(std::mem::take(&mut self.columns))
            .collect();
        pairs.sort_by(|a, b| column_order_key(&a.0).cmp(&column_order_key(&b.0)));
        (self.names, self.columns) = pairs.into_iter().unzip();
    }

    pub fn schema(&self) -> Schema {
        Schema::new(
            self.names
                .iter()
                .zip(&self.columns)
                .map(|(n, c)| Field::new(n, ColumnBuf::data_type(c.kind()), true))
                .collect::<Vec<_>>(),
        )
    }

    pub fn to_record_batch(&self) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self.columns.iter().map(|c| c.to_arrow()).collect();
        RecordBatch::try_new(Arc::new(self.schema()), arrays)
            .map_err(|e| Error::arrow("building a record batch from a table", e))
    }
}

fn widen(col: &ColumnBuf, to: ColumnKind) -> ColumnBuf {
    let mut out = ColumnBuf::new(to);
    for row in 0..col.len() {
        match col.scalar(row) {
            Some(x) => out.push_number(x),
            None => out.push_null(),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_are_not_nans() {
        let mut c = ColumnBuf::new(ColumnKind::F64);
        c.push_number(f64::NAN);
        c.push_null();
        c.push_number(1.5);
        assert!(c.scalar(0).unwrap().is_nan());
        assert_eq!(c.scalar(1), None);
        let a = c.to_arrow();
        assert_eq!(a.null_count(), 1);
        let mut back = ColumnBuf::new(ColumnKind::F64);
        back.append_arrow(a.as_ref()).unwrap();
        assert!(back.scalar(0).unwrap().is_nan());
        assert_eq!(back.scalar(1), None);
        assert_eq!(back.scalar(2), Some(1.5));
    }

    #[test]
    fn lists_roundtrip_through_arrow_with_nulls_and_truncate() {
        let mut c = ColumnBuf::new(ColumnKind::ListF64);
        c.push_list(&[1.0, 2.0]);
        c.push_null();
        c.push_list(&[]);
        c.push_list(&[9.0]);
        c.truncate(3);
        c.push_list(&[3.0, f64::INFINITY]);
        let mut back = ColumnBuf::new(ColumnKind::ListF64);
        back.append_arrow(c.to_arrow().as_ref()).unwrap();
        assert_eq!(back.list(0), Some(&[1.0, 2.0][..]));
        assert_eq!(back.list(1), None);
        assert_eq!(back.list(2), Some(&[][..]));
        assert_eq!(back.list(3), Some(&[3.0, f64::INFINITY][..]));
    }

    #[test]
    fn union_of_batches_pads_and_widens() {
        let mut a = Table::default();
        a.column_mut("step", ColumnKind::I64)
            .unwrap()
            .push_number(1.0);
        a.column_mut("x", ColumnKind::I64).unwrap().push_number(2.0);
        a.finish_rows(1);
        let mut b = Table::default();
        b.column_mut("step", ColumnKind::I64)
            .unwrap()
            .push_number(2.0);
        b.column_mut("x", ColumnKind::F64).unwrap().push_number(2.5);
        b.column_mut("y", ColumnKind::F64).unwrap().push_number(7.0);
        b.finish_rows(1);
        let mut u = Table::default();
        u.append_batch(&a.to_record_batch().unwrap()).unwrap();
        u.append_batch(&b.to_record_batch().unwrap()).unwrap();
        assert_eq!(u.rows, 2);
        assert_eq!(u.column("x").unwrap().kind(), ColumnKind::F64);
        assert_eq!(u.column("x").unwrap().scalar(0), Some(2.0));
        assert_eq!(u.column("x").unwrap().scalar(1), Some(2.5));
        assert_eq!(u.column("y").unwrap().scalar(0), None);
        assert_eq!(u.column("y").unwrap().scalar(1), Some(7.0));
    }

    #[test]
    fn tables_appended_in_order_equal_their_batches_appended() {
        let part = |rows: std::ops::Range<usize>, x_kind: ColumnKind, list: bool| {
            let mut t = Table::default();
            for (i, r) in rows.enumerate() {
                t.column_mut("step", ColumnKind::I64)
                    .unwrap()
                    .push_number(r as f64);
                if r % 3 != 0 {
                    let c = t.column_mut("x", x_kind).unwrap();
                    c.pad_to(i);
                    c.push_number(r as f64 + 0.5 * (x_kind == ColumnKind::F64) as u8 as f64);
                }
                if list {
                    let c = t.column_mut("l", ColumnKind::ListF64).unwrap();
                    c.pad_to(i);
                    c.push_list(&vec![r as f64; r % 3]);
                }
                t.finish_rows(i + 1);
            }
            t
        };
        let pieces = [
            part(0..4, ColumnKind::I64, false),
            part(4..9, ColumnKind::I64, true),
            part(9..12, ColumnKind::F64, true),
            part(12..13, ColumnKind::I64, false),
        ];
        let mut by_batch = Table::default();
        for p in &pieces {
            by_batch
                .append_batch(&p.to_record_batch().unwrap())
                .unwrap();
        }
        let mut pieces = pieces.into_iter();
        let mut by_table = pieces.next().unwrap();
        for p in pieces {
            by_table.append_table(p).unwrap();
        }
        assert_eq!(by_table.rows, 13);
        assert_eq!(by_table.names, by_batch.names);
        assert_eq!(by_table.column("x").unwrap().kind(), ColumnKind::F64);
        for (name, col) in by_batch.names.iter().zip(&by_batch.columns) {
            let got = by_table.column(name).unwrap();
            for r in 0..13 {
                assert_eq!(
                    got.scalar(r).map(f64::to_bits),
                    col.scalar(r).map(f64::to_bits),
                    "{name} row {r}"
                );
                assert_eq!(got.list(r), col.list(r), "{name} row {r}");
            }
        }
    }

    #[test]
    fn arrays_appended_whole_keep_their_nulls_as_push_null_writes_them() {
        let mut ints = ColumnBuf::new(ColumnKind::I64);
        ints.push_number(9.0);
        ints.append_arrow(&Int64Array::from(vec![Some(1), None, Some(i64::MAX)]))
            .unwrap();
        ints.append_arrow(&Int64Array::from(vec![4, 5])).unwrap();
        assert_eq!(
            ints.values,
            ColumnValues::I64(vec![9, 1, 0, i64::MAX, 4, 5])
        );
        assert_eq!(ints.valid.to_vec(), [true, true, false, true, true, true]);
        let mut floats = ColumnBuf::new(ColumnKind::F64);
        floats
            .append_arrow(&Float64Array::from(vec![None, Some(f64::NAN), Some(2.5)]))
            .unwrap();
        // ints into a float column: cast
        floats
            .append_arrow(&Int64Array::from(vec![Some(3), None]))
            .unwrap();
        let ColumnValues::F64(v) = &floats.values else {
            panic!()
        };
        assert!(v[0].is_nan() && v[1].is_nan() && v[4].is_nan());
        assert_eq!((v[2], v[3]), (2.5, 3.0));
        assert_eq!(floats.valid.to_vec(), [false, true, true, true, false]);
        assert_eq!((floats.scalar(0), floats.scalar(4)), (None, None));
        assert!(
            floats.scalar(1).unwrap().is_nan(),
            "a NaN value is not a null"
        );
    }

    #[test]
    fn null_typed_columns_are_skipped_unless_known() {
        use arrow::array::NullArray;
        let schema = Arc::new(Schema::new(vec![
            Field::new("step", DataType::Int64, true),
            Field::new("reward_mean", DataType::Null, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(NullArray::new(2)),
            ],
        )
        .unwrap();
        let mut t = Table::default();
        t.append_batch(&batch).unwrap();
        assert_eq!(t.names, vec!["step"]);
    }
}

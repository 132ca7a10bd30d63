//! Sample tables from any writer, unified: ours, the Python package's (which writes an
//! Arrow `null` column for a field never set), or an older or newer rlprobe.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use super::batch::SAMPLE_COLUMNS;
use crate::error::{Error, Result};

fn is_number(dt: &DataType) -> bool {
    dt.is_integer() || dt.is_floating()
}

/// The type two files' same-named columns unify to, if they do.
fn unify(a: &DataType, b: &DataType) -> Option<DataType> {
    match (a, b) {
        _ if a == b => Some(a.clone()),
        (DataType::Null, x) | (x, DataType::Null) => Some(x.clone()),
        _ if a.is_integer() && b.is_integer() => Some(DataType::Int64),
        _ if is_number(a) && is_number(b) => Some(DataType::Float64),
        (DataType::Utf8 | DataType::LargeUtf8, DataType::Utf8 | DataType::LargeUtf8) => {
            Some(DataType::Utf8)
        }
        _ => None,
    }
}

/// The union of sample schemas, fixed columns first in the format's order, then the rest by
/// name. A fixed column never seen with a type gets its format type; an unknown column
/// whose types disagree across files is an error.
pub fn union_sample_schema(schemas: &[SchemaRef]) -> Result<SchemaRef> {
    let mut types: HashMap<String, DataType> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for s in schemas {
        for f in s.fields() {
            match types.get(f.name()) {
                None => {
                    types.insert(f.name().clone(), f.data_type().clone());
                    order.push(f.name().clone());
                }
                Some(have) => {
                    let t = unify(have, f.data_type()).ok_or_else(|| Error::SchemaConflict {
                        column: f.name().clone(),
                        detail: format!(
                            "of the samples is {have} in one file and {} in another",
                            f.data_type()
                        ),
                        path: None,
                        source: None,
                    })?;
                    types.insert(f.name().clone(), t);
                }
            }
        }
    }
    let mut fields = Vec::new();
    for &(name, ty) in SAMPLE_COLUMNS {
        let t = match types.remove(name) {
            Some(DataType::Null) | None => ty.data_type(),
            Some(t) => t,
        };
        fields.push(Field::new(name, t, true));
    }
    let mut rest: Vec<String> = order
        .into_iter()
        .filter(|n| types.contains_key(n))
        .collect();
    rest.sort();
    for name in rest {
        let t = match types.remove(&name).unwrap() {
            // a dict column seen only as null: float, as every dict column is
            DataType::Null => DataType::Float64,
            t => t,
        };
        fields.push(Field::new(name, t, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

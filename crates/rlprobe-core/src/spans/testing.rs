//! Span fixtures shared by this module's tests.

use super::wire::{SpanRow, SpanStatus};

/// A finished span with plausible times; `root_id` is the parent's when it has one.
pub fn span(id: &str, parent: Option<&str>, kind: &str, step: i64) -> SpanRow {
    SpanRow {
        span_id: id.into(),
        parent_id: parent.map(Into::into),
        root_id: parent.unwrap_or(id).into(),
        kind: kind.into(),
        name: format!("{kind} {id}"),
        key: None,
        step: Some(step),
        start_time: 1_700_000_000.0 + step as f64,
        end_time: Some(1_700_000_000.5 + step as f64),
        status: SpanStatus::Ok,
        error: None,
        sample_id: None,
        group_id: None,
        labels: None,
        attributes: None,
        rank: 0,
    }
}

//! What a diagnosis reads: one value per logged point for each column, the step of each
//! point, optional per-sample columns, and the printing resolution of imported columns.

use std::collections::BTreeMap;

/// One step column. `values` holds NaN where the point is missing *or* non-finite, so the
/// series math can skip it; `nonfinite` keeps the points that were logged as NaN or ±Inf,
/// because a NaN loss is a finding and a missing loss is not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Column {
    pub values: Vec<f64>,
    pub nonfinite: Vec<usize>,
}

impl Column {
    /// From raw values and an optional validity mask (false = missing).
    pub fn from_raw(raw: Vec<f64>, valid: Option<&[bool]>) -> Column {
        let mut values = raw;
        let mut nonfinite = Vec::new();
        for (i, v) in values.iter_mut().enumerate() {
            if valid.is_some_and(|m| !m.get(i).copied().unwrap_or(false)) {
                *v = f64::NAN;
            } else if !v.is_finite() {
                nonfinite.push(i);
                *v = f64::NAN;
            }
        }
        Column { values, nonfinite }
    }

    pub fn present(&self) -> usize {
        self.values.iter().filter(|v| !v.is_nan()).count()
    }
}

/// Sample ids packed in one buffer. A `String` each cost 24 bytes and an allocation, more
/// than the id itself: at the 2,000,000 (up to twice that between trims) samples a
/// diagnosis holds, 450 MB of a 1M-step run's peak instead of about 100.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleIds {
    text: String,
    /// Where each id ends in `text`.
    ends: Vec<usize>,
}

impl SampleIds {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.text[start..end])
    }

    pub fn first(&self) -> Option<&str> {
        self.get(0)
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| &self[i])
    }

    /// Drops the first `n` ids.
    pub fn drop_first(&mut self, n: usize) {
        let n = n.min(self.len());
        if n == 0 {
            return;
        }
        let cut = self.ends[n - 1];
        self.text.drain(..cut);
        self.ends.drain(..n);
        for e in &mut self.ends {
            *e -= cut;
        }
    }
}

impl std::ops::Index<usize> for SampleIds {
    type Output = str;

    fn index(&self, i: usize) -> &str {
        self.get(i)
            .unwrap_or_else(|| panic!("sample id {i} of {}", self.len()))
    }
}

impl<'a> FromIterator<&'a str> for SampleIds {
    fn from_iter<I: IntoIterator<Item = &'a str>>(ids: I) -> SampleIds {
        let mut out = SampleIds::default();
        for id in ids {
            out.push(id);
        }
        out
    }
}

/// Per-sample records (rank 0's), for evidence and per-sample statistics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    pub step: Vec<i64>,
    pub sample_id: SampleIds,
    /// NaN where absent.
    pub reward: Vec<f64>,
    /// NaN where absent.
    pub completion_len: Vec<f64>,
    pub truncated: Vec<Option<bool>>,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.step.len()
    }
    pub fn is_empty(&self) -> bool {
        self.step.is_empty()
    }
    /// Drops all but the last `n` samples.
    pub fn keep_last(&mut self, n: usize) {
        let cut = self.len().saturating_sub(n);
        if cut > 0 {
            self.step.drain(..cut);
            self.sample_id.drop_first(cut);
            self.reward.drain(..cut);
            self.completion_len.drain(..cut);
            self.truncated.drain(..cut);
        }
    }

    pub fn push(&mut self, step: i64, id: &str, reward: f64, len: f64, truncated: Option<bool>) {
        self.step.push(step);
        self.sample_id.push(id);
        self.reward.push(reward);
        self.completion_len.push(len);
        self.truncated.push(truncated);
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInput {
    /// The step of each logged point, ascending.
    pub steps: Vec<i64>,
    pub columns: BTreeMap<String, Column>,
    /// Absolute printing resolution of columns imported from rounded logs (verl's console
    /// prints 3 decimals): differences and zeros below it are not evidence.
    pub resolution: BTreeMap<String, f64>,
    pub samples: Option<Samples>,
    /// `kl_mean` is a per-token KL (the format's meaning). Imports of sequence-level KL
    /// turn this off, which disables the absolute KL gate.
    pub kl_per_token: bool,
}

impl RunInput {
    pub fn new(steps: Vec<i64>) -> RunInput {
        RunInput {
            steps,
            kl_per_token: true,
            ..Default::default()
        }
    }

    /// Adds a column from raw values (NaN/±Inf logged values are kept as non-finite).
    pub fn with(mut self, name: &str, values: Vec<f64>) -> RunInput {
        self.insert(name, Column::from_raw(values, None));
        self
    }

    pub fn insert(&mut self, name: &str, mut column: Column) {
        column.values.resize(self.steps.len(), f64::NAN);
        column.nonfinite.retain(|&i| i < self.steps.len());
        self.columns.insert(name.to_string(), column);
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.get(name)
    }

    /// The column's values if it has any present point.
    pub fn series(&self, name: &str) -> Option<&[f64]> {
        self.columns
            .get(name)
            .filter(|c| c.values.iter().any(|v| !v.is_nan()))
            .map(|c| c.values.as_slice())
    }

    pub fn resolution(&self, name: &str) -> f64 {
        self.resolution.get(name).copied().unwrap_or(0.0)
    }

    /// Columns whose name starts with `prefix`, in name order.
    pub fn with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Column)> + 'a {
        self.columns
            .range(prefix.to_string()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, c)| (k.as_str(), c))
    }

    /// The first points `0..n` as a run of their own (what a live doctor had seen then).
    pub fn prefix(&self, n: usize) -> RunInput {
        let n = n.min(self.len());
        let mut out = RunInput {
            steps: self.steps[..n].to_vec(),
            resolution: self.resolution.clone(),
            kl_per_token: self.kl_per_token,
            ..Default::default()
        };
        for (name, c) in &self.columns {
            out.columns.insert(
                name.clone(),
                Column {
                    values: c.values[..n].to_vec(),
                    nonfinite: c.nonfinite.iter().copied().filter(|&i| i < n).collect(),
                },
            );
        }
        if let (Some(s), Some(&last)) = (&self.samples, out.steps.last()) {
            let mut t = Samples::default();
            for i in 0..s.len() {
                if s.step[i] <= last {
                    t.push(
                        s.step[i],
                        &s.sample_id[i],
                        s.reward[i],
                        s.completion_len[i],
                        s.truncated[i],
                    );
                }
            }
            out.samples = Some(t);
        }
        out
    }
}

#[cfg(test)]
mod sample_ids_tests {
    use super::*;

    #[test]
    fn packed_ids_read_back_as_pushed_and_drop_from_the_front() {
        let given = ["s0", "", "écrit-✓", "42", "a-much-longer-sample-id-0001"];
        let mut ids: SampleIds = given.iter().copied().collect();
        assert_eq!(ids.len(), 5);
        assert_eq!(ids.iter().collect::<Vec<_>>(), given);
        assert_eq!(&ids[2], "écrit-✓");
        assert_eq!(ids.get(5), None);
        ids.drop_first(2);
        assert_eq!(ids.iter().collect::<Vec<_>>(), &given[2..]);
        assert_eq!(ids.first(), Some("écrit-✓"));
        ids.push("new");
        assert_eq!(&ids[3], "new");
        ids.drop_first(99);
        assert!(ids.is_empty());
        assert_eq!(ids.first(), None);
    }

    #[test]
    fn samples_keep_their_ids_aligned_when_trimmed() {
        let mut s = Samples::default();
        for i in 0..10 {
            s.push(i, &format!("id{i}"), i as f64, 1.0, None);
        }
        s.keep_last(3);
        assert_eq!(s.step, vec![7, 8, 9]);
        assert_eq!(
            s.sample_id.iter().collect::<Vec<_>>(),
            ["id7", "id8", "id9"]
        );
    }
}

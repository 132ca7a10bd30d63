//! A finding: what a detector reports.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Info,
    Warn,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A per-sample record that shows the problem (e.g. the longest truncated completion).
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceSample {
    pub step: i64,
    pub sample_id: String,
    /// Why this sample was picked, e.g. "longest truncated completion".
    pub why: String,
}

/// The levels a finding states, each the median of the column's present raw values over
/// the steps given (inclusive), so anyone can re-derive them with `probe samples`/RunView.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels {
    pub column: String,
    pub start: f64,
    pub start_steps: (i64, i64),
    pub end: f64,
    pub end_steps: (i64, i64),
    /// `end / start`.
    pub ratio: f64,
}

impl Levels {
    /// "entropy_mean 0.39 (steps 5–34) → 0.023 (steps 480–489), 5.9% of its start".
    pub fn describe(&self) -> String {
        let span = |(a, b): (i64, i64)| {
            if a == b {
                format!("step {a}")
            } else {
                format!("steps {a}–{b}")
            }
        };
        // a ratio means nothing across zero (explained variance 0.6 → −0.5)
        let change = if !(self.start > 0.0 && self.end >= 0.0) {
            format!(
                "a change of {}",
                crate::detectors::num(self.end - self.start)
            )
        } else if self.ratio.is_finite() && self.ratio < 1.0 {
            format!(
                "{}% of its start",
                crate::detectors::num(100.0 * self.ratio)
            )
        } else if self.ratio.is_finite() {
            format!("{}× its start", crate::detectors::num(self.ratio))
        } else {
            "from a zero start".to_string()
        };
        format!(
            "{} {} ({}) → {} ({}), {change}",
            self.column,
            crate::detectors::num(self.start),
            span(self.start_steps),
            crate::detectors::num(self.end),
            span(self.end_steps),
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Stable signature code, e.g. ENTROPY_COLLAPSE.
    pub code: &'static str,
    pub severity: Severity,
    /// Estimated start of the problem (a step number, not a point index).
    pub onset_step: i64,
    /// The last step that still shows it.
    pub last_step: i64,
    /// The logged point of the onset (detectors index by point).
    pub onset_index: usize,
    /// 0..1
    pub confidence: f64,
    /// Evidence numbers, in the order they are worth reading.
    pub evidence: Vec<(String, f64)>,
    /// The columns the finding is about.
    pub columns: Vec<String>,
    pub message: String,
    pub remedy: String,
    /// The finding this one is a consequence of (same physics, named once).
    pub root_cause: Option<&'static str>,
    pub samples: Vec<EvidenceSample>,
    /// Start and end level of the column the finding is about, where it states them.
    pub levels: Option<Levels>,
}

impl Finding {
    pub fn new(code: &'static str, severity: Severity, message: String, remedy: &str) -> Finding {
        Finding {
            code,
            severity,
            onset_step: 0,
            last_step: 0,
            onset_index: 0,
            confidence: 0.5,
            evidence: Vec::new(),
            columns: Vec::new(),
            message,
            remedy: remedy.to_string(),
            root_cause: None,
            samples: Vec::new(),
            levels: None,
        }
    }

    /// States `levels`: after the message's first words ("entropy collapsed: entropy_mean
    /// 0.39 (steps 5–34) → …") and in the evidence.
    pub fn levels(mut self, l: Option<Levels>) -> Finding {
        if let Some(l) = l {
            self.message = if self.message.is_empty() {
                l.describe()
            } else {
                format!("{}: {}", self.message, l.describe())
            };
            self.evidence.push(("start level".into(), l.start));
            self.evidence.push(("end level".into(), l.end));
            self.evidence.push(("ratio".into(), l.ratio));
            self.levels = Some(l);
        }
        self
    }

    /// Dates the finding by point indices.
    pub fn at(mut self, steps: &[i64], onset: usize, last: usize) -> Finding {
        self.onset_index = onset;
        self.onset_step = steps.get(onset).copied().unwrap_or(0);
        self.last_step = steps
            .get(last.max(onset))
            .copied()
            .unwrap_or(self.onset_step);
        self
    }

    pub fn confidence(mut self, c: f64) -> Finding {
        self.confidence = if c.is_nan() { 0.5 } else { c.clamp(0.05, 0.99) };
        self
    }

    pub fn evidence(mut self, name: &str, value: f64) -> Finding {
        self.evidence.push((name.to_string(), value));
        self
    }

    pub fn column(mut self, name: &str) -> Finding {
        self.columns.push(name.to_string());
        self
    }
}

/// Several findings of one code from one detector as one (a detector reports a code once,
/// so live and watch deduplication can key on it): the earliest, with the others' messages,
/// columns and evidence folded in and the worst severity.
pub fn fold(mut findings: Vec<Finding>) -> Option<Finding> {
    findings.sort_by_key(|f| f.onset_index);
    let mut it = findings.into_iter();
    let mut first = it.next()?;
    for f in it {
        first.severity = first.severity.max(f.severity);
        first.message.push_str(&format!("; {}", f.message));
        first.last_step = first.last_step.max(f.last_step);
        for c in f.columns {
            if !first.columns.contains(&c) {
                first.columns.push(c);
            }
        }
        first.evidence.extend(f.evidence);
    }
    Some(first)
}

/// Most severe first, then most confident, then earliest.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.confidence.total_cmp(&a.confidence))
            .then(a.onset_step.cmp(&b.onset_step))
    });
}

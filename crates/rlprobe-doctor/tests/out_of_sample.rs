//! The doctor's bar on runs nobody tuned it for (issue 19): `holdout` generates them apart
//! from `synth` (whose seeds 0–39 the thresholds were tuned on), from seeds 7000 on. The
//! bar is what a demanding user would accept, not what the detectors happen to reach:
//! - recall ≥ 90 % for every signature and issue pattern, median onset error ≤ 10 points;
//! - severity that follows the true ratio in ≥ 90 % of the runs that state one, and no
//!   forbidden root cause;
//! - no critical finding on a healthy run, a warning on ≤ 2 % of each healthy set;
//! - every stated number (start, end, ratio) within 5 % of the series at the stated steps,
//!   every level-type finding stating its levels, and no start level taken from a window
//!   that straddles the true change.
//!
//! `cargo test -p rlprobe-doctor --test out_of_sample -- --nocapture` prints the table, and
//! docs/doctor.md must carry it as printed. Seeds 7000+ were looked at while the detectors
//! were fixed for issue 19, so they are a development set now; the figures on seeds no one
//! had looked at (50000+, one look after the fixes) are published in docs/doctor.md and
//! deliberately not asserted here: a gate on them would make them the next tuning target.

use rlprobe_doctor::evaluation::evaluate_holdout;

const FIRST_SEED: u64 = 7000;
const RUNS_PER_CASE: u64 = 30;
const HEALTHY_RUNS: u64 = 200;

const MIN_RECALL: f64 = 0.90;
const MAX_MEDIAN_ONSET_ERROR: f64 = 10.0;
const MIN_SEVERITY_RIGHT: f64 = 0.90;
const MAX_WARN_RATE: f64 = 0.02;

#[test]
fn doctor_meets_the_bar_out_of_sample() {
    let started = std::time::Instant::now();
    let e = evaluate_holdout(FIRST_SEED, RUNS_PER_CASE, HEALTHY_RUNS);
    eprintln!("{}", e.markdown());
    eprintln!("({:.1} s)", started.elapsed().as_secs_f64());
    let mut failures = bar_failures(&e);
    // the published table is this run's, not an older one
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/doctor.md"))
            .expect("docs/doctor.md");
    if !docs.contains(&e.markdown()) {
        failures.push(
            "docs/doctor.md does not carry this table: regenerate it with `cargo run --release -p rlprobe-doctor --example evaluate -- --holdout`".into(),
        );
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn bar_failures(e: &rlprobe_doctor::evaluation::HoldoutEvaluation) -> Vec<String> {
    let mut failures = Vec::new();
    for r in &e.rows {
        let name = format!("{} ({})", r.code, r.variant);
        if r.recall() < MIN_RECALL {
            failures.push(format!("{name}: recall {:.0} %", 100.0 * r.recall()));
        }
        // nothing detected (a NaN median) fails too
        let onset = r.median_onset_error();
        if onset.is_nan() || onset > MAX_MEDIAN_ONSET_ERROR {
            failures.push(format!(
                "{name}: median onset error {} points",
                r.median_onset_error()
            ));
        }
        if r.severity_checked > 0
            && ((r.severity_checked - r.severity_wrong) as f64)
                < MIN_SEVERITY_RIGHT * r.severity_checked as f64
        {
            failures.push(format!(
                "{name}: wrong severity in {} of {} runs",
                r.severity_wrong, r.severity_checked
            ));
        }
        if r.wrong_root > 0 {
            failures.push(format!(
                "{name}: forbidden root cause named in {} of {} runs",
                r.wrong_root, r.root_checked
            ));
        }
        if r.levels_missing > 0 {
            failures.push(format!(
                "{name}: {} of {} findings state no levels",
                r.levels_missing, r.detected
            ));
        }
        if r.start_off > 0 {
            failures.push(format!(
                "{name}: start level taken across the change in {} of {} runs",
                r.start_off, r.start_checked
            ));
        }
    }
    for a in &e.alarms {
        if a.runs_with_critical > 0 {
            failures.push(format!(
                "{}: {} of {} runs with a critical finding: {:?}",
                a.name, a.runs_with_critical, a.runs, a.codes
            ));
        }
        if a.warn_rate() > MAX_WARN_RATE {
            failures.push(format!(
                "{}: a warning on {:.1} % of {} runs: {:?}",
                a.name,
                100.0 * a.warn_rate(),
                a.runs,
                a.codes
            ));
        }
    }
    if e.numbers.mismatched > 0 {
        failures.push(format!(
            "{} of {} stated levels do not match the series: {:?}",
            e.numbers.mismatched, e.numbers.stated, e.numbers.examples
        ));
    }
    if e.numbers.missing_total() > 0 {
        failures.push(format!(
            "{} level-type findings state no levels: {:?}",
            e.numbers.missing_total(),
            e.numbers.missing
        ));
    }
    failures
}

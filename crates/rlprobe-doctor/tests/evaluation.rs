//! The doctor's acceptance bar on labelled synthetic runs (issue 4): recall ≥ 95 % per
//! signature, no critical finding on any healthy run, ≤ 2 % of healthy runs with a warning,
//! median onset error ≤ 10 points.

use rlprobe_doctor::evaluation::evaluate;

#[test]
fn doctor_meets_its_evaluation_bar() {
    let e = evaluate(0, 20, 100);
    let mut failures = Vec::new();
    for s in &e.signatures {
        if s.recall() < 0.95 {
            failures.push(format!(
                "{} ({}): recall {:.0} %",
                s.code,
                s.variant,
                100.0 * s.recall()
            ));
        }
    }
    if e.healthy.runs_with_critical > 0 {
        failures.push(format!(
            "{} healthy runs with a critical finding: {:?}",
            e.healthy.runs_with_critical, e.healthy.codes
        ));
    }
    if e.warn_fp_rate() > 0.02 {
        failures.push(format!(
            "warn false positives on {:.1} % of healthy runs: {:?}",
            100.0 * e.warn_fp_rate(),
            e.healthy.codes
        ));
    }
    if e.median_onset_error() > 10.0 {
        failures.push(format!(
            "median onset error {} points",
            e.median_onset_error()
        ));
    }
    for s in &e.signatures {
        eprintln!(
            "{:28} {:22} recall {:5.1} %  onset error median {}",
            s.code,
            s.variant,
            100.0 * s.recall(),
            s.median_onset_error()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! Prints the doctor's evaluation tables (docs/doctor.md):
//! - `cargo run --release -p rlprobe-doctor --example evaluate [seeds] [healthy] [first seed]`:
//!   the tuned set (`synth`, seeds 0–39 are the ones the thresholds were tuned on);
//! - `… --example evaluate -- --holdout [seeds] [healthy] [first seed]`: the out-of-sample
//!   set (`holdout`, first seed 7000 by default, as tests/out_of_sample.rs).

use rlprobe_doctor::evaluation::{evaluate, evaluate_holdout};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let holdout = args.first().is_some_and(|a| a == "--holdout");
    if holdout {
        args.remove(0);
    }
    let mut nums = args.iter().map(|a| {
        a.parse::<u64>()
            .unwrap_or_else(|_| panic!("expected a number (seeds, healthy, first seed), got {a:?}"))
    });
    if holdout {
        let seeds = nums.next().unwrap_or(30);
        let healthy = nums.next().unwrap_or(200);
        let first = nums.next().unwrap_or(7000);
        let e = evaluate_holdout(first, seeds, healthy);
        println!(
            "Out of sample: seeds {first}–{} ({seeds} runs per case and per negative, {healthy} healthy runs)\n",
            first + seeds.max(healthy) - 1
        );
        print!("{}", e.markdown());
        return;
    }
    let seeds = nums.next().unwrap_or(40);
    let healthy = nums.next().unwrap_or(200);
    let first = nums.next().unwrap_or(0);
    let e = evaluate(first, seeds, healthy);
    println!("| signature | injected as | runs | recall | median onset error (points) |");
    println!("|---|---|---:|---:|---:|");
    for s in &e.signatures {
        println!(
            "| {} | {} | {} | {:.1} % | {} |",
            s.code,
            s.variant,
            s.runs,
            100.0 * s.recall(),
            s.median_onset_error()
        );
    }
    println!();
    println!(
        "overall recall {:.1} %, median onset error {} points",
        100.0 * e.overall_recall(),
        e.median_onset_error()
    );
    println!(
        "healthy runs: {}; with a critical finding: {}; with a warn finding: {} ({:.1} %); warn codes: {:?}",
        e.healthy.runs,
        e.healthy.runs_with_critical,
        e.healthy.runs_with_warn,
        100.0 * e.warn_fp_rate(),
        e.healthy.codes
    );
}

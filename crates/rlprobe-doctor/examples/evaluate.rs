//! Prints the doctor's evaluation table (docs/doctor.md):
//! `cargo run --release -p rlprobe-doctor --example evaluate [seeds] [healthy] [first seed]`.

use rlprobe_doctor::evaluation::evaluate;

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let seeds = args.next().unwrap_or(40);
    let healthy = args.next().unwrap_or(200);
    let first = args.next().unwrap_or(0);
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

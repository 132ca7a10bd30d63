//! Which Parquet encoding and compression for the steps table? Writes the same realistic
//! 100,000-step table (crates/rlprobe-core/src/synth.rs: 37 metrics, 3 components,
//! 3 extras, kl_positional) with each candidate and prints size and time.
//!
//!   cargo bench --bench compression            (release build)
//!   ROWS=1000000 cargo bench --bench compression

use std::time::Instant;

use rlprobe_core::parquet_io::write_table;
use rlprobe_core::props::Codec;
use rlprobe_core::synth::SynthRun;

fn main() {
    let rows: u64 = std::env::var("ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let table = SynthRun::new(42, rows).table();
    println!("steps table: {rows} rows x {} columns", table.names.len());
    println!(
        "{:<44} {:>10} {:>10} {:>10}",
        "candidate", "MB", "write ms", "B/row"
    );
    let mut candidates = Vec::new();
    for level in [1, 3, 6, 9] {
        for dictionary in [true, false] {
            for byte_stream_split in [false, true] {
                candidates.push(Codec {
                    zstd_level: level,
                    dictionary,
                    byte_stream_split,
                });
            }
        }
    }
    let shipped = Codec::default();
    for codec in candidates {
        let mut best = f64::MAX;
        let mut size = 0;
        for _ in 0..3 {
            let t = Instant::now();
            let bytes = write_table(
                Vec::new(),
                std::path::Path::new("(in memory)"),
                &table,
                codec,
                Vec::new(),
            )
            .expect("write");
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
            size = bytes.len();
        }
        let label = format!(
            "zstd({}) dict={} bss={}{}",
            codec.zstd_level,
            codec.dictionary,
            codec.byte_stream_split,
            if codec == shipped { "  <- shipped" } else { "" }
        );
        println!(
            "{label:<44} {:>10.2} {:>10.1} {:>10.1}",
            size as f64 / 1e6,
            best,
            size as f64 / rows as f64
        );
    }
}

//! What the block checksums (crates/rlprobe-core/src/checksums.rs) cost: the same
//! realistic 100,000-step table (synth.rs) written as before them (our properties with the
//! page offset index, no checksums) and as now (no offset index, a CRC32 per 64 KiB block and
//! of the footer), then read whole and one column at a time into Arrow batches, unchecked
//! (an ArrowReader over the file) and checked (ParquetFile: the footer cached after the
//! first read, every block read verified). Prints size and times (best of 5).
//!
//!   cargo bench --bench checksums            (release build)
//!   ROWS=1000000 cargo bench --bench checksums

use std::fs::File;
use std::time::Instant;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use rlprobe_core::parquet_io::{arrow_writer, ParquetFile};
use rlprobe_core::props::{writer_properties, Codec};
use rlprobe_core::synth::SynthRun;

fn best_ms(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::MAX, f64::min)
}

fn read_unchecked(path: &std::path::Path, column: Option<&str>) -> usize {
    let mut b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .with_batch_size(65_536);
    if let Some(c) = column {
        let i = b.schema().index_of(c).unwrap();
        let mask = ProjectionMask::roots(b.parquet_schema(), [i]);
        b = b.with_projection(mask);
    }
    b.build().unwrap().map(|r| r.unwrap().num_rows()).sum()
}

fn read_checked(path: &std::path::Path, column: Option<&str>) -> usize {
    let f = ParquetFile::open(path).unwrap();
    let mut b = f.reader(65_536).unwrap();
    if let Some(c) = column {
        let i = b.schema().index_of(c).unwrap();
        let mask = ProjectionMask::roots(b.parquet_schema(), [i]);
        b = b.with_projection(mask);
    }
    b.build().unwrap().map(|r| r.unwrap().num_rows()).sum()
}

fn main() {
    let rows: u64 = std::env::var("ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let table = SynthRun::new(42, rows).table();
    let dir = std::env::temp_dir().join(format!("rlprobe-bench-checksums-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let before = dir.join("before.parquet");
    let now = dir.join("now.parquet");
    let batch = table.to_record_batch().unwrap();
    let write_before = best_ms(|| {
        let props = writer_properties(batch.schema().as_ref(), Codec::default(), Vec::new())
            .unwrap()
            .into_builder()
            .set_offset_index_disabled(false)
            .build();
        let mut w =
            ArrowWriter::try_new(File::create(&before).unwrap(), batch.schema(), Some(props))
                .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    });
    let write_now = best_ms(|| {
        let mut w = arrow_writer(
            File::create(&now).unwrap(),
            &now,
            batch.schema(),
            Codec::default(),
            Vec::new(),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.into_inner().unwrap();
    });
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len() as f64 / 1e6;
    println!("steps table: {rows} rows x {} columns", table.names.len());
    println!("{:<40} {:>10} {:>10}", "", "before", "now");
    println!(
        "{:<40} {:>10.3} {:>10.3}",
        "file MB",
        size(&before),
        size(&now)
    );
    println!(
        "{:<40} {:>10.1} {:>10.1}",
        "write ms", write_before, write_now
    );
    for column in [None, Some("loss")] {
        let label = column.map_or("read all columns ms".to_string(), |c| {
            format!("read `{c}` alone ms")
        });
        let unchecked = best_ms(|| assert_eq!(read_unchecked(&before, column), rows as usize));
        let checked = best_ms(|| assert_eq!(read_checked(&now, column), rows as usize));
        println!("{label:<40} {unchecked:>10.1} {checked:>10.1}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

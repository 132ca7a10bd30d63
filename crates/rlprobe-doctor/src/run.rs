//! A run directory as the doctor's input: its step table, each step once at its last write,
//! and rank 0's samples (the most recent, up to a cap), then the diagnosis over them. The
//! binding only translates options and results (src/doctor.rs).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use rlprobe_core::samples::cursor::{SampleCursor, SampleFilter};
use rlprobe_core::table::{ColumnValues, Table};

use crate::engine::{diagnose, Diagnosis};
use crate::input::{Column, RunInput, Samples};
use crate::live::sort_samples;

/// Samples read for evidence at most (the most recent are kept): the doctor needs reward
/// and length per sample, and a bound keeps memory flat on very long runs (8 samples a
/// step × 250,000 steps).
pub const MAX_SAMPLES: usize = 2_000_000;

/// How to read and diagnose a run.
#[derive(Debug, Clone)]
pub struct DiagnoseOptions {
    /// Keep findings whose onset is at or after this step.
    pub since: Option<i64>,
    /// Printing resolution of imported columns (manifest `extra.source.resolution`).
    pub resolution: BTreeMap<String, f64>,
    /// False for imports whose `kl_mean` is a sequence-level KL.
    pub kl_per_token: bool,
    /// Read per-sample records for evidence.
    pub samples: bool,
    /// Stored column name → current name, for recordings read through a migration.
    pub renames: HashMap<String, String>,
    /// Samples kept at most (the most recent).
    pub max_samples: usize,
}

impl Default for DiagnoseOptions {
    fn default() -> Self {
        DiagnoseOptions {
            since: None,
            resolution: BTreeMap::new(),
            kl_per_token: true,
            samples: true,
            renames: HashMap::new(),
            max_samples: MAX_SAMPLES,
        }
    }
}

/// A run's diagnosis, with what it was made from.
#[derive(Debug, Clone)]
pub struct RunDiagnosis {
    pub diagnosis: Diagnosis,
    /// Samples the diagnosis had as evidence.
    pub samples: usize,
    /// Why the samples could not be read (a damaged file, named), when they could not: the
    /// diagnosis then has no sample evidence, and says so.
    pub samples_error: Option<String>,
}

/// Diagnoses the run in `dir` (rank 0's steps and samples). Unreadable steps fail it; an
/// unreadable sample file only costs the sample evidence (`samples_error`).
pub fn diagnose_run(dir: &Path, o: &DiagnoseOptions) -> rlprobe_core::Result<RunDiagnosis> {
    // samples decode on another core while the steps are read (they cost about as much)
    let (table, samples) = std::thread::scope(|scope| {
        let samples = o
            .samples
            .then(|| scope.spawn(|| read_samples(dir, o.max_samples)));
        let table = rlprobe_core::read_steps(dir, None);
        let samples = samples.map(|h| {
            h.join().map_err(|p| {
                format!(
                    "reading the samples panicked: {}",
                    rlprobe_core::writer::panic_message(&p)
                )
            })
        });
        (table, samples)
    });
    let mut table = table?;
    for name in table.names.iter_mut() {
        if let Some(current) = o.renames.get(name.as_str()) {
            *name = current.clone();
        }
    }
    let mut run = run_input(table);
    run.resolution = o.resolution.clone();
    run.kl_per_token = o.kl_per_token;
    // samples are evidence, not the diagnosis: an unreadable sample file degrades to none,
    // and the diagnosis says which file and why
    let mut samples_error = None;
    match samples {
        Some(Ok(Ok(mut s))) => {
            sort_samples(&mut s);
            run.samples = Some(s);
        }
        Some(Ok(Err(e))) => samples_error = Some(e.report()),
        Some(Err(panicked)) => samples_error = Some(panicked),
        None => {}
    }
    let samples = run.samples.as_ref().map_or(0, Samples::len);
    Ok(RunDiagnosis {
        diagnosis: diagnose(&run, o.since),
        samples,
        samples_error,
    })
}

/// Columns that are bookkeeping, not metrics.
fn is_metric(name: &str) -> bool {
    !matches!(name, "step" | "timestamp" | "rank")
}

/// A scalar column as f64 values, taken over (None for list columns).
fn scalars(values: ColumnValues) -> Option<Vec<f64>> {
    match values {
        ColumnValues::F64(v) => Some(v),
        ColumnValues::I64(v) => Some(v.into_iter().map(|x| x as f64).collect()),
        ColumnValues::ListF64 { .. } => None,
    }
}

/// A step table as the doctor's input: rows ordered by step, a re-logged step kept once
/// (its last write), so no detector sees a step twice. List columns are not series. The
/// table is consumed column by column: at 1,000,000 steps a copy of it would double the
/// diagnosis's peak memory, and rows already in order (the usual case) are not moved.
pub fn run_input(table: Table) -> RunInput {
    let Some(step_col) = table.column("step") else {
        return RunInput::new(Vec::new());
    };
    let steps: Vec<i64> = match &step_col.values {
        ColumnValues::I64(v) => v.clone(),
        ColumnValues::F64(v) => v.iter().map(|x| *x as i64).collect(),
        ColumnValues::ListF64 { .. } => Vec::new(),
    };
    let mut order: Vec<usize> = (0..steps.len()).collect();
    // steps logged in ascending order, each once (the usual case): nothing to sort
    if !steps.windows(2).all(|w| w[0] < w[1]) {
        order.sort_by_key(|&i| (steps[i], i));
    }
    order.dedup_by(|later, earlier| {
        // dedup_by keeps the first of a run; make it the last write instead
        if steps[*later] == steps[*earlier] {
            *earlier = *later;
            true
        } else {
            false
        }
    });
    let in_order = order.len() == steps.len() && order.iter().enumerate().all(|(k, &i)| k == i);
    let mut run = RunInput::new(order.iter().map(|&i| steps[i]).collect());
    for (name, col) in table.names.into_iter().zip(table.columns) {
        if !is_metric(&name) {
            continue;
        }
        let valid = col.valid;
        let Some(values) = scalars(col.values) else {
            continue;
        };
        let column = if in_order && values.len() == order.len() && valid.len() == order.len() {
            Column::from_raw(values, valid.flags())
        } else {
            let raw: Vec<f64> = order
                .iter()
                .map(|&i| values.get(i).copied().unwrap_or(f64::NAN))
                .collect();
            let valid: Vec<bool> = order
                .iter()
                .map(|&i| i < valid.len() && valid.get(i))
                .collect();
            Column::from_raw(raw, Some(&valid))
        };
        run.insert(&name, column);
    }
    run
}

/// A column of `b` as f64 (NaN where null or absent).
fn f64s(b: &RecordBatch, name: &str) -> Vec<f64> {
    match b
        .column_by_name(name)
        .and_then(|a| arrow::compute::cast(a, &DataType::Float64).ok())
    {
        Some(a) => {
            let a = a.as_primitive::<Float64Type>();
            (0..a.len())
                .map(|i| if a.is_null(i) { f64::NAN } else { a.value(i) })
                .collect()
        }
        None => vec![f64::NAN; b.num_rows()],
    }
}

/// Rank 0's samples (step, id, reward, length, truncation): the most recent `max`. Rows
/// without a step are not evidence of any step and are left out.
pub fn read_samples(dir: &Path, max: usize) -> rlprobe_core::Result<Samples> {
    let cols = [
        "step",
        "sample_id",
        "reward_total",
        "completion_len",
        "truncated",
    ]
    .map(String::from)
    .to_vec();
    let mut cursor = SampleCursor::open(dir, SampleFilter::default(), Some(cols), 16_384)?;
    let mut out = Samples::default();
    while let Some(b) = cursor.next_batch()? {
        let step = b
            .column_by_name("step")
            .and_then(|a| arrow::compute::cast(a, &DataType::Int64).ok());
        let Some(step) = step else { continue };
        let step = step.as_primitive::<Int64Type>();
        let ids = b
            .column_by_name("sample_id")
            .and_then(|a| arrow::compute::cast(a, &DataType::Utf8).ok());
        let truncated = b
            .column_by_name("truncated")
            .and_then(|a| arrow::compute::cast(a, &DataType::Boolean).ok());
        let (reward, len) = (f64s(&b, "reward_total"), f64s(&b, "completion_len"));
        // trimmed in steps of `max`, so the cost stays linear
        if out.len() >= 2 * max {
            out.keep_last(max);
        }
        for i in 0..b.num_rows() {
            if step.is_null(i) {
                continue;
            }
            let id = ids
                .as_ref()
                .map(|a| a.as_string::<i32>())
                .filter(|a| !a.is_null(i))
                .map_or("", |a| a.value(i));
            let t = truncated
                .as_ref()
                .map(|a| a.as_boolean())
                .filter(|a| !a.is_null(i))
                .map(|a| a.value(i));
            out.push(step.value(i), id, reward[i], len[i], t);
        }
    }
    out.keep_last(max);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlprobe_core::schema::ColumnKind;
    use std::path::PathBuf;

    fn tempdir(tag: &str) -> PathBuf {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!(
            "rlprobe-doctor-run-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A table of (step, loss) rows in the order given; `None` leaves the loss unset.
    fn table(rows: &[(i64, Option<f64>)]) -> Table {
        let mut t = Table::default();
        for (r, (step, loss)) in rows.iter().enumerate() {
            t.column_mut("step", ColumnKind::I64)
                .unwrap()
                .push_number(*step as f64);
            t.column_mut("timestamp", ColumnKind::F64)
                .unwrap()
                .push_number(1e9 + r as f64);
            let c = t.column_mut("loss", ColumnKind::F64).unwrap();
            c.pad_to(r);
            if let Some(x) = loss {
                c.push_number(*x);
            }
            t.column_mut("kl_positional", ColumnKind::ListF64)
                .unwrap()
                .push_list(&[0.1]);
            t.finish_rows(r + 1);
        }
        t
    }

    #[test]
    fn a_relogged_step_is_seen_once_at_its_last_write_in_step_order() {
        let run = run_input(table(&[
            (3, Some(3.0)),
            (1, Some(1.0)),
            (2, Some(2.0)),
            (1, Some(1.5)),
            (2, None),
        ]));
        assert_eq!(run.steps, vec![1, 2, 3]);
        let loss = &run.columns["loss"];
        assert_eq!(loss.values[0], 1.5, "the later write of step 1 wins");
        assert!(
            loss.values[1].is_nan() && loss.nonfinite.is_empty(),
            "step 2's last write has no loss: missing, not NaN"
        );
        assert_eq!(loss.values[2], 3.0);
        assert_eq!(
            run.columns.keys().collect::<Vec<_>>(),
            vec!["loss"],
            "bookkeeping and list columns are not series"
        );
    }

    #[test]
    fn rows_already_in_step_order_are_taken_over_with_their_gaps() {
        let run = run_input(table(&[
            (0, Some(1.0)),
            (1, None),
            (2, Some(f64::INFINITY)),
        ]));
        assert_eq!(run.steps, vec![0, 1, 2]);
        let loss = &run.columns["loss"];
        assert_eq!(loss.values[0], 1.0);
        assert!(loss.values[1].is_nan() && loss.values[2].is_nan());
        assert_eq!(
            loss.nonfinite,
            vec![2],
            "missing is not non-finite; +Inf is"
        );
    }

    #[test]
    fn a_logged_nan_stays_a_finding_and_a_table_without_steps_is_empty() {
        let run = run_input(table(&[(0, Some(f64::NAN)), (1, Some(0.5))]));
        assert_eq!(run.columns["loss"].nonfinite, vec![0]);
        assert!(run_input(Table::default()).is_empty());
    }

    fn write_samples(dir: &Path, index: u64, steps: std::ops::Range<i64>) {
        use rlprobe_core::samples::wire::SampleRow;
        let rows: Vec<SampleRow> = steps
            .flat_map(|s| {
                (0..2).map(move |i| SampleRow {
                    step: s,
                    sample_id: format!("{s}-{i}"),
                    reward_total: Some(s as f64),
                    ..Default::default()
                })
            })
            .collect();
        let batch = rlprobe_core::samples::batch::to_record_batch(&rows).unwrap();
        let path = dir
            .join(rlprobe_core::layout::SAMPLES_DIR)
            .join(rlprobe_core::layout::part_name(index));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut w = rlprobe_core::parquet_io::arrow_writer(
            std::fs::File::create(&path).unwrap(),
            &path,
            batch.schema(),
            Default::default(),
            Vec::new(),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.into_inner().unwrap();
    }

    #[test]
    fn samples_are_capped_to_the_most_recent() {
        let dir = tempdir("cap");
        write_samples(&dir, 0, 0..40);
        write_samples(&dir, 1, 40..50);
        let s = read_samples(&dir, 7).unwrap();
        assert_eq!(s.len(), 7);
        assert_eq!(s.sample_id.first(), Some("46-1"), "the oldest are dropped");
        assert_eq!(s.step.last(), Some(&49));
        assert_eq!(read_samples(&dir, 1_000).unwrap().len(), 100);
    }

    #[test]
    fn a_damaged_sample_file_costs_the_evidence_not_the_diagnosis() {
        let dir = tempdir("damaged-samples");
        let part = dir
            .join(rlprobe_core::layout::STEPS_PARTS_DIR)
            .join(rlprobe_core::layout::part_name(0));
        std::fs::create_dir_all(part.parent().unwrap()).unwrap();
        let steps = table(
            &(0..30)
                .map(|s| (s, Some(1.0 / (s + 1) as f64)))
                .collect::<Vec<_>>(),
        );
        rlprobe_core::parquet_io::write_table(
            std::fs::File::create(&part).unwrap(),
            &part,
            &steps,
            Default::default(),
            Vec::new(),
        )
        .unwrap();
        write_samples(&dir, 0, 0..30);
        let samples = dir
            .join(rlprobe_core::layout::SAMPLES_DIR)
            .join(rlprobe_core::layout::part_name(0));
        std::fs::write(&samples, b"not parquet at all").unwrap();
        let d = diagnose_run(&dir, &DiagnoseOptions::default()).unwrap();
        assert_eq!((d.diagnosis.points, d.samples), (30, 0));
        let why = d
            .samples_error
            .expect("says why there is no sample evidence");
        assert!(
            why.contains(&samples.display().to_string()),
            "names the file: {why}"
        );
        // without samples asked for, nothing is said about them
        let d = diagnose_run(
            &dir,
            &DiagnoseOptions {
                samples: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(d.samples_error, None);
        // a damaged step file fails the diagnosis, naming it
        std::fs::write(&part, b"not parquet either").unwrap();
        let e = diagnose_run(&dir, &DiagnoseOptions::default()).unwrap_err();
        assert_eq!(e.code(), rlprobe_core::Code::CorruptFile);
        assert!(e.to_string().contains(&part.display().to_string()), "{e}");
    }

    #[test]
    fn renamed_columns_are_diagnosed_under_their_current_name() {
        let dir = tempdir("renames");
        let part = dir
            .join(rlprobe_core::layout::STEPS_PARTS_DIR)
            .join(rlprobe_core::layout::part_name(0));
        std::fs::create_dir_all(part.parent().unwrap()).unwrap();
        // a NaN loss stored as `old_loss`: NAN_INF reads `loss`
        let mut t = table(&(0..20).map(|s| (s, Some(0.5))).collect::<Vec<_>>());
        let loss = t.names.iter().position(|n| n == "loss").unwrap();
        t.names[loss] = "old_loss".into();
        if let ColumnValues::F64(v) = &mut t.columns[loss].values {
            v[10] = f64::NAN;
        }
        rlprobe_core::parquet_io::write_table(
            std::fs::File::create(&part).unwrap(),
            &part,
            &t,
            Default::default(),
            Vec::new(),
        )
        .unwrap();
        let plain = diagnose_run(&dir, &DiagnoseOptions::default()).unwrap();
        assert!(
            !plain.diagnosis.findings.iter().any(|f| f.code == "NAN_INF"),
            "{:?}",
            plain.diagnosis.findings
        );
        let renames = HashMap::from([("old_loss".to_string(), "loss".to_string())]);
        let renamed = diagnose_run(
            &dir,
            &DiagnoseOptions {
                renames,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            renamed
                .diagnosis
                .findings
                .iter()
                .any(|f| f.code == "NAN_INF"),
            "{:?}",
            renamed.diagnosis.findings
        );
    }
}

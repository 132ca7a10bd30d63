//! Resuming a compacted run: its `steps.parquet` becomes the first of its parts.
//!
//! Readers that follow the original layout (the Python package, a glob recipe) read
//! `steps.parquet` when it exists and the parts only when it does not. A resumed run that
//! kept `steps.parquet` next to its new parts would lose every new step to them, live and
//! after a crash. The writer renames the compacted table to the next part index just before
//! its first step part (writer/mod.rs `continue_in_parts`): one rename, its rows stay first
//! (every part on disk is older and was absorbed before), and the next compaction merges it
//! back with the new parts. A session that logs no step leaves it alone.

use std::fs;
use std::io;
use std::path::Path;

use crate::atomic::sync_dir;
use crate::compact::{compact_steps, lock_run};
use crate::error::{Error, IoContext, Result};
use crate::layout::{part_name, STEPS_FILE, STEPS_PARTS_DIR};
use crate::parquet_io::ParquetFile;
use crate::steps_files::open_step_sources;
use crate::stream_files::Stream;

/// What a resume did with `steps.parquet`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Demotion {
    /// No `steps.parquet`: nothing to do.
    NoCompactedTable,
    /// Renamed to `steps/<part>`.
    Demoted { part: String },
}

/// Renames `run_dir/steps.parquet` to `steps/part-NNNNN.parquet`, the next part index,
/// after a compaction has absorbed any part it did not hold (a live run compacted by
/// `probe compact`, then crashed) and deleted absorbed leftovers, so the parts alone hold
/// every step once, in order. A `steps.parquet` that is not a readable step table stays
/// where it is (an error naming it: readers report it the same way).
pub fn demote_compacted_steps(run_dir: &Path) -> Result<Demotion> {
    let compacted = run_dir.join(STEPS_FILE);
    match fs::symlink_metadata(&compacted) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Demotion::NoCompactedTable),
        Err(e) => return Err(Error::io("reading the metadata of", &compacted, e)),
        Ok(_) => {}
    }
    // a regular file with a readable footer that holds steps, or it stays
    let file = ParquetFile::open(&compacted)?;
    if let Some(problem) = Stream::Steps.schema_problem(&file.schema()) {
        return Err(Error::MalformedInput {
            what: compacted.display().to_string(),
            reason: format!(
                "{problem}; it stays where it is (move it aside to resume into this run)"
            ),
        });
    }
    drop(file);
    compact_steps(run_dir)?;
    let _lock = lock_run(run_dir)?;
    let next = open_step_sources(run_dir)?.next_part;
    let parts_dir = run_dir.join(STEPS_PARTS_DIR);
    match fs::create_dir(&parts_dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
            return Err(Error::io("creating", &parts_dir, e))
        }
        _ => {}
    }
    let part = part_name(next);
    let target = parts_dir.join(&part);
    fs::rename(&compacted, &target).at("renaming steps.parquet to", &target)?;
    sync_dir(&parts_dir)?;
    sync_dir(run_dir)?;
    Ok(Demotion::Demoted { part })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic::publish;
    use crate::layout::list_parts;
    use crate::parquet_io::arrow_writer;
    use crate::props::Codec;
    use crate::steps_files::{open_step_sources, read_steps};
    use crate::testutil::tempdir;
    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn write_step_part(run_dir: &Path, index: u64, steps: &[i64]) {
        let dir = run_dir.join(STEPS_PARTS_DIR);
        std::fs::create_dir_all(&dir).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("step", DataType::Int64, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(steps.to_vec()))],
        )
        .unwrap();
        publish(&dir, &part_name(index), |file, tmp| {
            let mut w = arrow_writer(file, tmp, schema, Codec::default(), Vec::new())?;
            w.write(&batch)?;
            Ok(((), w.into_inner()?))
        })
        .unwrap();
    }

    fn steps_of(run_dir: &Path) -> Vec<i64> {
        let table = read_steps(run_dir, None).unwrap();
        let step = table.column("step").unwrap();
        (0..step.len())
            .map(|r| step.scalar(r).unwrap() as i64)
            .collect()
    }

    #[test]
    fn a_compacted_run_resumed_is_parts_only_with_its_rows_first() {
        let run = tempdir("demote");
        write_step_part(&run, 0, &[0, 1, 2]);
        write_step_part(&run, 1, &[3, 4]);
        compact_steps(&run).unwrap();
        assert!(run.join(STEPS_FILE).is_file());

        let d = demote_compacted_steps(&run).unwrap();
        assert_eq!(
            d,
            Demotion::Demoted {
                part: "part-00002.parquet".into()
            }
        );
        assert!(!run.join(STEPS_FILE).exists());
        // the resumed writer's next part comes after it
        assert_eq!(open_step_sources(&run).unwrap().next_part, 3);
        write_step_part(&run, 3, &[5, 6]);
        assert_eq!(steps_of(&run), [0, 1, 2, 3, 4, 5, 6]);
        // and the next compaction merges it back
        compact_steps(&run).unwrap();
        assert_eq!(steps_of(&run), [0, 1, 2, 3, 4, 5, 6]);
        assert!(list_parts(&run.join(STEPS_PARTS_DIR)).unwrap().is_empty());
    }

    #[test]
    fn parts_next_to_the_compacted_table_are_absorbed_first_and_leftovers_go() {
        let run = tempdir("demote-mixed");
        write_step_part(&run, 0, &[0, 1]);
        let leftover = std::fs::read(run.join("steps/part-00000.parquet")).unwrap();
        compact_steps(&run).unwrap();
        // a crash between the compaction's rename and its deletes: the absorbed part is back
        std::fs::create_dir_all(run.join(STEPS_PARTS_DIR)).unwrap();
        std::fs::write(run.join("steps/part-00000.parquet"), leftover).unwrap();
        // and a part written after the compaction (a live run compacted by `probe compact`)
        write_step_part(&run, 1, &[2, 3]);
        assert_eq!(steps_of(&run), [0, 1, 2, 3]);

        demote_compacted_steps(&run).unwrap();
        let parts: Vec<u64> = list_parts(&run.join(STEPS_PARTS_DIR))
            .unwrap()
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(parts, [2], "one part holding every step");
        assert_eq!(steps_of(&run), [0, 1, 2, 3]);
    }

    #[test]
    fn no_compacted_table_nothing_to_do_and_a_foreign_one_stays() {
        let run = tempdir("demote-none");
        assert_eq!(
            demote_compacted_steps(&run).unwrap(),
            Demotion::NoCompactedTable
        );
        std::fs::write(run.join(STEPS_FILE), b"not parquet").unwrap();
        let e = demote_compacted_steps(&run).unwrap_err();
        assert!(e.report().contains("steps.parquet"), "{}", e.report());
        assert!(run.join(STEPS_FILE).is_file());
    }
}

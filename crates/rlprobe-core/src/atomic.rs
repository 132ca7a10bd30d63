//! Atomic publication of files: a reader never sees a half-written file under its final
//! name. Temporaries are dot-prefixed and lack the final suffix, so `*.parquet` globs
//! (DuckDB, Spark, pyarrow datasets) never pick one up.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, IoContext, Result};

static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Marker every temporary name carries; `remove_stray_temps` keys on it.
pub const TEMP_MARKER: &str = ".tmp-";

/// The temporary name for `final_name`: `.part-00012.tmp-<pid>-<seq>`.
pub fn temp_path(dir: &Path, final_name: &str) -> PathBuf {
    let stem = final_name.strip_suffix(".parquet").unwrap_or(final_name);
    let seq = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{stem}{TEMP_MARKER}{}-{seq}", std::process::id()))
}

/// fsync a directory so a rename or unlink inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .at("fsync of the directory", dir)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Writes `dir/final_name` atomically: `fill` writes the temporary, which is fsynced,
/// renamed into place, and the directory fsynced. On error the temporary is removed.
/// `fill` gets the temporary's path for its error messages.
pub fn publish<T>(
    dir: &Path,
    final_name: &str,
    fill: impl FnOnce(File, &Path) -> Result<(T, File)>,
) -> Result<T> {
    let tmp = temp_path(dir, final_name);
    let result = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .at("creating", &tmp)?;
        let (out, file) = fill(file, &tmp)?;
        file.sync_all().at("fsync of", &tmp)?;
        drop(file);
        let target = dir.join(final_name);
        fs::rename(&tmp, &target).at("renaming into place", &target)?;
        sync_dir(dir)?;
        Ok(out)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Publishes `dir/final_name` (as `publish`) in a stream directory of a run (`steps/`,
/// `samples/`, `spans/`), creating that directory but never the run directory above it: a
/// run directory that vanished is the writer's to notice. A compaction removes an emptied
/// `steps/` between our create and the temporary's creation; then simply try again.
pub fn publish_in_stream_dir<T>(
    dir: &Path,
    final_name: &str,
    fill: impl Fn(File, &Path) -> Result<(T, File)>,
) -> Result<T> {
    let write = || {
        match fs::create_dir(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                return Err(Error::io("creating", dir, e))
            }
            _ => {}
        }
        publish(dir, final_name, &fill)
    };
    let mut result = write();
    for _ in 0..3 {
        match &result {
            Err(e) if e.is_not_found() && dir.parent().is_some_and(Path::is_dir) => {
                result = write()
            }
            _ => break,
        }
    }
    result
}

/// Runs `open` again while a file it opens is not found (a compaction moved it between our
/// listing and our open), at most 8 times; then the last such error.
pub fn retry_while_files_move<T>(mut open: impl FnMut() -> Result<T>) -> Result<T> {
    let mut tries = 1;
    loop {
        match open() {
            Err(e) if e.is_not_found() && tries < 8 => tries += 1,
            other => return other,
        }
    }
}

/// Commits every written file of `dir`'s filesystem to stable storage in one call
/// (syncfs(2)): for thousands of small files far cheaper than an fsync each, which pays a
/// journal commit per file. Linux only; elsewhere `Unsupported` (fsync each file instead).
pub fn sync_filesystem(dir: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let d = File::open(dir).at("opening", dir)?;
        // SAFETY: a valid descriptor, owned by `d` for the call's duration
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(Error::io(
                "syncfs of the filesystem of",
                dir,
                io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(Error::io(
            "syncfs of the filesystem of",
            dir,
            io::Error::from(io::ErrorKind::Unsupported),
        ))
    }
}

/// Writes bytes atomically (the manifest).
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::InvalidOption {
            option: "path",
            value: format!("{:?}", path.display().to_string()),
            reason: "it names no file (or not in UTF-8)".into(),
        })?;
    publish(dir, name, |mut f, tmp| {
        f.write_all(bytes).at("writing", tmp)?;
        Ok(((), f))
    })
}

/// Removes temporaries left by a process that died mid-publish. Returns how many.
/// `prefix` narrows it to one kind (".part-" in steps/, ".steps" in the run directory).
pub fn remove_stray_temps(dir: &Path, prefix: &str) -> Result<usize> {
    let mut removed = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io("listing", dir, e)),
    };
    for entry in entries {
        let entry = entry.at("listing", dir)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(prefix) && name.contains(TEMP_MARKER) {
            fs::remove_file(entry.path()).at("removing the stray temporary", &entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::tempdir;

    #[test]
    fn publish_is_all_or_nothing() {
        let dir = tempdir("publish");
        publish(&dir, "a.parquet", |mut f, tmp| {
            f.write_all(b"hello").at("writing", tmp)?;
            Ok(((), f))
        })
        .unwrap();
        assert_eq!(fs::read(dir.join("a.parquet")).unwrap(), b"hello");
        let err = publish::<()>(&dir, "b.parquet", |mut f, tmp| {
            f.write_all(b"half").at("writing", tmp)?;
            Err(Error::Internal {
                what: "boom".into(),
            })
        });
        assert!(err.is_err());
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec!["a.parquet"],
            "no temporary and no final file after a failure"
        );
    }

    #[test]
    fn a_filesystem_is_synced_or_says_it_cannot_be() {
        let dir = tempdir("syncfs");
        fs::write(dir.join("f"), b"x").unwrap();
        match sync_filesystem(&dir) {
            Ok(()) => {
                #[cfg(not(target_os = "linux"))]
                panic!("syncfs succeeded on a platform that has none");
            }
            Err(e) => assert_eq!(
                e.io_source().map(io::Error::kind),
                Some(io::ErrorKind::Unsupported),
                "{e}"
            ),
        }
        assert!(sync_filesystem(&dir.join("missing")).is_err());
    }

    #[test]
    fn temporaries_are_hidden_from_globs_and_cleaned() {
        let dir = tempdir("stray");
        let tmp = temp_path(&dir, "part-00001.parquet");
        let name = tmp.file_name().unwrap().to_string_lossy().to_string();
        assert!(name.starts_with(".part-00001") && !name.ends_with(".parquet"));
        fs::write(&tmp, b"x").unwrap();
        fs::write(dir.join("part-00000.parquet"), b"y").unwrap();
        assert_eq!(remove_stray_temps(&dir, ".part-").unwrap(), 1);
        assert!(dir.join("part-00000.parquet").exists());
    }
}

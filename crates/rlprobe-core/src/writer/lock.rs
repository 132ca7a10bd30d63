//! One writer per run directory. Two recorders writing one directory would number their
//! part files from the same index and overwrite each other's rows, so a writer holds an
//! advisory lock (flock) on `<run>/.writer.lock` for as long as it runs. The kernel drops
//! the lock when its process dies, however it dies: a crashed writer's lock is taken over
//! by the next recorder with no clean-up and no staleness guess.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::layout::WRITER_LOCK_FILE;

/// Held for the writer's life; dropping it releases the directory.
pub struct WriterLock {
    _file: File,
}

/// Who holds a lock, as its holder wrote it into the lock file.
fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.take(4096).read_to_string(&mut text);
    let text = text.trim();
    if text.is_empty() {
        "another process (it has not said which)".into()
    } else {
        text.to_string()
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown host".into())
}

/// Takes `<run_dir>/.writer.lock` without waiting. Refused (`Error::Locked`) while another
/// recorder — in this process or any other on a host sharing the lock — writes `run_dir`;
/// the message names the directory and the holder.
pub fn lock_run_for_writing(run_dir: &Path) -> Result<WriterLock> {
    let path: PathBuf = run_dir.join(WRITER_LOCK_FILE);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .at("opening the writer lock", &path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = holder_of(&mut file);
            return Err(Error::Locked {
                run_dir: run_dir.to_path_buf(),
                holder,
                lock_file: path,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::io("taking the writer lock", path, e))
        }
    }
    // who holds it, for the message a refused recorder shows (not needed for correctness)
    let who = format!(
        "pid {} on {} since {:.3}",
        std::process::id(),
        host_name(),
        crate::events::now_unix_seconds()
    );
    let _ = file
        .set_len(0)
        .and_then(|_| file.seek(SeekFrom::Start(0)))
        .and_then(|_| file.write_all(who.as_bytes()));
    Ok(WriterLock { _file: file })
}

/// A filesystem that has no advisory locks (some network filesystems answer ENOLCK or
/// "unsupported"): recording goes on unguarded, and the caller says so.
pub fn locks_unsupported(e: &Error) -> bool {
    const ENOLCK: i32 = 37; // Linux
    e.io_source().is_some_and(|e| {
        e.kind() == std::io::ErrorKind::Unsupported
            || (cfg!(target_os = "linux") && e.raw_os_error() == Some(ENOLCK))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_until_the_first_lets_go() {
        let dir = crate::testutil::tempdir("writer-lock");
        let first = lock_run_for_writing(&dir).unwrap();
        let err = lock_run_for_writing(&dir)
            .err()
            .expect("second lock refused");
        assert_eq!(err.code(), crate::Code::Locked);
        let msg = err.to_string();
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        lock_run_for_writing(&dir).expect("free again once the holder is gone");
    }

    #[test]
    fn a_filesystem_without_locks_is_told_apart_from_a_held_lock() {
        use std::io;
        let at = |e: io::Error| Error::io("taking the writer lock", "/r/.writer.lock", e);
        assert!(locks_unsupported(&at(io::Error::from(
            io::ErrorKind::Unsupported
        ))));
        if cfg!(target_os = "linux") {
            assert!(
                locks_unsupported(&at(io::Error::from_raw_os_error(37))),
                "ENOLCK"
            );
        }
        assert!(!locks_unsupported(&at(io::Error::from(
            io::ErrorKind::PermissionDenied
        ))));
        let held = Error::Locked {
            run_dir: "/r".into(),
            holder: "pid 1".into(),
            lock_file: "/r/.writer.lock".into(),
        };
        assert!(!locks_unsupported(&held));
    }
}

//! Opening the files of a run directory for reading, refusing anything that is not a
//! regular file. A FIFO in place of a part file blocks `open(2)` until a writer appears, and
//! a symlink to `/dev/zero` never ends: either hung the reader. The file is opened without
//! blocking and checked on the open handle (no window between a check and the open).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

use crate::error::{Error, IoContext, Remedy, Result};

/// Opens `path` for reading if it is a regular file (following symlinks). Otherwise an
/// error naming the file and what it is, ending in `remedy` when given; a missing file is
/// `Error::is_not_found` (a compaction may have moved it: callers retry on that).
pub fn open_regular(path: &Path, remedy: Option<Remedy>) -> Result<File> {
    let file = match open_nonblocking(path) {
        Ok(f) => f,
        Err(e) => return Err(not_readable(path, e, remedy)),
    };
    let meta = file.metadata().at("reading the metadata of", path)?;
    if !meta.file_type().is_file() {
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            what: describe(path, &meta.file_type()),
            remedy,
        });
    }
    Ok(file)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a
    // writer (no effect on regular files)
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    // no FIFOs to block on; directories and devices are still refused after the open
    OpenOptions::new().read(true).open(path)
}

/// What a non-regular file is, in words (with a symlink's target).
fn describe(path: &Path, kind: &fs::FileType) -> String {
    let what = kind_name(kind);
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match fs::read_link(path) {
            Ok(target) => format!("a symbolic link to {} ({what})", target.display()),
            Err(_) => format!("a symbolic link to {what}"),
        },
        _ => what.to_string(),
    }
}

fn kind_name(kind: &fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// An open failure, naming the file (a symlink loop in words).
fn not_readable(path: &Path, e: io::Error, remedy: Option<Remedy>) -> Error {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        let what = "a symbolic link loop (too many levels of symbolic links)".to_string();
        return Error::NotRegularFile {
            path: path.to_path_buf(),
            what,
            remedy,
        };
    }
    Error::io("opening", path, e)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::testutil::tempdir;
    use std::time::{Duration, Instant};

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn only_regular_files_are_opened_and_the_error_says_what_it_found() {
        let dir = tempdir("regular");
        type MakeFile = Box<dyn Fn(&Path)>;
        let cases: Vec<(&str, MakeFile, &str)> = vec![
            ("fifo", Box::new(mkfifo), "a FIFO (named pipe)"),
            (
                "zero",
                Box::new(|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
                "a symbolic link to /dev/zero (a character device)",
            ),
            (
                "dir",
                Box::new(|p| fs::create_dir(p).unwrap()),
                "a directory",
            ),
            (
                "loop",
                Box::new(|p| std::os::unix::fs::symlink(p, p).unwrap()),
                "a symbolic link loop",
            ),
        ];
        for (name, make, expected) in cases {
            let path = dir.join(name);
            make(&path);
            let started = Instant::now();
            let err = open_regular(&path, None).expect_err(name);
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{name}: returned at once"
            );
            let msg = err.to_string();
            assert!(
                msg.starts_with(&path.display().to_string()),
                "{name}: names the file: {msg}"
            );
            assert!(msg.contains(expected), "{name}: says what it is: {msg}");
        }
        fs::write(dir.join("ok"), b"x").unwrap();
        assert!(open_regular(&dir.join("ok"), None).is_ok());
        assert!(open_regular(&dir.join("missing"), None)
            .unwrap_err()
            .is_not_found());
    }
}

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::domain::error::{Error, Result};

/// Writes `bytes` to `path` so that readers see the old content or the new, never a mix:
/// a temp file in the same directory, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    stage(path, bytes)?.commit()
}

/// A file written and fsynced under a temp name, waiting for [`Staged::commit`] to rename it
/// into place. Splitting the two lets the slow part (fsync) overlap other work, such as the
/// tmux call of a submit, while the file still appears only when it should. Dropped without a
/// commit, the temp file is removed.
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

pub fn stage(path: &Path, bytes: &[u8]) -> Result<Staged> {
    stage_in(
        path.parent().expect("a file path has a parent"),
        path,
        bytes,
    )
}

/// Like [`stage`], with the temp file in `tmp_dir` (on the same filesystem as `path`).
///
/// Temp names carry the writer's pid (`.<name>.<pid>.<random>.tmp`): a writer killed before its
/// rename leaves one behind, and [`remove_if_stale_tmp`] can tell it from one still being written.
pub fn stage_in(tmp_dir: &Path, path: &Path, bytes: &[u8]) -> Result<Staged> {
    stage_with(tmp_dir, path, bytes, true)
}

/// [`stage_in`] without the fsync: for a file whose loss to a crash is refused when it is
/// read, never taken for something else.
pub fn stage_unsynced_in(tmp_dir: &Path, path: &Path, bytes: &[u8]) -> Result<Staged> {
    stage_with(tmp_dir, path, bytes, false)
}

fn stage_with(tmp_dir: &Path, path: &Path, bytes: &[u8], sync: bool) -> Result<Staged> {
    let name = path
        .file_name()
        .expect("a file path has a name")
        .to_string_lossy();
    let staged = Staged {
        tmp: tmp_dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        )),
        path: path.to_path_buf(),
    };
    // Owner-only, like everything else in a task directory.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged.tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            if sync { file.sync_all() } else { Ok(()) }
        })
        .map_err(|err| Error::io("write", path, err))?;
    Ok(staged)
}

/// The most [`read_small`] reads: a record, a plan, a progress or result file of cuekit's is
/// far smaller, and one a child grew in its task folder (a 573 MB `task.json`) must not cost
/// every listing its size in memory and time.
pub const SMALL_LIMIT: u64 = 32 * 1024 * 1024;

/// A small file's bytes (at most [`SMALL_LIMIT`]), opened as [`open_own`] opens it.
pub fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    read_limited(path, SMALL_LIMIT)
}

/// A file's bytes, opened as [`open_own`] opens it (no link followed, never blocking, a regular
/// file only), refused when it holds more than `limit` bytes: by the size `open_own` already
/// asked for, and again while reading (it may grow meanwhile).
pub fn read_limited(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (file, size) = open_own_sized(path)?;
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the {limit} bytes cuekit reads of it"),
        )
    };
    if size > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(size as usize);
    let mut limited = file.take(limit + 1);
    let mut chunk = [0u8; 8192];
    loop {
        match limited.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => bytes.extend_from_slice(&chunk[..read]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The longest line [`for_each_line`] hands on; a longer one is skipped whole.
pub const LINE_LIMIT: usize = 1024 * 1024;

/// Each line of `reader` (without its newline) up to [`LINE_LIMIT`] bytes, streamed: memory
/// stays bounded whatever the file's size or its longest line (a longer line is skipped).
pub fn for_each_line(
    reader: impl std::io::Read,
    mut each: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buffer.is_empty() {
            if !overlong && !line.is_empty() {
                each(&line);
            }
            return Ok(());
        }
        let (taken, ended) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (end, true),
            None => (buffer.len(), false),
        };
        if !overlong {
            if line.len() + taken > LINE_LIMIT {
                overlong = true;
                line.clear();
            } else {
                line.extend_from_slice(&buffer[..taken]);
            }
        }
        reader.consume(taken + usize::from(ended));
        if ended {
            if !overlong {
                each(&line);
            }
            line.clear();
            overlong = false;
        }
    }
}

/// Opens for reading a file cuekit wrote itself (a record, a transcript, an event log): a link
/// or a FIFO in its place was put there by something else (a child in its task directory), so
/// a link is not followed, the open never blocks, and anything but a regular file is refused.
pub fn open_own(path: &Path) -> std::io::Result<std::fs::File> {
    open_own_sized(path).map(|(file, _)| file)
}

/// [`open_own`], and the file's size as `fstat` gave it.
fn open_own_sized(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((file, meta.len()))
}

/// A file of cuekit's in a folder a child can write (a task folder), opened for writing:
/// created owner-only if missing, never through a link the child left (what cuekit writes would
/// go where it points), never blocking in `open` (a FIFO would). What is there and is not a
/// regular file is replaced. `truncate`: emptied, for a file written whole; else kept (a lock).
pub fn open_own_for_writing(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    let open = |exclusive: bool| {
        std::fs::OpenOptions::new()
            .create(true)
            .create_new(exclusive)
            .truncate(truncate)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .and_then(|file| {
                if file.metadata()?.is_file() {
                    Ok(file)
                } else {
                    Err(std::io::Error::other("not a regular file"))
                }
            })
    };
    open(false).or_else(|_| {
        std::fs::remove_file(path)?;
        open(true)
    })
}

/// Appends `line` and a newline to `path` (created if missing) in a single `write` on a file
/// opened for appending: lines from several processes never interleave. Opened without
/// following a link and without blocking, and written only if it is a regular file: a child
/// that swapped a task's event log for a FIFO must not hold the monitor in `open`.
pub fn append_line(path: &Path, line: &[u8]) -> Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line);
    bytes.push(b'\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|mut file| {
            if !file.metadata()?.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            file.write_all(&bytes)
        })
        .map_err(|err| Error::io("append to", path, err))
}

/// Creates `dir` (and its parents) owner-only: cuekit's directories hold prompts, transcripts,
/// environments and sockets.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| Error::io("create", dir, err))
}

/// [`create_private_dir`] of `dir` alone: its parent must exist. For a process that must not
/// bring back a tree removed under it (a monitor starting after its HOME was deleted).
pub fn create_private_leaf(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(Error::io("create", dir, err))
        }
        _ => Ok(()),
    }
}

/// Removes `path` if it is a temp file of [`stage_in`] whose writer no longer runs.
pub fn remove_if_stale_tmp(path: &Path) {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let Some(stem) = name.strip_suffix(".tmp").filter(|_| name.starts_with('.')) else {
        return;
    };
    let writer = stem
        .rsplit('.')
        .nth(1)
        .and_then(|pid| pid.parse::<u32>().ok());
    let stale = match writer {
        Some(pid) => !crate::effects::process::is_alive(pid) || older_than(path, 60),
        // Written by an older cuekit, which named no writer.
        None => older_than(path, 60),
    };
    if stale {
        let _ = std::fs::remove_file(path);
    }
}

/// Removes the stale temp files of [`stage_in`] from a directory.
pub fn remove_stale_tmps(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            remove_if_stale_tmp(&entry.path());
        }
    }
}

/// The names in one of cuekit's own folders (none when it cannot be read).
pub fn names_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `path` was last modified more than `secs` seconds ago.
pub fn older_than(path: &Path, secs: u64) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age.as_secs() >= secs)
}

impl Staged {
    pub fn commit(self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.path).map_err(|err| Error::io("write", &self.path, err))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // After a successful rename the temp name no longer exists; this is a no-op then.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

#[cfg(test)]
mod append_tests {
    use super::*;

    #[test]
    fn an_append_to_a_fifo_or_a_link_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("events.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // A reader holds it open: a blocking open would succeed and a write could block.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        assert!(append_line(&fifo, b"x").is_err());
        drop(reader);
        assert!(append_line(&fifo, b"x").is_err());
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, dir.path().join("link")).unwrap();
        assert!(append_line(&dir.path().join("link"), b"x").is_err());
        assert!(!target.exists());
        append_line(&dir.path().join("plain"), b"line").unwrap();
        assert_eq!(std::fs::read(dir.path().join("plain")).unwrap(), b"line\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_staged_file_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        let staged = stage(&path, b"x").unwrap();
        assert!(!path.exists());
        staged.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
        drop(stage(&path, b"y").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_dead_writers_temp_file_is_stale_and_a_live_ones_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let live = stage(&path, b"live").unwrap();
        // A pid no process has: Linux pids stay below 2^22.
        let dead = dir.path().join(".c.json.4194999.0badf00d.tmp");
        std::fs::write(&dead, b"dead").unwrap();
        remove_stale_tmps(dir.path());
        assert!(!dead.exists());
        assert!(live.tmp.exists());
        live.commit().unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

//! What the outbound notifications (issue 53) keep in the user's data directory, under
//! `notify/`: the claim of each transition sent (`sent/<id>`, made with `O_EXCL`, so of two
//! monitors, or a monitor restarted, exactly one sends it), the muted tasks (`muted/<task id>`),
//! the failures (`failures.jsonl`, counted by `doctor`) and when the last digest went out.

use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use crate::domain::error::{Error, ErrorCode, Result};

fn dir(sub: &str) -> Result<PathBuf> {
    let data = super::data_dir().ok_or_else(|| {
        Error::new(ErrorCode::Io, "cannot find cuekit's data directory")
            .with_hint("set HOME (or XDG_DATA_HOME)")
    })?;
    if !data.is_dir() {
        // A removed HOME is not made anew by a notification.
        return Err(Error::new(ErrorCode::Io, "cuekit's data directory is gone"));
    }
    let dir = data.join("notify").join(sub);
    super::create_private_dir(&dir)?;
    Ok(dir)
}

/// A claim's or a task's name: letters, digits, `_`, `-`, `.` only (never a path).
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 120
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Takes the claim `key` (a transition id, a race's decision, a day's digest): true for the one
/// caller that made it, false for every later one. Unsure (no data directory) is false: a
/// notice is never sent twice for want of a claim.
pub fn claim(key: &str) -> bool {
    if !plain(key) {
        return false;
    }
    let Ok(dir) = dir("sent") else {
        return false;
    };
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(key))
        .is_ok()
}

/// Mutes (or unmutes) a task's notifications beyond this machine.
pub fn set_muted(task_id: &str, muted: bool) -> Result<()> {
    if !plain(task_id) {
        return Err(Error::new(
            ErrorCode::TaskNotFound,
            format!("no task {task_id}"),
        ));
    }
    let path = dir("muted")?.join(task_id);
    if muted {
        super::write_atomic(&path, b"")
    } else {
        match std::fs::remove_file(&path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", &path, err))
            }
            _ => Ok(()),
        }
    }
}

pub fn is_muted(task_id: &str) -> bool {
    plain(task_id)
        && super::data_dir().is_some_and(|data| data.join("notify/muted").join(task_id).is_file())
}

fn failures_file() -> Result<PathBuf> {
    Ok(dir("")?.join("failures.jsonl"))
}

/// Records a delivery that failed (a line of JSON), kept small: past 256 KiB the file starts
/// again.
pub fn record_failure(line: &serde_json::Value) {
    let Ok(path) = failures_file() else {
        return;
    };
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > 256 * 1024) {
        let _ = std::fs::remove_file(&path);
    }
    let _ = super::append_line(&path, &serde_json::to_vec(line).expect("values serialize"));
}

/// The failures on record: how many, and the last one.
pub fn failures() -> (usize, Option<serde_json::Value>) {
    let Some(path) = super::data_dir().map(|d| d.join("notify/failures.jsonl")) else {
        return (0, None);
    };
    let Ok(file) = super::open_own(&path) else {
        return (0, None);
    };
    let mut count = 0;
    let mut last = None;
    let _ = super::for_each_line(file, |line| {
        count += 1;
        last = serde_json::from_slice(line).ok();
    });
    (count, last)
}

fn digest_file() -> Result<PathBuf> {
    Ok(dir("")?.join("digest.last"))
}

/// When the last digest went out (RFC 3339), if one did.
pub fn last_digest() -> Option<String> {
    let path = digest_file().ok()?;
    let bytes = super::read_small(&path).ok()?;
    String::from_utf8(bytes)
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

pub fn set_last_digest(at: &str) -> Result<()> {
    super::write_atomic(&digest_file()?, at.as_bytes())
}

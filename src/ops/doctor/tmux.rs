//! tmux: its version, the socket's path, and sessions of cuekit's server that no task owns.

use std::path::PathBuf;

use crate::domain::adapter::VERSION_TIMEOUT;
use crate::effects::bounded::Bounded;

use crate::effects::store;
use crate::effects::tmux::Socket;

use super::{Check, Level};

/// Oldest tmux cuekit supports: `new-session -e`, `-f` filters, `pane_dead_status`.
pub(super) const MIN_TMUX: (u32, u32) = (3, 2);

/// `sun_path` holds 108 bytes on Linux (104 on macOS), terminator included.
pub(super) const MAX_SOCKET_PATH: usize = 103;

pub(super) fn tmux_checks(socket: &Socket) -> Vec<Check> {
    let Some(path) = crate::effects::which::find_on_path("tmux") else {
        return vec![
            Check::new("tmux", Level::Fail, "tmux is not installed")
                .next("install tmux 3.2 or newer, e.g. `apt-get install tmux`"),
        ];
    };
    let version = Bounded::new(&path, VERSION_TIMEOUT)
        .arg("-V")
        .run()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout.bytes())
                .trim()
                .to_string()
        })
        .unwrap_or_default();
    let mut checks = vec![match parse_version(&version) {
        Some(found) if found >= MIN_TMUX => Check::new(
            "tmux",
            Level::Ok,
            format!("{version} at {}", path.display()),
        ),
        Some(_) => Check::new("tmux", Level::Fail, format!("{version} is older than 3.2"))
            .next("install tmux 3.2 or newer"),
        None => Check::new(
            "tmux",
            Level::Warn,
            format!(
                "cannot tell the version of {} ({version:?})",
                path.display()
            ),
        ),
    }];
    let socket_path = socket_path(socket);
    let length = socket_path.as_os_str().len();
    checks.push(if length > MAX_SOCKET_PATH {
        Check::new(
            "tmux socket",
            Level::Fail,
            format!(
                "{} is {length} bytes, over the {MAX_SOCKET_PATH}-byte limit",
                socket_path.display()
            ),
        )
        .next("use a shorter CUEKIT_TMUX_SOCKET or TMUX_TMPDIR")
    } else {
        let [flag, name] = socket.args();
        let listed = Bounded::new(&path, VERSION_TIMEOUT)
            .arg(flag)
            .arg(name)
            .args(["list-sessions", "-F", "#{session_name}"])
            .run();
        match listed {
            Ok(out) if out.success() => {
                let sessions = String::from_utf8_lossy(&out.stdout.bytes())
                    .lines()
                    .filter(|s| s.starts_with("cuekit-task-"))
                    .count();
                Check::new(
                    "tmux server",
                    Level::Ok,
                    format!(
                        "{} reachable, {sessions} task session(s)",
                        socket_path.display()
                    ),
                )
            }
            Ok(out) => {
                let stderr = String::from_utf8_lossy(&out.stderr.bytes()).into_owned();
                if stderr.contains("no server running") || stderr.contains("error connecting") {
                    Check::new(
                        "tmux server",
                        Level::Ok,
                        format!(
                            "{} not running yet (the first task starts it)",
                            socket_path.display()
                        ),
                    )
                } else {
                    Check::new(
                        "tmux server",
                        Level::Fail,
                        format!("{}: {}", socket_path.display(), stderr.trim()),
                    )
                    .next("remove a stale socket file, or set CUEKIT_TMUX_SOCKET to another name")
                }
            }
            Err(err) => Check::new("tmux server", Level::Fail, err.to_string()),
        }
    });
    checks
}

/// `tmux 3.3a` → (3, 3); `tmux next-3.5` → (3, 5).
/// `major.minor` from a `--version` line (tmux's or git's).
pub(super) fn parse_version(text: &str) -> Option<(u32, u32)> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let mut parts = text[start..].split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

pub(super) fn socket_path(socket: &Socket) -> PathBuf {
    socket.path()
}

/// Sessions of cuekit's server that no task owns: left by a submit that was killed before it
/// recorded its task (pending submits are undone by every cuekit call; this finds the rest).
pub(super) fn orphan_check(socket: &Socket, fix: bool) -> Check {
    let listed = crate::effects::tmux::Tmux::new(socket.clone())
        .run(&crate::effects::tmux::args::list_sessions());
    let Ok(sessions) = listed else {
        return Check::new("orphan sessions", Level::Ok, "no tmux server running");
    };
    let orphans: Vec<&str> = sessions
        .lines()
        .filter(|name| {
            name.strip_prefix("cuekit-task-").is_some_and(|id| {
                store::is_task_id(id)
                    && matches!(store::placement(id), Ok(None))
                    && !store::pending_submits()
                        .iter()
                        .any(|pending| pending.placement.id == id)
            })
        })
        .collect();
    if orphans.is_empty() {
        return Check::new(
            "orphan sessions",
            Level::Ok,
            "every task session has its task",
        );
    }
    if fix {
        // Only sessions this registry started (their owner mark names its data directory):
        // another data directory's tasks on the same server, and a session made by hand under
        // a task's name, are not ours to end.
        let ours = own_sessions(socket);
        let (ended, kept): (Vec<&str>, Vec<&str>) = orphans
            .iter()
            .partition(|session| ours.iter().any(|own| own == *session));
        for session in &ended {
            let _ = crate::effects::tmux::Tmux::new(socket.clone())
                .run(&crate::effects::tmux::args::kill_session(session));
        }
        let mut said = format!(
            "ended {} session(s) no task owns: {}",
            ended.len(),
            ended.join(", ")
        );
        if !kept.is_empty() {
            said.push_str(&format!(
                "; left {} not started by this registry ({}): {}",
                kept.len(),
                store::data_dir().unwrap_or_default().display(),
                kept.join(", ")
            ));
        }
        return Check::new("orphan sessions", Level::Ok, said);
    }
    Check::new(
        "orphan sessions",
        Level::Warn,
        format!(
            "{} session(s) no task owns: {}",
            orphans.len(),
            orphans.join(", ")
        ),
    )
    .next("`cuekit doctor --fix` ends them")
}

/// The sessions of `socket` whose owner mark names this registry's data directory.
pub(super) fn own_sessions(socket: &Socket) -> Vec<String> {
    let Some(mine) = store::data_dir() else {
        return Vec::new();
    };
    let mine = mine.to_string_lossy().into_owned();
    crate::effects::tmux::Tmux::new(socket.clone())
        .run(&crate::effects::tmux::args::list_sessions_with_owner())
        .map(|listed| {
            listed
                .lines()
                .filter_map(|line| line.split_once('\t'))
                .filter(|(_, owner)| *owner == mine)
                .map(|(name, _)| name.to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_versions() {
        assert_eq!(parse_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_version("tmux next-3.5"), Some((3, 5)));
        assert_eq!(parse_version("tmux 2.9"), Some((2, 9)));
        assert!(parse_version("tmux 3.10") > Some(MIN_TMUX));
        assert_eq!(parse_version("garbage"), None);
    }
}

//! Announcing a transition to the person who submitted the task: a message on their tmux
//! client, a terminal bell there, or a desktop notification. Best effort, each under a short
//! time limit: a notification that cannot be delivered is skipped, never retried in a storm.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::domain::task::SubmittedFrom;
use crate::effects::bounded::{Bounded, RunError, Sink};
use crate::effects::config::NotifyChannel;
use crate::effects::tmux::args;

/// The submitter's pane, from its environment: an effect of the domain's [`SubmittedFrom`].
impl SubmittedFrom {
    /// From the submitter's environment, when it ran inside tmux.
    pub fn from_env() -> Option<SubmittedFrom> {
        let tmux = std::env::var("TMUX").ok()?;
        let socket = tmux.split(',').next().filter(|s| s.starts_with('/'))?;
        let pane = std::env::var("TMUX_PANE")
            .ok()
            .filter(|p| p.starts_with('%'))?;
        Some(SubmittedFrom {
            socket: socket.to_string(),
            pane,
        })
    }
}

/// The agent a task was submitted by, in the foreground of [`SubmittedFrom`]'s pane at submit,
/// proven then to be the submitter's ancestor: what `--wake-parent` types into
/// (`ops::wake`), and only while that very process still has the pane's keyboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentAgent {
    pub socket: String,
    pub pane: String,
    /// The pane's first process: a pane id on a restarted server may name another pane.
    pub pane_pid: u32,
    /// Its adapter (`gemini`, `claude-code`, …), whose screen rules say when it is idle.
    pub agent: String,
    /// The foreground process group's leader, and when it started.
    pub pid: u32,
    pub start_ticks: Option<u64>,
}

/// Time any one notification may take.
const LIMIT: Duration = Duration::from_secs(3);

/// Sends `message` on each channel; returns what was done, for the log.
pub fn announce(
    channels: &[NotifyChannel],
    from: Option<&SubmittedFrom>,
    title: &str,
    message: &str,
) -> Vec<String> {
    let mut done = Vec::new();
    for channel in channels {
        let sent = match (channel, from) {
            (NotifyChannel::Tmux, Some(from)) => {
                run(Bounded::new(crate::effects::tmux::binary(), LIMIT)
                    .args(["-S", &from.socket])
                    .args(args::show_message(
                        &from.pane,
                        &format!("{title}: {message}"),
                    )))
            }
            (NotifyChannel::Bell, Some(from)) => bell(from),
            (NotifyChannel::Desktop, _) => desktop(title, message),
            // Typed by `ops::wake` for the tasks that asked, logged as `cuekit_wake`.
            (NotifyChannel::Parent, _) => continue,
            (_, None) => Err("the task was not submitted from inside tmux".to_string()),
        };
        done.push(match sent {
            Ok(()) => format!("{channel:?}: sent").to_lowercase(),
            Err(why) => format!("{channel:?}: not sent ({why})").to_lowercase(),
        });
    }
    done
}

/// A bell in the submitter's pane: BEL written to its terminal, which tmux turns into the
/// client's bell.
fn bell(from: &SubmittedFrom) -> Result<(), String> {
    let output = Bounded::new(crate::effects::tmux::binary(), LIMIT)
        .args(["-S", &from.socket])
        .args(args::pane_tty(&from.pane))
        .run()
        .map_err(|err| err.to_string())?;
    let tty = String::from_utf8_lossy(&output.stdout.bytes())
        .trim()
        .to_string();
    if !output.success() || !tty.starts_with("/dev/") {
        return Err("the submitter's pane is gone".into());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&tty)
        .and_then(|mut file| std::io::Write::write_all(&mut file, b"\x07"))
        .map_err(|err| err.to_string())
}

/// Whether a D-Bus session bus is there to take desktop notifications.
pub fn session_bus() -> Result<(), String> {
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").unwrap_or_default();
    if address.is_empty() {
        return Err("no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset)".into());
    }
    if crate::effects::which::find_on_path("gdbus").is_none() {
        return Err("gdbus is not installed (Debian: libglib2.0-bin)".into());
    }
    Ok(())
}

/// A freedesktop notification (org.freedesktop.Notifications.Notify) through `gdbus`.
fn desktop(title: &str, message: &str) -> Result<(), String> {
    session_bus()?;
    let quote = |text: &str| format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"));
    run(Bounded::new("gdbus", LIMIT).args([
        "call",
        "--session",
        "--dest",
        "org.freedesktop.Notifications",
        "--object-path",
        "/org/freedesktop/Notifications",
        "--method",
        "org.freedesktop.Notifications.Notify",
        "cuekit",
        "0",
        "",
        &quote(title),
        &quote(message),
        "[]",
        "{}",
        "5000",
    ]))
}

/// Runs a notifier with the time limit; it is killed past it.
fn run(command: Bounded) -> Result<(), String> {
    let ran = command
        .stdout(Sink::Null)
        .stderr(Sink::Null)
        .run()
        .map_err(|err| match err {
            RunError::TimedOut { .. } => "timed out".to_string(),
            RunError::Start { source, .. } => source.to_string(),
            other => other.to_string(),
        })?;
    match ran.status {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(format!("exit {status}")),
        None => Err("status unknown".into()),
    }
}

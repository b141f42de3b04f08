//! Where a task's pane lives (its tmux server's socket) and what tmux says of a pane: the
//! words cuekit judges by. Finding the socket on disk and asking tmux are effects
//! ([`crate::effects::tmux`]).

use std::collections::HashMap;
use std::ffi::OsString;

use serde::{Deserialize, Serialize};

/// The tmux server a task lives on, as configured: a name (`-L`) or, with a `/`, a path (`-S`).
/// Always turned into an absolute socket path ([`Socket::resolve`]) before it is stored, so later
/// commands reach the same server whatever their own directory, `TMUX_TMPDIR` or environment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Socket(pub String);

impl Socket {
    pub fn args(&self) -> [OsString; 2] {
        let flag = if self.0.contains('/') { "-S" } else { "-L" };
        [flag.into(), self.0.clone().into()]
    }

    /// The command a person types to look at a task's session.
    pub fn attach_command(&self, session: &str) -> String {
        let [flag, socket] = self.args();
        let socket = crate::domain::launch::single_quote(&socket.to_string_lossy())
            .unwrap_or_else(|_| socket.to_string_lossy().into_owned());
        format!(
            "tmux {} {socket} attach -t '={session}'",
            flag.to_string_lossy()
        )
    }
}

/// One pane of the server, as `list-panes -a` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneInfo {
    pub session: String,
    pub pane_id: String,
    pub pane_pid: u32,
    pub dead: bool,
    pub dead_status: Option<i32>,
    /// The signal that ended a dead pane's process (tmux 3.3+). A dead pane with neither this
    /// nor [`PaneInfo::dead_status`] is one whose process tmux has not reaped yet: its status
    /// is still to come.
    pub dead_signal: Option<i32>,
    pub in_mode: bool,
    pub height: usize,
    /// Lines scrolled off the top of the screen into the pane's history.
    pub history_lines: usize,
    /// When the pane's window last printed anything (Unix seconds): a screen whose window has
    /// been quiet since it was captured need not be captured again.
    pub activity: u64,
}

/// A server's panes by session, each session's first pane (pane ids only grow, so a pane a
/// user split off later never takes its place). Built once per snapshot so that judging a
/// thousand tasks is a thousand lookups, not a thousand scans.
#[derive(Debug, Clone, Default)]
pub struct PaneIndex(HashMap<String, PaneInfo>);

impl PaneIndex {
    pub fn new(panes: Vec<PaneInfo>) -> PaneIndex {
        let number = |pane: &PaneInfo| {
            pane.pane_id
                .trim_start_matches('%')
                .parse::<u64>()
                .unwrap_or(u64::MAX)
        };
        let mut index: HashMap<String, PaneInfo> = HashMap::with_capacity(panes.len());
        for pane in panes {
            match index.get(&pane.session) {
                Some(first) if number(first) <= number(&pane) => {}
                _ => {
                    index.insert(pane.session.clone(), pane);
                }
            }
        }
        PaneIndex(index)
    }

    pub fn get(&self, session: &str) -> Option<&PaneInfo> {
        self.0.get(session)
    }
}

//! `cuekit events` and MCP `next_event`: the transitions the monitors announced, for this
//! project's tasks or all — what a script or an AI parent reads to block until anything happens.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::domain::error::Result;
use crate::effects::store::transitions::{self, TransitionEvent};

/// How often a follower looks for new lines.
const POLL: Duration = Duration::from_millis(100);

/// Which tasks' transitions: one project's (its tasks directory), or every task's.
#[derive(Debug, Clone)]
pub struct EventScope(Option<PathBuf>);

impl EventScope {
    pub fn new(all: bool, cwd: &Path) -> EventScope {
        if all {
            return EventScope(None);
        }
        let root = crate::effects::store::project_tasks_root(cwd)
            .and_then(|root| std::fs::canonicalize(root).ok())
            .unwrap_or_else(|| cwd.join(crate::effects::store::TASKS_SUBDIR));
        EventScope(Some(root))
    }

    fn holds(&self, event: &TransitionEvent) -> bool {
        self.0
            .as_ref()
            .is_none_or(|root| event.task_dir.starts_with(root))
    }
}

/// Every transition recorded so far, and the cursor after them.
pub fn events(scope: &EventScope) -> Result<(Vec<TransitionEvent>, u64)> {
    let (events, cursor) = transitions::read_from(0)?;
    Ok((
        events.into_iter().filter(|e| scope.holds(e)).collect(),
        cursor,
    ))
}

/// The transitions after `cursor` (from now, when `None`), waiting up to `timeout` for the
/// first; returns them (none on timeout) and the cursor to pass next time.
pub fn next_events(
    scope: &EventScope,
    cursor: Option<u64>,
    timeout: Duration,
) -> Result<(Vec<TransitionEvent>, u64)> {
    let started = Instant::now();
    let mut cursor = cursor.unwrap_or_else(transitions::end);
    loop {
        let (events, next) = transitions::read_from(cursor)?;
        cursor = next;
        let events: Vec<_> = events.into_iter().filter(|e| scope.holds(e)).collect();
        if !events.is_empty() || started.elapsed() >= timeout {
            return Ok((events, cursor));
        }
        std::thread::sleep(POLL.min(timeout.saturating_sub(started.elapsed())));
    }
}

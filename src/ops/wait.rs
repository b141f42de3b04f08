use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::refresh::{Refreshed, refresh};
use super::view::TaskView;
use crate::error::Result;
use crate::launch::EXIT_CODE_FILE;
use crate::status::Status;
use crate::store::{self, TaskRecord};

/// The sentinel is a file, so noticing an exit costs one `stat` per pending task per tick:
/// a fine tick keeps `wait` within tens of milliseconds of the child's exit.
const SENTINEL_TICK: Duration = Duration::from_millis(10);
/// Panes that vanish without a sentinel, cancels by other processes, due timeouts and screens
/// are looked at by a full refresh at this pace.
const FULL_REFRESH_EVERY: Duration = Duration::from_millis(250);
/// A child must be seen needing a human for this long before `--until input-required` returns,
/// so a screen caught between two frames of a redraw does not end the wait.
const ATTENTION_SETTLE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitUntil {
    /// The task has ended.
    Ended,
    /// The task has ended or its child waits on a human (a dialog, or idle at its prompt).
    InputRequired,
}

#[derive(Debug, Clone)]
pub struct WaitRequest {
    pub task_ids: Vec<String>,
    /// Return when the first task is done instead of all of them.
    pub any: bool,
    pub timeout: Option<Duration>,
    pub until: WaitUntil,
}

#[derive(Debug, Clone)]
pub struct WaitOutcome {
    pub tasks: Vec<TaskView>,
    pub timed_out: bool,
}

/// Where a wait stands, for a live line: told after each full refresh.
#[derive(Debug, Clone)]
pub struct WaitTick {
    pub elapsed: Duration,
    pub running: usize,
    pub ended: usize,
    /// The latest write to an unfinished task's transcript.
    pub last_activity: Option<SystemTime>,
}

pub fn wait(request: &WaitRequest, cwd: &Path) -> Result<WaitOutcome> {
    wait_watching(request, cwd, &mut |_| {})
}

/// [`wait`], telling `watch` where it stands after each full refresh.
pub fn wait_watching(
    request: &WaitRequest,
    cwd: &Path,
    watch: &mut dyn FnMut(&WaitTick),
) -> Result<WaitOutcome> {
    let started = Instant::now();
    let mut refreshed = refresh(super::open_all(&request.task_ids, cwd)?)?;
    // Since when each task has been seen needing a human, without a break.
    let mut attention_since: Vec<Option<Instant>> = vec![None; request.task_ids.len()];
    loop {
        let views = match request.until {
            WaitUntil::InputRequired => Some(refreshed.views()),
            WaitUntil::Ended => None,
        };
        let settled = refreshed
            .records
            .iter()
            .enumerate()
            .filter(|(i, record)| {
                let needs_human = views
                    .as_ref()
                    .is_some_and(|v| v[*i].status == Status::InputRequired);
                let since = &mut attention_since[*i];
                *since = if needs_human {
                    Some(since.unwrap_or_else(Instant::now))
                } else {
                    None
                };
                record.status.is_terminal()
                    || since.is_some_and(|t| t.elapsed() >= ATTENTION_SETTLE)
            })
            .count();
        let done = if request.any {
            settled > 0
        } else {
            settled == refreshed.records.len()
        };
        let timed_out = request
            .timeout
            .is_some_and(|limit| started.elapsed() >= limit);
        if done || timed_out {
            return Ok(WaitOutcome {
                tasks: views.unwrap_or_else(|| refreshed.views()),
                timed_out: !done,
            });
        }
        watch(&tick(&refreshed.records, started));
        wait_for_change(&refreshed, started, request.timeout);
        refreshed = refresh(reload(&refreshed.records)?)?;
    }
}

/// Sleeps until a sentinel appears or a full refresh is due (or the wait's own timeout).
fn wait_for_change(refreshed: &Refreshed, started: Instant, timeout: Option<Duration>) {
    let since = Instant::now();
    while since.elapsed() < FULL_REFRESH_EVERY
        && timeout.is_none_or(|limit| started.elapsed() < limit)
    {
        std::thread::sleep(SENTINEL_TICK);
        if refreshed.records.iter().any(sentinel_appeared) {
            return;
        }
    }
}

fn tick(records: &[TaskRecord], started: Instant) -> WaitTick {
    let ended = records.iter().filter(|r| r.status.is_terminal()).count();
    WaitTick {
        elapsed: started.elapsed(),
        running: records.len() - ended,
        ended,
        last_activity: records
            .iter()
            .filter(|r| !r.status.is_terminal())
            .filter_map(|r| {
                std::fs::metadata(super::transcript_path(r))
                    .ok()?
                    .modified()
                    .ok()
            })
            .max(),
    }
}

fn sentinel_appeared(record: &TaskRecord) -> bool {
    !record.status.is_terminal() && record.task_dir.join(EXIT_CODE_FILE).exists()
}

/// Re-reads records, so endings written by other processes (a cancel) are seen.
fn reload(records: &[TaskRecord]) -> Result<Vec<TaskRecord>> {
    records.iter().map(|r| store::load(&r.task_dir)).collect()
}

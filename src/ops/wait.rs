use std::path::Path;
use std::time::{Duration, Instant};

use super::refresh::refresh;
use super::view::TaskView;
use crate::error::Result;
use crate::launch::EXIT_CODE_FILE;
use crate::status::Status;
use crate::store::{self, TaskRecord};

/// The sentinel is a file, so noticing an exit costs one `stat` per pending task per tick:
/// a fine tick keeps `wait` within tens of milliseconds of the child's exit.
const SENTINEL_TICK: Duration = Duration::from_millis(10);
/// Panes that vanish without a sentinel, cancels by other processes and due timeouts are
/// caught by a full refresh (one tmux call) at this pace.
const FULL_REFRESH_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
pub struct WaitRequest {
    pub task_ids: Vec<String>,
    /// Return when the first task ends instead of all of them.
    pub any: bool,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct WaitOutcome {
    pub tasks: Vec<TaskView>,
    pub timed_out: bool,
}

impl WaitOutcome {
    pub fn all_completed(&self) -> bool {
        self.tasks
            .iter()
            .all(|task| task.status == Status::Completed)
    }
}

pub fn wait(request: &WaitRequest, cwd: &Path) -> Result<WaitOutcome> {
    let started = Instant::now();
    let mut records = refresh(super::open_all(&request.task_ids, cwd)?)?;
    let mut last_full = Instant::now();
    loop {
        let ended = records.iter().filter(|r| r.status.is_terminal()).count();
        let done = if request.any {
            ended > 0
        } else {
            ended == records.len()
        };
        let timed_out = request
            .timeout
            .is_some_and(|limit| started.elapsed() >= limit);
        if done || timed_out {
            return Ok(WaitOutcome {
                tasks: records.iter().map(TaskView::from).collect(),
                timed_out: !done,
            });
        }
        std::thread::sleep(SENTINEL_TICK);
        if last_full.elapsed() >= FULL_REFRESH_EVERY || records.iter().any(sentinel_appeared) {
            records = refresh(reload(&records)?)?;
            last_full = Instant::now();
        }
    }
}

fn sentinel_appeared(record: &TaskRecord) -> bool {
    !record.status.is_terminal() && record.task_dir.join(EXIT_CODE_FILE).exists()
}

/// Re-reads records, so endings written by other processes (a cancel) are seen.
fn reload(records: &[TaskRecord]) -> Result<Vec<TaskRecord>> {
    records.iter().map(|r| store::load(&r.task_dir)).collect()
}

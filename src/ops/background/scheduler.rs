//! The scheduler process (`cuekit __scheduler`, one per user): it looks at the queue every
//! tick while anything waits, and starts what is due (the decisions are
//! [`crate::ops::schedule`]'s).

use std::path::Path;
use std::time::Duration;

use super::scheduler_watch::Watch;
use crate::domain::error::Result;
use crate::effects::store::{self, schedule as queue_files};
use crate::ops::schedule;

/// How often the scheduler process looks: a freed slot is taken within this.
const TICK: Duration = Duration::from_millis(400);

/// `cuekit __scheduler`: looks at the queue every tick until nothing waits; one per user.
///
/// Whoever queues a task and finds the runner's lock held leaves the start to its holder, so
/// a runner that found the queue empty looks again once its lock is dropped: a task queued
/// in between is never left without a runner.
pub fn run_scheduler() -> Result<()> {
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::setsid();
    }
    let Some(path) = queue_files::runner_lock_path() else {
        return Ok(());
    };
    let data = store::data_dir();
    let served = data.as_deref().and_then(dir_identity);
    loop {
        let Some(lock) = store::lock_file_try(&path)? else {
            return Ok(());
        };
        if serve_until_empty(&path, data.as_deref(), served) == Served::DataGone {
            return Ok(());
        }
        drop(lock);
        if !queue_files::any_queued() && queue_files::claimed_ids().is_empty() {
            return Ok(());
        }
        // A start under way elsewhere holds a claim: looked at again a tick later, not in a
        // tight loop.
        std::thread::sleep(TICK);
    }
}

#[derive(PartialEq, Eq)]
enum Served {
    QueueEmpty,
    /// The user's data is gone (a throw-away HOME removed): nothing left to serve.
    DataGone,
}

/// Looks at the queue while anything waits; each look taken is counted beside `lock`
/// (`scheduler.ticks`, [`record_tick`](super::monitor_lock::record_tick)).
fn serve_until_empty(lock: &Path, data: Option<&Path>, served: Option<(u64, u64)>) -> Served {
    let mut watch = Watch::default();
    loop {
        if served.is_none() || data.and_then(dir_identity) != served {
            return Served::DataGone;
        }
        if watch.due() {
            let looked = schedule::start_due();
            super::monitor_lock::record_tick(lock);
            match looked {
                Ok(looked) if !looked.waiting => return Served::QueueEmpty,
                Ok(looked) => watch.looked(looked.next_due),
                // A look that fails (a full disk) is taken again on the next tick.
                Err(_) => watch.looked(None),
            }
        }
        std::thread::sleep(TICK);
    }
}

fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).ok()?;
    Some((meta.dev(), meta.ino()))
}

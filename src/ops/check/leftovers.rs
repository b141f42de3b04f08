//! What an unsandboxed child left running is ended before its check: a process it started in
//! the background (`setsid -f`, `nohup … &`) runs as you and could rewrite the check's scratch
//! checkout while the commands run, so that the check passes on work that fails it. The
//! task's own processes are found as `cancel` finds them (its pane's process group, and
//! `CUEKIT_TASK_ID=<id>` in their environment) and ended, sparing the launch that runs this
//! check: this process's ancestors and their own children (the batch loop's shells, its event
//! filter).
//!
//! Only where the child is done: a batch task's launch check (its agent exited), and a
//! parent's `cuekit check` of a task that ended. A check taken while the child still runs (an
//! interactive or ACP task's check, a parent's mid-work check) runs beside it; a sandboxed
//! child cannot reach the scratch checkout at all, and its network supervisor stays for a fix
//! round.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::domain::spec::Mode;
use crate::ops::task::Task;

/// How long a leftover gets after `SIGTERM` before `SIGKILL`.
const GRACE: Duration = Duration::from_millis(200);
/// How many times the task's processes are looked for again (one may have forked meanwhile).
const PASSES: usize = 3;

/// Ends the task's leftover processes before its check when the child is done; the pids ended.
pub(super) fn end_before_check(task: &Task, from_launch: bool) -> Vec<u32> {
    if !child_is_done(task, from_launch) {
        return Vec::new();
    }
    let ancestors: BTreeSet<u32> = crate::effects::process::ancestry(std::process::id())
        .into_iter()
        .collect();
    let mut ended = Vec::new();
    for _ in 0..PASSES {
        let found = crate::effects::process::task_processes(&task.record.id, task.group_leader());
        // The launch: this check's ancestors that are the task's (never tmux's server, init
        // or a subreaper, which take in the orphans a child leaves).
        let launch: BTreeSet<u32> = found.intersection(&ancestors).copied().collect();
        let left: BTreeSet<u32> = found
            .into_iter()
            .filter(|pid| !launch.contains(pid) && !of_the_launch(*pid, &launch))
            .collect();
        if left.is_empty() {
            break;
        }
        ended.extend(left.iter().copied());
        crate::effects::process::terminate(left, GRACE);
    }
    ended.sort_unstable();
    ended.dedup();
    ended
}

/// Whether the child has nothing running that may: an unsandboxed batch task checked by its
/// launch (its agent exited), or one that ended.
fn child_is_done(task: &Task, from_launch: bool) -> bool {
    if task.in_bubblewrap() {
        return false;
    }
    if from_launch {
        return task.record.mode == Mode::Batch;
    }
    crate::ops::task::reread(&task.placement)
        .map_or(task.record.status, |record| record.status)
        .is_terminal()
}

/// Whether `pid` is a child of the launch running this check (a shell of its loop, its event
/// filter): a leftover of the child's has outlived its parent, or hangs under another.
fn of_the_launch(pid: u32, launch: &BTreeSet<u32>) -> bool {
    crate::effects::process::ancestry(pid)
        .get(1)
        .is_some_and(|parent| launch.contains(parent))
}

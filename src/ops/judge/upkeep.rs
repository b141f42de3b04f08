//! The upkeep a read does on purpose, before it looks: the reads that keep cuekit going when
//! nobody else does (`list`, `status`, `wait`, `top`, `rm`/`prune`, the monitor) call
//! [`look_after`]; a `steer`, an `approve`, `logs` or `result` do only their own work.

use std::collections::HashSet;

use crate::domain::status::Status;
use crate::effects::tmux::Socket;
use crate::ops::background::monitor_lock;
use crate::ops::task::Task;

/// Undoes submits that were interrupted, serves the queue after a reboot (or a killed
/// scheduler), finishes the queuing a killed decision left, finishes stops a killed caller left, reaps what a killed check runner left, and
/// starts the monitor of every server with a running task among `tasks` (transitions are
/// announced whoever watches).
pub fn look_after(tasks: &[Task]) {
    crate::ops::reap::reap_orphans();
    monitor_lock::ensure_scheduler();
    super::stop_now::resume_abandoned_stops(tasks);
    // A check left `checking` by a runner that was killed: its processes and scratch checkout
    // go, and its phase moves on (the record's copy says which tasks to ask the registry about).
    for task in tasks.iter().filter(|task| {
        task.record
            .check
            .as_ref()
            .is_some_and(|check| check.phase == crate::domain::check::Phase::Checking)
    }) {
        crate::ops::check::reap_killed_runner(task);
    }
    // A task left `queued` with no queue mark by a decision that was killed half-way.
    for task in tasks
        .iter()
        .filter(|task| task.record.status == Status::Queued)
    {
        crate::ops::schedule::stranded::repair(task);
    }
    let sockets: HashSet<&Socket> = tasks
        .iter()
        .filter(|task| task.record.status == Status::Running)
        .map(|task| &task.placement.socket)
        .collect();
    for socket in sockets {
        monitor_lock::ensure_running(socket);
    }
}

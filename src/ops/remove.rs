//! `cuekit rm` and `cuekit prune`: ended tasks go with their record, transcript, worktree and
//! branch. A running task is never removed; a worktree that holds work (or that cannot be
//! inspected) is kept, and its task with it, unless forced.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::task::{Found, Task};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::status::Status;
use crate::effects::git::checked;
use crate::effects::git::cleanup::{self, Cleanup, KeepReason};
use crate::effects::store::{self, TaskRecord};
use crate::effects::tmux::{Tmux, args};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemovalOutcome {
    Removed,
    Kept,
    /// `--dry-run`: would be removed.
    WouldRemove,
    /// `--dry-run`: would be kept.
    WouldKeep,
}

/// Read back from a host's JSON too (`ops::remote::remove_on_host`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Removal {
    pub task_id: String,
    pub outcome: RemovalOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<KeepReason>,
    /// The refs of check commits that nothing merged, left in the user's repository
    /// (`git update-ref -d` drops one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_refs: Vec<String>,
}

impl Removal {
    /// A task removed (or, in a dry run, to be removed), with nothing kept.
    pub(crate) fn of(task_id: &str, dry_run: bool) -> Removal {
        Removal {
            task_id: task_id.to_string(),
            outcome: if dry_run {
                RemovalOutcome::WouldRemove
            } else {
                RemovalOutcome::Removed
            },
            worktree: None,
            branch: None,
            reasons: Vec::new(),
            kept_refs: Vec::new(),
        }
    }
}

/// Which ended tasks `prune` takes.
#[derive(Debug, Clone, Default)]
pub struct PruneFilter {
    pub older_than: Option<Duration>,
    /// Empty: every ended status.
    pub statuses: Vec<Status>,
}

/// Only tasks cuekit may act on (see [`super::task`]): a record written by anything else could
/// name any folder as its worktree. A host's tasks are removed by their host, then forgotten
/// here.
///
/// A registered task whose record is gone and of which nothing runs is what a killed `rm`
/// leaves (its directory removed, not yet its registry entry): its removal is finished from
/// the registry alone (see [`remove_leftover`]).
pub fn remove(task_ids: &[String], cwd: &Path, force: bool, dry_run: bool) -> Result<Vec<Removal>> {
    let races: Vec<&String> = task_ids
        .iter()
        .filter(|id| crate::domain::race::is_race_id(id))
        .collect();
    if races.is_empty() {
        return remove_tasks(task_ids, cwd, force, dry_run);
    }
    let records = races
        .iter()
        .map(|race| crate::effects::store::race::load(race))
        .collect::<Result<Vec<_>>>()?;
    let removed = remove_tasks(
        &crate::effects::store::race::expand(task_ids)?,
        cwd,
        force,
        dry_run,
    )?;
    // Its candidates are gone: so is what the race kept of them.
    let all_gone = removed.iter().all(|r| r.outcome == RemovalOutcome::Removed);
    if !dry_run && all_gone {
        for record in records {
            super::race::forget(&record.id, record.repo.as_deref())?;
        }
    }
    Ok(removed)
}

fn remove_tasks(
    task_ids: &[String],
    cwd: &Path,
    force: bool,
    dry_run: bool,
) -> Result<Vec<Removal>> {
    if let crate::ops::task::route::Route::Host(host) = crate::ops::task::route::route(task_ids)? {
        return super::remote::remove_on_host(&host, task_ids, (force, dry_run), cwd);
    }
    let mut tasks = Vec::new();
    let mut leftovers = Vec::new();
    for id in task_ids {
        match super::task::find(id, cwd)? {
            Found::Unreadable {
                placement, pane, ..
            } if !placement.task_dir.join(store::RECORD_FILE).exists() => {
                let leader = super::task::leader_of(pane.as_ref());
                if !crate::effects::process::task_processes(id, leader).is_empty() {
                    return Err(Error::new(
                        ErrorCode::InvalidState,
                        format!(
                            "task {id}'s record is gone but its processes still run; \
                             nothing was removed"
                        ),
                    )
                    .with_hint(format!("cancel it first (`cuekit cancel {id}`)")));
                }
                leftovers.push(placement);
            }
            Found::Trusted(task) => tasks.push(*task),
            Found::Untrusted { id, why, .. } => {
                return Err(super::task::untrusted_error(&id, &why));
            }
            Found::Unreadable { error, .. } => return Err(error),
        }
    }
    super::judge::look_after(&tasks);
    let tasks = super::judge::refresh(tasks)?.tasks;
    // A queued task has not started: removing it takes it out of the queue.
    if let Some(running) = tasks
        .iter()
        .map(|t| &t.record)
        .find(|r| !r.status.is_terminal() && r.status != crate::domain::status::Status::Queued)
    {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {} is still running; nothing was removed", running.id),
        )
        .with_hint(format!("cancel it first (`cuekit cancel {}`)", running.id)));
    }
    // A check of a task (a parent's `cuekit check`) is never cut off: refused while one runs,
    // and none starts until the removal is over.
    let _checks = if dry_run {
        Vec::new()
    } else {
        tasks
            .iter()
            .map(crate::ops::check::hold_for_removal)
            .collect::<Result<Vec<_>>>()?
    };
    let tasks = if dry_run {
        tasks
    } else {
        tasks
            .into_iter()
            .map(super::schedule::withdraw)
            .collect::<Result<Vec<_>>>()?
    };
    let mut removals = tasks
        .iter()
        .map(|task| remove_one(task, force, dry_run))
        .collect::<Result<Vec<_>>>()?;
    for placement in &leftovers {
        removals.push(remove_leftover(placement, dry_run)?);
    }
    Ok(removals)
}

/// Finishes the removal of a task whose record is gone and of which nothing runs, from the
/// registry alone: its session, what is left of its task directory (the registry's, never a
/// record's), its entry. What its record named (a worktree, a branch) is not known here, and
/// is left as it is.
fn remove_leftover(placement: &store::Placement, dry_run: bool) -> Result<Removal> {
    let removal = Removal::of(&placement.id, dry_run);
    if dry_run {
        return Ok(removal);
    }
    if let Some(stop) = crate::ops::background::monitor_lock::resume_stop(&placement.id) {
        // Nothing of the task runs: a stop begun on it is over.
        stop.finish();
    }
    let _ = Tmux::new(placement.socket.clone()).run(&args::kill_session(&placement.session));
    match remove_task_dir(&placement.task_dir) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io("remove", &placement.task_dir, err));
        }
        _ => {}
    }
    store::unregister(&placement.id);
    Ok(removal)
}

/// This project's trusted tasks that match the filter; untrusted records are never touched.
pub fn prune(cwd: &Path, filter: &PruneFilter, force: bool, dry_run: bool) -> Result<Vec<Removal>> {
    let trusted: Vec<Task> = super::task::scan_project(cwd)?
        .into_iter()
        .filter_map(|found| match found {
            Found::Trusted(task) => Some(*task),
            _ => None,
        })
        .collect();
    let now = SystemTime::now();
    super::judge::look_after(&trusted);
    let mut tasks: Vec<Task> = super::judge::refresh(trusted)?
        .tasks
        .into_iter()
        .filter(|task| selected(&task.record, filter, now))
        .collect();
    tasks.sort_by(|a, b| a.record.created_at.cmp(&b.record.created_at));
    tasks
        .iter()
        .map(|task| remove_one(task, force, dry_run))
        .collect()
}

/// Pure: an ended task matching the filter.
fn selected(record: &TaskRecord, filter: &PruneFilter, now: SystemTime) -> bool {
    if !record.status.is_terminal() {
        return false;
    }
    if !filter.statuses.is_empty() && !filter.statuses.contains(&record.status) {
        return false;
    }
    match filter.older_than {
        None => true,
        Some(age) => record
            .ended_at
            .as_deref()
            .and_then(|t| humantime::parse_rfc3339(t).ok())
            .is_some_and(|ended| ended + age <= now),
    }
}

fn remove_one(task: &Task, force: bool, dry_run: bool) -> Result<Removal> {
    let record = &task.record;
    let mut removal = Removal::of(&record.id, dry_run);
    if let Some(worktree) = task.worktree() {
        removal.worktree = Some(worktree.path.clone());
        let merged = store::merge_of(&record.id);
        let target = cleanup::Target {
            task: crate::effects::git::checkout::Checkout {
                placed: worktree,
                scratch: &record.task_dir,
            },
            merged: merged.as_ref(),
        };
        if dry_run {
            let inspection = cleanup::inspect(&target);
            removal.branch = inspection.branch_tip.map(|_| match worktree.own_repo() {
                true => worktree.work_ref(),
                false => worktree.branch.clone(),
            });
            if !inspection.keep.is_empty() && !force {
                removal.outcome = RemovalOutcome::WouldKeep;
                removal.reasons = inspection.keep;
            }
            return Ok(removal);
        }
        // Any doubt keeps it: a repository that cannot be asked (moved, broken) included.
        match cleanup::remove(&target, force) {
            Ok(Cleanup::Kept { reasons, .. }) => {
                removal.outcome = RemovalOutcome::Kept;
                removal.reasons = reasons;
                return Ok(removal);
            }
            Err(err) => {
                removal.outcome = RemovalOutcome::Kept;
                removal.reasons = vec![KeepReason::InspectionFailed(err.message)];
                return Ok(removal);
            }
            Ok(Cleanup::Removed { branch, .. }) => removal.branch = branch,
        }
        let root = crate::effects::git::Git::new(&worktree.repo_root);
        let merged_head = merged.as_ref().map(|merge| merge.head.as_str());
        removal.kept_refs = checked::forget(&root, &record.id, merged_head, force)?;
    }
    if dry_run {
        return Ok(removal);
    }
    // A stop cut short is finished first: removing the task would leave its processes to nobody.
    super::judge::finish_stop(task)?;
    // A dead pane left by remain-on-exit: gone already is fine.
    let placement = &task.placement;
    let _ = Tmux::new(placement.socket.clone()).run(&args::kill_session(&placement.session));
    match remove_task_dir(&placement.task_dir) {
        // A concurrent `rm` or `prune` of the same task got there first.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(Error::io("remove", &placement.task_dir, err)),
        Ok(()) => {}
    }
    store::unregister(&record.id);
    Ok(removal)
}

/// Removes a task's directory. A late writer (the monitor announcing the ending it saw a tick
/// ago, appending to `events.jsonl`) can put a file back while the folder is emptied: the
/// removal is tried again, a few times, rather than failing the `rm`. Once the folder is gone,
/// such a writer finds no folder and makes none.
fn remove_task_dir(dir: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::remove_dir_all(dir) {
            Err(err) if err.kind() == std::io::ErrorKind::DirectoryNotEmpty && tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_takes_only_ended_tasks_of_the_asked_statuses_and_age() {
        let json = r#"{"id":"t_000000000001","spec":{"objective":"x","agent_kind":"command"},
            "mode":"batch","cwd":"/p","task_dir":"/p/.cuekit/tasks/t_000000000001",
            "launch_command":"true","status":"completed","created_at":"2026-01-01T00:00:00Z",
            "ended_at":"2026-01-01T00:10:00Z"}"#;
        let record: TaskRecord = serde_json::from_str(json).unwrap();
        let at = |min: u64| {
            humantime::parse_rfc3339("2026-01-01T00:00:00Z").unwrap()
                + Duration::from_secs(min * 60)
        };
        let all = PruneFilter::default();
        assert!(selected(&record, &all, at(11)));
        let old = PruneFilter {
            older_than: Some(Duration::from_secs(3600)),
            statuses: vec![],
        };
        assert!(!selected(&record, &old, at(30)));
        assert!(selected(&record, &old, at(70)));
        let failed_only = PruneFilter {
            older_than: None,
            statuses: vec![Status::Failed],
        };
        assert!(!selected(&record, &failed_only, at(11)));
        let mut running = record.clone();
        running.status = Status::Running;
        assert!(!selected(&running, &all, at(11)));
    }
}

//! After a sandboxed task: what its child left in the folders of yours it could write, made
//! harmless once nothing of it runs. In an in-place folder (which held no repository when the
//! task started: the submit and every launch refuse one) a repository it planted — a `.git`,
//! file or folder, at any depth, or a folder shaped as a git dir — is moved aside where git
//! does not look (`.git.cuekit-quarantine-<id>`), never deleted: your next `git status` there,
//! or a shell prompt's, would run its hooks and fsmonitor unsandboxed. In that folder, the
//! task's own checkout and every `sandbox.write` folder, the set-user-ID and set-group-ID bits
//! of the files changed since the task was submitted are stripped: such a program is one any
//! local user could run as the child's owner. Each is said in the task's warnings.

use std::path::PathBuf;
use std::time::SystemTime;

use crate::domain::sandbox;
use crate::effects::project::left::{self, Tidy, WALK_LIMIT};
use crate::effects::store::{self, Placement};
use crate::ops::background::monitor_lock;
use crate::ops::task::Task;

/// The marker in the task's folder that says its folders were tidied (or are being) after an
/// attempt (`-<started_at>` added for one the scheduler started).
pub const TIDIED_FILE: &str = "sandbox-tidied";

/// Tidies what the task's sandboxed child left, once: when the task is here, in bubblewrap,
/// ended and not being stopped (its processes are gone); its notes go into its warnings.
/// Anything else: nothing. For a stop, once nothing of the task runs.
pub(crate) fn after_end(task: &Task) {
    if !task.record.status.is_terminal() {
        return;
    }
    let notes = tidy(&task.placement, task.record.started_at.as_deref());
    if notes.is_empty() {
        return;
    }
    let _ = store::update(&task.placement.task_dir, |record| {
        record.warnings.extend(notes);
        Ok(true)
    });
}

/// Tidies what the sandboxed child of the task `placement` says left, once an attempt (the
/// first caller claims it; `attempt`: when the attempt started, the record's `started_at`):
/// what it did, as notes for the task's warnings. Called for an ending being
/// recorded (under the record's lock, so nobody reads the ending before its folders are
/// tidied) or a stop that is over; nothing for a task not here, not in bubblewrap, or whose
/// stop is still ending its processes.
pub(crate) fn tidy(placement: &Placement, attempt: Option<&str>) -> Vec<String> {
    if !placement.in_bubblewrap()
        || placement.host.is_some()
        || monitor_lock::is_stopping(&placement.id)
    {
        return Vec::new();
    }
    let Some(facts) = placement.facts.as_deref() else {
        return Vec::new();
    };
    let marker = match attempt {
        Some(started) => format!("{TIDIED_FILE}-{started}"),
        None => TIDIED_FILE.to_string(),
    };
    if !left::claim(&placement.task_dir.join(marker)) {
        return Vec::new();
    }
    let since = humantime::parse_rfc3339(&placement.created_at).unwrap_or(SystemTime::UNIX_EPOCH);
    let id = placement.id.as_str();
    let in_place = facts.worktree.is_none();
    let mut folders: Vec<(PathBuf, bool)> = vec![(
        facts
            .worktree
            .as_ref()
            .map_or_else(|| facts.cwd.clone(), |worktree| worktree.path.clone()),
        in_place,
    )];
    for write in placement.sandbox_policy().write {
        if let Ok(real) = write.canonicalize()
            && !folders.iter().any(|(folder, _)| real.starts_with(folder))
        {
            folders.push((real, false));
        }
    }
    let mut notes = Vec::new();
    for (folder, quarantine) in folders {
        let how = Tidy {
            quarantine: quarantine.then_some(id),
            since,
        };
        let tidied = left::tidy(&folder, &how);
        notes.extend(
            tidied
                .moved
                .iter()
                .map(|(from, to)| sandbox::quarantine_note(from, to)),
        );
        if let Some(first) = tidied.stripped.first() {
            notes.push(sandbox::stripped_note(tidied.stripped.len(), first));
        }
        if tidied.cut_short {
            notes.push(sandbox::tidy_cut_short_note(&folder, WALK_LIMIT));
        }
    }
    notes
}

//! `status` and `list`: tasks judged now, and rows for the records cuekit will not act on
//! (untrusted) or cannot read, so one bad record never hides the others.

use std::path::Path;

use std::collections::HashMap;

use super::judge::{EarlyLook, PaneKey, Refreshed, ScreenCache, refresh, refresh_after};
use super::task::{Found, Task, find, scan_project_each, scan_registry_each};
use crate::domain::error::Result;
use crate::domain::status::Status;
use crate::effects::process::task_processes;
use crate::ops::task::view::TaskView;

/// The tasks' views, with live progress for running tasks that stream events (a file read
/// each, which `list` leaves out), and for ended tasks whose pane went away, the processes that
/// outlived it.
/// A host's tasks are asked of their hosts (one call per host, in parallel) and keep their
/// place among the ids given.
pub fn status(task_ids: &[String], cwd: &Path) -> Result<Vec<TaskView>> {
    let task_ids = &crate::effects::store::race::expand(task_ids)?;
    let on_hosts = super::remote::by_host(task_ids.iter().cloned());
    if on_hosts.is_empty() {
        return local_status(task_ids, cwd);
    }
    let local: Vec<String> = task_ids
        .iter()
        .filter(|id| !on_hosts.values().flatten().any(|p| &p.id == *id))
        .cloned()
        .collect();
    let local = if local.is_empty() {
        Vec::new()
    } else {
        local_status(&local, cwd)?
    };
    let mut views: HashMap<String, TaskView> = super::remote::host_views(on_hosts, false, cwd)?
        .into_iter()
        .chain(local)
        .map(|view| (view.id.clone(), view))
        .collect();
    Ok(task_ids.iter().filter_map(|id| views.remove(id)).collect())
}

fn local_status(task_ids: &[String], cwd: &Path) -> Result<Vec<TaskView>> {
    // Before any record is read: a half-made submit is undone, never shown (nor an unknown id
    // left unreaped).
    super::reap::reap_orphans();
    let mut rows = Rows::new(true);
    for id in task_ids {
        rows.take(find(id, cwd)?);
    }
    let (mut views, _, _) = views_of(rows, None, None, None)?;
    for view in &mut views {
        if matches!(view.status, Status::Running | Status::InputRequired)
            && view
                .capabilities
                .as_ref()
                .is_some_and(|c| c.supports_live_progress)
        {
            view.progress = crate::ops::background::stream::read_progress(&view.task_dir);
        }
    }
    Ok(views)
}

/// This project's tasks (nearest `.cuekit/tasks` above `cwd`), or every registered task,
/// hosts' tasks included (each host asked once, in parallel).
pub fn list(all: bool, cwd: &Path) -> Result<Vec<TaskView>> {
    let mut views = listing(all, cwd, None, None)?.views;
    if all {
        let on_hosts = super::remote::by_host(crate::effects::store::registered_ids()?);
        if !on_hosts.is_empty() {
            views.extend(super::remote::host_views(on_hosts, true, cwd)?);
            sort_oldest_first(&mut views);
        }
    }
    Ok(views)
}

fn sort_oldest_first(views: &mut [TaskView]) {
    // Unstable (no buffer the size of the listing): no two views share an id.
    views.sort_unstable_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// What `list` shows, and what a dashboard needs beside it.
pub(crate) struct Listing {
    /// Oldest first.
    pub views: Vec<TaskView>,
    /// The trusted tasks, judged.
    pub refreshed: Refreshed,
    /// The screens captured for the views (and for `also`).
    pub screens: HashMap<PaneKey, String>,
}

/// [`list`], with the screen of task `also` captured in the same tmux call.
/// With `cache`, screens unchanged since an earlier listing are taken from it, not captured.
pub(crate) fn listing(
    all: bool,
    cwd: &Path,
    also: Option<&str>,
    cache: Option<&mut ScreenCache>,
) -> Result<Listing> {
    let early = super::task::server_of_many(all, cwd).map(EarlyLook::begin);
    // Before the scan: a killed submit's record is undone, never listed as untrusted.
    super::reap::reap_orphans();
    let mut rows = Rows::new(false);
    if all {
        scan_registry_each(|item| rows.take(item))?;
    } else {
        scan_project_each(cwd, |item| rows.take(item))?;
    }
    let (mut views, refreshed, screens) = views_of(rows, also, cache, early)?;
    sort_oldest_first(&mut views);
    Ok(Listing {
        views,
        refreshed,
        screens,
    })
}

/// Rows in the order found: the trusted tasks, to be judged together, and the few rows that are
/// not judged, with their places. A view is about a kilobyte: a listing of a thousand tasks
/// holds one array of tasks and one of views, never each task twice.
struct Rows {
    trusted: Vec<Task>,
    others: Vec<(usize, TaskView)>,
    /// Whether tasks whose pane went away are checked for processes that outlived it (a scan
    /// of /proc each, so not for listings).
    survivors: bool,
}

impl Rows {
    fn new(survivors: bool) -> Rows {
        Rows {
            trusted: Vec::new(),
            others: Vec::new(),
            survivors,
        }
    }

    fn take(&mut self, item: Found) {
        // Every row before this one is in one of the two.
        let place = self.trusted.len() + self.others.len();
        match item {
            Found::Trusted(task) => self.trusted.push(*task),
            Found::Untrusted {
                id,
                task_dir,
                record,
                why,
            } => self.others.push((
                place,
                TaskView::untrusted(&id, &task_dir, record.as_deref(), &why),
            )),
            Found::Unreadable {
                placement,
                pane,
                error,
            } => {
                let mut view = TaskView::unreadable(&placement, &error);
                if self.survivors {
                    let alive =
                        task_processes(&placement.id, super::task::leader_of(pane.as_ref()));
                    view.survivors = Some(alive.into_iter().collect());
                }
                self.others.push((place, view));
            }
        }
    }
}

/// The rows' views in the order found: trusted tasks judged together (one look per tmux
/// server).
fn views_of(
    rows: Rows,
    also: Option<&str>,
    cache: Option<&mut ScreenCache>,
    early: Option<EarlyLook>,
) -> Result<(Vec<TaskView>, Refreshed, HashMap<PaneKey, String>)> {
    let Rows {
        trusted,
        others,
        survivors,
    } = rows;
    let looked_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    super::judge::look_after(&trusted);
    let mut refreshed = match early {
        Some(early) => refresh_after(trusted, early)?,
        None => refresh(trusted)?,
    };
    let (mut views, screens) = match cache {
        Some(cache) => refreshed.views_and_screens_cached(also, cache, looked_at),
        None => refreshed.views_and_screens(also),
    };
    if survivors {
        for (view, task) in views.iter_mut().zip(&refreshed.tasks) {
            if pane_went_away(view) {
                view.survivors = Some(
                    task_processes(&task.record.id, task.group_leader())
                        .into_iter()
                        .collect(),
                );
            }
        }
    }
    super::schedule::explain(&mut views, survivors);
    // In the order found: each place counts the rows before it, judged or not.
    for (place, view) in others {
        views.insert(place, view);
    }
    Ok((views, refreshed, screens))
}

/// An ending in which the pane did not finish on its own (no exit code was seen).
fn pane_went_away(view: &TaskView) -> bool {
    view.status.is_terminal() && view.exit_code.is_none()
}

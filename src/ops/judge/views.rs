//! A refresh's tasks as views: statuses, screens (captured once per pane and kept between
//! refreshes of a dashboard), the hints a person reads.

use std::collections::HashMap;

use super::look::{PaneKey, Refreshed, Snapshot, find_pane};
use super::stop::is_stopping;
use crate::domain::adapter;
use crate::domain::attention;
use crate::domain::error::Result;
use crate::domain::spec::Mode;
use crate::domain::status::Status;
use crate::effects::tmux::{PaneInfo, Socket, Tmux};
use crate::ops::task::Task;
use crate::ops::task::view::TaskView;

/// Screens captured by earlier refreshes, by pane id, with when each was captured (unix
/// seconds). A dashboard refreshing every second then captures only the panes whose window
/// printed since: an idle screen of hundreds of tasks costs no capture at all.
#[derive(Debug, Default)]
pub struct ScreenCache {
    screens: HashMap<PaneKey, (u64, String)>,
}

impl ScreenCache {
    /// Keeps the screens a refresh used: the reused ones as they were, the others as captured
    /// `now`. Panes it did not use (gone, ended, not interactive) are forgotten.
    fn remember(&mut self, used: &HashMap<PaneKey, String>, reused: &[PaneKey], now: u64) {
        let mut kept = HashMap::with_capacity(used.len());
        for (key, screen) in used {
            let entry = match self.screens.remove(key) {
                Some(entry) if reused.contains(key) => entry,
                _ => (now, screen.clone()),
            };
            kept.insert(key.clone(), entry);
        }
        self.screens = kept;
    }
}

impl Refreshed {
    /// Whether the task's ending is shown but not on record yet: the next look writes it.
    pub fn is_unrecorded(&self, task: &Task) -> bool {
        self.unrecorded.contains(&task.record.id)
    }

    /// Takes from `cache` the screens of running panes that printed nothing since their capture
    /// (window activity, in whole seconds, before the capture's second), so they are not
    /// captured again; returns their pane ids.
    fn reuse_screens(&mut self, cache: &ScreenCache) -> Vec<PaneKey> {
        let mut reused = Vec::new();
        for task in &self.tasks {
            let Ok(Some(pane)) = self.pane(task) else {
                continue;
            };
            let key = (task.placement.socket.clone(), pane.pane_id.clone());
            if let Some((captured_at, _)) = cache.screens.get(&key)
                && !pane.dead
                && pane.activity < *captured_at
            {
                reused.push(key);
            }
        }
        for key in &reused {
            self.screens
                .insert(key.clone(), cache.screens[key].1.clone());
        }
        reused
    }

    /// [`Self::views_and_screens`], capturing only what `cache` does not hold unchanged, and
    /// keeping what was captured in it, stamped `looked_at`: a time (unix seconds) taken before
    /// the refresh, so no capture it keeps is stamped later than it was taken (a screen that
    /// changed between a capture and a later stamp would be reused stale).
    pub fn views_and_screens_cached(
        &mut self,
        also: Option<&str>,
        cache: &mut ScreenCache,
        looked_at: u64,
    ) -> (Vec<TaskView>, HashMap<PaneKey, String>) {
        let reused = self.reuse_screens(cache);
        let (views, screens) = self.views_and_screens(also);
        cache.remember(&screens, &reused, looked_at);
        (views, screens)
    }

    /// The task's pane: its session's first pane, and only if it is the very pane tmux created
    /// for the task (a session of the same name made by anyone else is not the task's).
    /// An error when its server could not be asked.
    pub fn pane(&self, task: &Task) -> Result<Option<&PaneInfo>> {
        match self.snapshots.get(&task.placement.socket) {
            Some(Snapshot::Panes(panes)) => Ok(find_pane(task, panes)),
            Some(Snapshot::Unreachable(err)) => Err(err.clone()),
            None => Ok(None),
        }
    }

    /// Views of the tasks; a running interactive task whose child waits on a human is shown as
    /// `input_required` with the reason read off its screen, one whose server cannot be asked
    /// as `unknown`.
    pub fn views(&self) -> Vec<TaskView> {
        self.views_and_screens(None).0
    }

    /// [`Self::views`], and the screens read for them. The screen of `also` (a task
    /// id) rides in the same capture even when nothing else needs it (a batch task), so a
    /// dashboard's preview costs no tmux call of its own.
    pub fn views_and_screens(
        &self,
        also: Option<&str>,
    ) -> (Vec<TaskView>, HashMap<PaneKey, String>) {
        let live_pane = |t: &Task| {
            let pane = self.pane(t).ok().flatten()?;
            (!pane.dead).then_some(pane)
        };
        let watched: Vec<(&Task, &PaneInfo)> = self
            .tasks
            .iter()
            .filter(|t| {
                t.record.status == Status::Running
                    && (t.record.mode == Mode::Interactive || Some(t.record.id.as_str()) == also)
            })
            .filter_map(|t| live_pane(t).map(|p| (t, p)))
            .collect();
        let mut by_socket: HashMap<&Socket, Vec<(&str, usize)>> = HashMap::new();
        for (task, pane) in &watched {
            if !self
                .screens
                .contains_key(&(task.placement.socket.clone(), pane.pane_id.clone()))
            {
                by_socket
                    .entry(&task.placement.socket)
                    .or_default()
                    .push((&pane.pane_id, pane.height));
            }
        }
        let mut screens: HashMap<PaneKey, String> = by_socket
            .into_iter()
            .flat_map(|(socket, panes)| {
                Tmux::new(socket.clone())
                    .capture_screens(&panes)
                    .into_iter()
                    .map(|(pane_id, screen)| ((socket.clone(), pane_id), screen))
            })
            .collect();
        screens.extend(self.screens.iter().map(|(k, v)| (k.clone(), v.clone())));
        let views = self
            .tasks
            .iter()
            .map(|task| {
                let record = &task.record;
                let mut view = TaskView::from(record);
                view.diff_stat = crate::ops::work::diff::diff_stat(task);
                if let Some(check) = view.check.as_mut() {
                    check.changed_since_check = crate::ops::work::checked::changed_since(task);
                }
                // A task with no changes has nothing to conflict: a mark from a check made
                // while it had some is stale.
                if view.diff_stat.as_ref().is_none_or(|stat| stat.files != 0) {
                    view.conflicts = crate::ops::work::conflicts::marks(task);
                }
                if is_stopping(task) {
                    view.stopping = true;
                    let why = "still stopping: its processes are being ended (a stop whose \
                               caller was cut short is finished by a detached `cuekit __stop`)";
                    view.hint = Some(match view.hint.take() {
                        Some(hint) => format!("{hint}; {why}"),
                        None => why.to_string(),
                    });
                }
                if self.unseen.contains(&record.id) {
                    view.status = Status::Unknown;
                    view.reason = Some("tmux_socket_missing".into());
                    view.hint = Some(socket_missing_hint(task));
                    return view;
                }
                let pane = match self.pane(task) {
                    Ok(pane) => pane,
                    Err(err) => {
                        if !record.status.is_terminal() {
                            view.status = Status::Unknown;
                            view.reason = Some(err.code.as_str().to_string());
                            view.hint = Some(err.message);
                        }
                        return view;
                    }
                };
                let screen = pane
                    .filter(|_| {
                        record.status == Status::Running && record.mode == Mode::Interactive
                    })
                    .and_then(|pane| {
                        let key = (task.placement.socket.clone(), pane.pane_id.clone());
                        Some((screens.get(&key)?, pane.history_lines > 0))
                    });
                let rules = adapter::lookup(&record.spec.agent_kind).map(|a| &a.screen);
                if let (Some((screen, scrolled)), Ok(rules)) = (screen, rules)
                    && let Some(attention) = attention::detect(rules, screen, scrolled)
                {
                    if waits_on_its_check(task, attention) {
                        // Idle after its turn, its check to come or running: cuekit's move.
                        view.phase = Some("checking".to_string());
                    } else {
                        view.status = Status::InputRequired;
                        view.reason = Some(attention.as_str().to_string());
                        view.hint = Some(rules.hint(attention).to_string());
                    }
                    if attention == attention::Attention::PermissionPrompt {
                        dialog_asks(task, screen, &mut view);
                        advise_unsandboxed(task, &mut view);
                    }
                }
                // An ACP task says itself what it waits for: its client's state, no screen.
                let live = pane.is_some_and(|pane| !pane.dead);
                if record.status == Status::Running
                    && live
                    && let Some((reason, _, request)) = crate::ops::acp::waiting(task)
                {
                    view.status = Status::InputRequired;
                    view.reason = Some(reason.to_string());
                    view.hint = Some(
                        if request.is_some() {
                            format!(
                                "the agent asks a permission: `cuekit approve {} --allow|--allow-always|--reject`",
                                record.id
                            )
                        } else {
                            format!(
                                "its turn ended; steer it (`cuekit steer {0} …`) or end it (`cuekit steer {0} --end`)",
                                record.id
                            )
                        },
                    );
                    if request.is_some() {
                        advise_unsandboxed(task, &mut view);
                    }
                    view.request = request.map(Box::new);
                }
                view
            })
            .collect();
        (views, screens)
    }
}

/// What an interactive child's permission dialog asks, read from its screen, before what to do
/// about it; the dialog as a request `approve` (and `top`, the web page) can answer when the
/// agent's dialogs take an option's digit.
fn dialog_asks(task: &Task, screen: &str, view: &mut TaskView) {
    use crate::domain::permission_screen;
    let Some(dialog) = permission_screen::dialog(screen) else {
        return;
    };
    let asked = dialog.line();
    if permission_screen::answers_by_digit(&task.record.spec.agent_kind) {
        view.hint = Some(format!(
            "it asks: {asked}; answer with `cuekit approve {} --allow|--allow-always|--reject` \
             (or `--option N`), or in its pane (`cuekit attach`)",
            task.record.id
        ));
        view.request = Some(Box::new(dialog.pending()));
    } else {
        view.hint = view
            .hint
            .take()
            .map(|hint| format!("it asks: {asked}; {hint}"));
    }
}

/// An interactive child idle after its turn whose check decides what follows (the monitor
/// checks it, then steers a fix or the quit): it waits on cuekit, not on a person.
pub(crate) fn waits_on_its_check(task: &Task, attention: attention::Attention) -> bool {
    let Some(plan) = task.placement.facts.as_ref().and_then(|f| f.check.as_ref()) else {
        return false;
    };
    attention == attention::Attention::IdleAtPrompt
        && crate::domain::check::idle_waits_on_its_check(
            &task.record.spec.agent_kind,
            plan.keep_open,
            task.record.check.as_ref().map(|state| state.phase),
        )
}

/// What `status` says of a permission an unsandboxed task asks.
pub(crate) const ADVISORY_APPROVAL: &str = "approvals of an unsandboxed task are advisory: its \
     child runs as you and can, in principle, answer its own request (cuekit refuses answers \
     from the task's own processes and keeps tmux out of its environment, but cannot close \
     every way round); submit with --sandbox for approvals that hold";

/// Says, on a permission request of a task without bubblewrap around it, that its approvals
/// are advisory.
pub(super) fn advise_unsandboxed(task: &Task, view: &mut TaskView) {
    if !task.in_bubblewrap() {
        view.warnings.push(ADVISORY_APPROVAL.to_string());
    }
}

pub(super) fn socket_missing_hint(task: &Task) -> String {
    let leader = task.group_leader();
    let pid = leader.map_or_else(String::new, |l| format!(" {}", l.pid));
    let server = leader
        .and_then(|l| l.parent())
        .map_or_else(|| "<its tmux server's pid>".to_string(), |p| p.to_string());
    format!(
        "tmux answers \"no server\" or \"no such session\" on {}, but this task's pane process{pid} \
         still runs: the socket file was deleted (a /tmp cleaner?) or another server took its path. \
         Nothing was recorded. `kill -USR1 {server}` makes its tmux server create the socket again \
         (once no other server holds the path); `cuekit cancel` ends the task without it",
        task.placement.socket.0
    )
}

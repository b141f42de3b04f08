//! What a dashboard shows in one refresh: every listed task's view, when it last showed signs
//! of life, and a preview of one task. The cost is `list`'s (one `list-panes -a` and one
//! batched capture per server): the preview's screen rides in that capture, and an ended
//! task's preview is read from its transcript file.

use std::collections::HashMap;
use std::path::Path;
use std::time::SystemTime;

use super::judge::ScreenCache;
use super::task::Task;
use crate::domain::display::tail::Tail;
use crate::domain::error::Result;
use crate::effects::store::TaskRecord;
use crate::ops::task::view::TaskView;

/// One refresh of the dashboard.
#[derive(Debug, Clone, Default)]
pub struct Board {
    /// Oldest first, as `list` orders them.
    pub rows: Vec<BoardRow>,
    pub preview: Option<Preview>,
}

#[derive(Debug, Clone)]
pub struct BoardRow {
    /// With `progress` for running tasks that stream events.
    pub view: TaskView,
    /// The last event of a stream, else the last byte the pane wrote to its transcript.
    pub last_activity: Option<SystemTime>,
    pub created: Option<SystemTime>,
}

/// The end of one task's screen (live) or readable transcript (ended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub task_id: String,
    pub live: bool,
    pub lines: Vec<String>,
    /// What a person reads first: what a permission dialog asks, else the child's latest
    /// answer (its own words, shown only), when it is between turns or ended.
    pub lead: Vec<String>,
}

/// This project's tasks (or every task), with a preview of `selected` of at most `lines` lines.
/// `cache` carries the screens from one refresh to the next (see [`ScreenCache`]).
pub fn board(
    all: bool,
    cwd: &Path,
    selected: Option<&str>,
    lines: usize,
    cache: &mut ScreenCache,
) -> Result<Board> {
    let listing = super::list::listing(all, cwd, selected, Some(cache))?;
    let tasks: HashMap<&str, &Task> = listing
        .refreshed
        .tasks
        .iter()
        .map(|task| (task.record.id.as_str(), task))
        .collect();
    let mut preview = None;
    let rows = listing
        .views
        .into_iter()
        .map(|mut view| {
            // A row cuekit will not act on (untrusted, unreadable) has no record to read.
            let Some(task) = tasks.get(view.id.as_str()) else {
                return BoardRow {
                    last_activity: None,
                    created: humantime::parse_rfc3339_weak(&view.created_at).ok(),
                    view,
                };
            };
            let record = &task.record;
            let progress = ((record.event_stream || record.mode == crate::domain::spec::Mode::Acp)
                && !record.status.is_terminal())
            .then(|| crate::ops::background::stream::read_progress(&record.task_dir))
            .flatten();
            let streamed = progress
                .as_ref()
                .and_then(|p| p.last_activity.as_deref())
                .and_then(|at| humantime::parse_rfc3339_weak(at).ok());
            view.progress = progress;
            if Some(record.id.as_str()) == selected {
                let screen = listing
                    .refreshed
                    .pane(task)
                    .ok()
                    .flatten()
                    .and_then(|pane| {
                        let key = (task.placement.socket.clone(), pane.pane_id.clone());
                        listing.screens.get(&key)
                    });
                let lead = lead(record, &view);
                preview = Some(match screen {
                    Some(screen) => Preview {
                        task_id: record.id.clone(),
                        live: true,
                        lines: last_lines(screen, lines),
                        lead,
                    },
                    _ => Preview {
                        task_id: record.id.clone(),
                        live: false,
                        lines: transcript_tail(record, lines),
                        lead,
                    },
                });
            }
            BoardRow {
                last_activity: streamed.or_else(|| transcript_written(record)),
                created: humantime::parse_rfc3339_weak(&record.created_at).ok(),
                view,
            }
        })
        .collect();
    Ok(Board { rows, preview })
}

/// The order the faces show rows in: what needs the human first (`input_required`: a dialog —
/// a permission, a login, a trust question — before a finished turn), then running tasks
/// (oldest first, so rows do not jump), then the rest (latest ending first).
pub fn attention_order(a: &BoardRow, b: &BoardRow) -> std::cmp::Ordering {
    use crate::domain::status::Status;
    let group = |view: &TaskView| match view.status {
        Status::InputRequired => crate::domain::plain::order(view.status, view.reason.as_deref()),
        Status::Running => 2,
        _ => 3,
    };
    group(&a.view)
        .cmp(&group(&b.view))
        .then_with(|| {
            if a.view.status.is_terminal() {
                b.view.ended_at.cmp(&a.view.ended_at)
            } else {
                a.view.created_at.cmp(&b.view.created_at)
            }
        })
        .then_with(|| a.view.id.cmp(&b.view.id))
}

/// Every host's registered tasks as rows (each host asked once, in parallel; a host that does
/// not answer gives `unknown` rows). Kept apart from [`board`]: a host takes a round trip, a
/// lost one its connect timeout, and the dashboard's own refresh must not wait for either.
pub fn host_board(cwd: &Path) -> Result<Vec<BoardRow>> {
    let on_hosts = super::remote::by_host(crate::effects::store::registered_ids()?);
    if on_hosts.is_empty() {
        return Ok(Vec::new());
    }
    Ok(super::remote::host_views(on_hosts, true, cwd)?
        .into_iter()
        .map(|view| BoardRow {
            last_activity: None,
            created: humantime::parse_rfc3339_weak(&view.created_at).ok(),
            view,
        })
        .collect())
}

/// The lines a preview leads with: the question of a permission dialog, else the latest
/// answer of a child between turns or ended (read from files, never from tmux).
fn lead(record: &TaskRecord, view: &TaskView) -> Vec<String> {
    use crate::domain::status::Status;
    if view.status == Status::InputRequired && view.reason.as_deref() == Some("permission_prompt") {
        let asked = view
            .hint
            .as_deref()
            .and_then(crate::domain::plain::asked_in_hint);
        return asked
            .map(|asked| vec![asked.to_string()])
            .unwrap_or_default();
    }
    let between_turns =
        view.status == Status::InputRequired && view.reason.as_deref() == Some("idle_at_prompt");
    if !between_turns && !view.status.is_terminal() {
        return Vec::new();
    }
    super::result::latest_answer(record)
        .map(|answer| {
            answer
                .lines()
                .take(LEAD_LINES)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// An answer's lines a preview leads with at most.
const LEAD_LINES: usize = 12;

fn transcript_written(record: &TaskRecord) -> Option<SystemTime> {
    std::fs::metadata(crate::effects::store::transcript_path(record))
        .and_then(|meta| meta.modified())
        .ok()
}

/// The readable transcript's last lines; a transcript not written yet has none.
fn transcript_tail(record: &TaskRecord, lines: usize) -> Vec<String> {
    let mut tail = Tail::new(lines);
    match super::logs::read_logs_of(record, false, &mut tail) {
        Ok(()) => tail.finish(),
        Err(_) => Vec::new(),
    }
}

/// A screen's last `limit` lines, without the blank rows below its last text.
fn last_lines(screen: &str, limit: usize) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|line| !line.is_empty())
        .map_or(0, |i| i + 1);
    lines[end.saturating_sub(limit)..end]
        .iter()
        .map(|line| line.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_screen_loses_its_empty_bottom_then_keeps_its_last_lines() {
        assert_eq!(last_lines("a\nb\nc\n\n\n", 2), ["b", "c"]);
        assert_eq!(last_lines("a\n  \nc   \n", 5), ["a", "", "c"]);
        assert!(last_lines("\n\n", 3).is_empty());
    }
}

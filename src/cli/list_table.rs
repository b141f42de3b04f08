//! `cuekit list` as a table a person reads at the terminal's width: what needs you first, the
//! status in words with its reason, the objective taking what the other columns leave, and a
//! column only when some row fills it.

use std::io::IsTerminal;
use std::time::SystemTime;

use super::render::{first_line, said, visible};
use super::style;
use crate::ops::TaskView;

/// The width a pipe gets without `$COLUMNS`: wide enough that nothing is cut (a script or a
/// log keeps each objective's whole first line).
const PIPE_WIDTH: usize = 1000;
/// Below this, the agent column gives its room to the objective.
const WIDE: usize = 100;
/// The least the objective is cut to.
const OBJECTIVE_MIN: usize = 16;

/// The terminal's width, `$COLUMNS` in a pipe, else [`PIPE_WIDTH`].
pub fn width() -> usize {
    if std::io::stdout().is_terminal()
        && let Ok((columns, _)) = ratatui::crossterm::terminal::size()
        && columns > 0
    {
        return columns.into();
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c > 0)
        .unwrap_or(PIPE_WIDTH)
}

/// The order rows are shown in: what needs a person first (a dialog before a finished turn),
/// then what runs (oldest first, as
/// stored), then the queue, then the ended (latest ending first).
pub fn sort(tasks: &mut [TaskView]) {
    tasks.sort_by(|a, b| {
        let (ua, ub) = (
            crate::domain::plain::order(a.status, a.reason.as_deref()),
            crate::domain::plain::order(b.status, b.reason.as_deref()),
        );
        ua.cmp(&ub).then_with(|| {
            if a.status.is_terminal() && b.status.is_terminal() {
                b.ended_at.cmp(&a.ended_at)
            } else {
                std::cmp::Ordering::Equal
            }
        })
    });
}

struct Column {
    title: &'static str,
    cells: Vec<String>,
    width: usize,
}

impl Column {
    /// A column of `cells`, as wide as its widest cell (up to `cap`); `None` when no row has
    /// anything in it.
    fn of(title: &'static str, cells: Vec<String>, cap: usize) -> Option<Column> {
        if cells.iter().all(|c| c.is_empty() || c == "-") {
            return None;
        }
        let width = cells
            .iter()
            .map(|c| c.chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
            .min(cap);
        Some(Column {
            title,
            cells,
            width,
        })
    }
}

fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return format!("{text:<width$}");
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

fn changes(task: &TaskView) -> String {
    let clash = if task.conflicts.is_empty() {
        ""
    } else {
        " !conflict"
    };
    match &task.diff_stat {
        Some(stat) if stat.files > 0 => format!(
            "{}f +{} -{}{clash}",
            stat.files, stat.insertions, stat.deletions
        ),
        _ if !clash.is_empty() => clash.trim().to_string(),
        _ => "-".to_string(),
    }
}

/// The table's lines, header first, at most `width` columns each (the status word coloured).
pub fn lines(tasks: &[TaskView], width: usize, now: SystemTime) -> Vec<String> {
    let statuses: Vec<String> = tasks
        .iter()
        .map(|t| visible(&said(t).line()).into_owned())
        .collect();
    let id_width = tasks
        .iter()
        .map(|t| t.id.chars().count())
        .max()
        .unwrap_or(2);
    let mut columns: Vec<Column> = Vec::new();
    if width >= WIDE {
        columns.extend(Column::of(
            "AGENT",
            tasks.iter().map(|t| t.agent_kind.clone()).collect(),
            12,
        ));
    }
    columns.extend(Column::of(
        "HOST",
        tasks
            .iter()
            .map(|t| t.host.clone().unwrap_or_default())
            .collect(),
        12,
    ));
    // The child's last report: `blocked` means it waits on the parent.
    columns.extend(Column::of(
        "REPORT",
        tasks
            .iter()
            .map(|t| {
                t.last_report
                    .as_ref()
                    .map_or(String::new(), |r| r.kind.as_str().to_string())
            })
            .collect(),
        8,
    ));
    columns.extend(Column::of(
        "CHANGES",
        tasks.iter().map(changes).collect(),
        24,
    ));
    columns.extend(Column::of(
        "AGE",
        tasks
            .iter()
            .map(|t| {
                humantime::parse_rfc3339_weak(&t.created_at).map_or_else(
                    |_| "-".to_string(),
                    |at| crate::domain::display::age::compact(at, now),
                )
            })
            .collect(),
        8,
    ));
    let fixed: usize = id_width + columns.iter().map(|c| c.width + 2).sum::<usize>() + 2;
    // The status takes what it needs up to a third of the width (a longer one keeps its word
    // and says why on a line below); the objective the rest.
    let cap = (width / 3)
        .min(width.saturating_sub(fixed + OBJECTIVE_MIN))
        .max(6);
    let status_width = tasks
        .iter()
        .zip(&statuses)
        .map(|(task, status)| match status.chars().count() {
            fits if fits <= cap => fits,
            _ => said(task).word.len(),
        })
        .chain([6])
        .max()
        .unwrap_or(6)
        .min(cap);
    let objective_width = width
        .saturating_sub(fixed + status_width + 2)
        .max(OBJECTIVE_MIN);
    let mut out = Vec::with_capacity(tasks.len() + 1);
    let mut header = format!("{:<id_width$}  {:<status_width$}", "ID", "STATUS");
    for column in &columns {
        header.push_str(&format!("  {:<w$}", column.title, w = column.width));
    }
    header.push_str("  OBJECTIVE");
    out.push(header);
    for (row, task) in tasks.iter().enumerate() {
        let said = said(task);
        // A status too long for its column keeps its word there and says why on a line below.
        let whole = statuses[row].chars().count() <= status_width;
        let status = if whole {
            cut(&statuses[row], status_width)
        } else {
            cut(said.word, status_width)
        };
        let below = said
            .detail
            .as_deref()
            .filter(|_| !whole)
            .map(|detail| format!("{:id_width$}  ↳ {}", "", visible(detail)));
        // The word is cuekit's own and coloured; the rest of the cell is made visible.
        let (word, rest) = match status.strip_prefix(said.word) {
            Some(rest) => (style::word(task.status, said.word, 0), rest),
            None => (status.clone(), ""),
        };
        let mut line = format!("{}  {word}", cut(&visible(&task.id), id_width));
        line.push_str(rest);
        for column in &columns {
            line.push_str(&format!(
                "  {}",
                cut(&visible(&column.cells[row]), column.width)
            ));
        }
        line.push_str("  ");
        line.push_str(&first_line(&visible(&task.objective), objective_width));
        out.push(line.trim_end().to_string());
        out.extend(below.map(|below| cut(&below, width).trim_end().to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::domain::status::Status;

    fn task(id: &str, status: Status, reason: Option<&str>, objective: &str) -> TaskView {
        TaskView {
            agent_kind: "claude-code".into(),
            status,
            reason: reason.map(str::to_string),
            objective: objective.into(),
            created_at: "2027-01-15T08:00:00Z".into(),
            ..TaskView::bare(id, Path::new("/p/.cuekit/tasks/x"))
        }
    }

    fn board() -> Vec<TaskView> {
        let mut asking = task(
            "t_00000000000c",
            Status::InputRequired,
            Some("permission_prompt"),
            "Write the release notes for version two and check every link in them",
        );
        asking.hint = Some(
            "it asks: Allow execution of [Shell]? (Shell echo hi > f.txt) 1. Allow once; attach"
                .into(),
        );
        vec![
            task(
                "t_00000000000a",
                Status::Completed,
                None,
                "Write the changelog",
            ),
            task(
                "t_00000000000b",
                Status::Running,
                None,
                "Summarise the repository",
            ),
            asking,
            task(
                "t_00000000000d",
                Status::Failed,
                Some("nonzero_exit"),
                "Port the parser",
            ),
        ]
    }

    fn now() -> SystemTime {
        humantime::parse_rfc3339("2027-01-15T08:05:00Z").unwrap() + Duration::from_secs(1)
    }

    #[test]
    fn at_80_columns_every_row_fits_and_what_needs_you_leads() {
        let mut tasks = board();
        sort(&mut tasks);
        let lines = lines(&tasks, 80, now());
        for line in &lines {
            assert!(line.chars().count() <= 80, "{line:?} is wider than 80");
        }
        assert!(
            lines[1].starts_with("t_00000000000c  waiting for you "),
            "{lines:#?}"
        );
        assert!(
            lines[2]
                .trim_start()
                .starts_with("↳ asks to run `echo hi > f.txt`"),
            "{lines:#?}"
        );
        assert!(lines[3].contains("running"), "{lines:#?}");
        assert!(lines[4].contains("failed "), "{lines:#?}");
        assert!(lines[5].contains("↳ exited with an error"), "{lines:#?}");
        // No column of nothing: no report, no changes, no host; no agent at this width.
        assert!(
            !lines[0].contains("REPORT") && !lines[0].contains("AGENT"),
            "{}",
            lines[0]
        );
        assert!(
            lines
                .iter()
                .all(|l| !l.contains('_') || l.starts_with("t_"))
        );
    }

    #[test]
    fn a_wide_terminal_shows_the_agent_and_the_whole_question() {
        let mut tasks = board();
        sort(&mut tasks);
        let lines = lines(&tasks, 180, now());
        assert!(lines[0].contains("AGENT"), "{}", lines[0]);
        assert!(
            lines[1].contains("asks to run `echo hi > f.txt`"),
            "{lines:#?}"
        );
        assert!(lines[1].contains("check every link in them"), "{lines:#?}");
    }
}

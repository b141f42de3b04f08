//! Drawing `cuekit top` from its state, and nothing else: no reads, no clocks.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState};

use super::state::{Mode, State};
use crate::domain::display::age;
use crate::domain::status::Status;
use crate::ops::BoardRow;

/// The footer: the keys most needed first, since a narrow terminal cuts the end.
pub const KEYS: &str =
    "q quit  ? help  ↵ attach  s steer  x cancel  l log  r result  d diff  / filter  a all";

const HELP: &[(&str, &str)] = &[
    (
        "↑ ↓ j k",
        "select a task (PgUp PgDn g G: by page, first, last)",
    ),
    (
        "↵ Enter",
        "attach to its tmux session; detach (prefix, then d) to come back",
    ),
    (
        "s",
        "steer: type a message, Enter sends it; the receipt shows below",
    ),
    ("x", "cancel the task (asks to confirm with y)"),
    (
        "p",
        "answer a permission request: y allow, a always, n reject",
    ),
    ("l", "its readable log in a pager ($PAGER, else less)"),
    (
        "r",
        "its result: status, final answer, tool calls, files changed",
    ),
    ("d", "the diff of a worktree task"),
    (
        "/",
        "filter rows by id, agent, status or objective (Esc clears)",
    ),
    ("a", "this project's tasks, or every task"),
    ("q", "quit (Ctrl-C too)"),
];

pub fn view(state: &State, frame: &mut Frame) {
    let area = frame.area();
    // The table takes the lines its rows need, up to two thirds; the preview the rest, so a
    // few tasks leave room for more of the selected one's screen.
    let available = area.height.saturating_sub(3);
    let rows = state.visible().len() as u16 + 1;
    let table_height = rows.clamp(3, available.saturating_sub(min_preview(area.height)).max(3));
    let [header, table, preview, status, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(table_height),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_line(state)), header);
    draw_table(state, frame, table);
    draw_preview(state, frame, preview);
    frame.render_widget(Paragraph::new(status_line(state)), status);
    frame.render_widget(
        Paragraph::new(KEYS).style(Style::new().add_modifier(Modifier::DIM)),
        footer,
    );
    if state.mode == Mode::Help {
        draw_help(frame, area);
    }
}

fn min_preview(height: u16) -> u16 {
    (height / 3).max(5)
}

/// Rows the table shows at most in a frame of `height` lines: what a page key moves by.
pub fn table_rows(height: u16) -> usize {
    height.saturating_sub(3 + min_preview(height) + 1).max(1) as usize
}

fn header_line(state: &State) -> Line<'static> {
    let scope = if state.all {
        "every task".to_string()
    } else {
        format!("project {}", state.project)
    };
    let mut spans = vec![Span::styled(
        "cuekit top",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    spans.push(Span::raw(format!(" — {scope} — ")));
    if !state.loaded {
        spans.push(Span::raw("loading…"));
    } else if state.rows.is_empty() {
        spans.push(Span::raw("no tasks"));
    } else {
        let counts = state.counts();
        for (i, (status, n)) in counts.iter().enumerate() {
            if i > 0 {
                spans.push(Span::raw("  "));
            }
            spans.push(Span::styled(
                format!("{n} {}", status.as_str()),
                status_style(*status, state.color),
            ));
        }
    }
    Line::from(spans)
}

fn draw_table(state: &State, frame: &mut Frame, area: Rect) {
    let visible = state.visible();
    // A status with its reason takes 29 columns; below 110 the objective needs them more, and
    // the selected task's reason shows above its preview.
    let wide = area.width >= 110;
    let status_width = if wide { 29 } else { 14 };
    let rows: Vec<Row> = visible
        .iter()
        .map(|row| table_row(state, row, wide))
        .collect();
    // `gemini@gpu-box`: a host's task names its host, and only then does the column grow.
    let agent_width = visible
        .iter()
        .map(|row| agent_cell(&row.view).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(11, 24) as u16;
    let widths = [
        Constraint::Length(14),
        Constraint::Length(agent_width),
        Constraint::Length(status_width),
        Constraint::Length(4),
        Constraint::Length(6),
        Constraint::Length(13),
        Constraint::Min(10),
    ];
    let header = Row::new([
        "ID",
        "AGENT",
        "STATUS",
        "AGE",
        "ACTIVE",
        "PROGRESS",
        "OBJECTIVE",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let table = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▶ ");
    let mut table_state = TableState::default().with_selected(state.selected_index(&visible));
    frame.render_stateful_widget(table, area, &mut table_state);
}

fn table_row<'a>(state: &State, row: &'a BoardRow, wide: bool) -> Row<'a> {
    let view = &row.view;
    let status = match (&view.phase, &view.reason) {
        // A check runs: the task is `running`, its phase says what it does.
        (Some(phase), _) => format!("{} {phase}", view.status.as_str()),
        (None, Some(reason)) if wide && reason != view.status.as_str() => {
            format!("{} {reason}", view.status.as_str())
        }
        _ => view.status.as_str().to_string(),
    };
    let since = |time: Option<std::time::SystemTime>| {
        time.map(|t| age::compact(t, state.now)).unwrap_or_default()
    };
    let progress = view
        .progress
        .as_ref()
        .map(|p| match p.tokens {
            Some(tokens) => format!("{}t {} tok", p.turns, short_number(tokens)),
            None => format!("{}t", p.turns),
        })
        // A worktree task shows its branch and its work against the base instead.
        .or_else(|| {
            let branch = view.branch.as_deref()?;
            let work = match &view.diff_stat {
                Some(stat) => format!("{branch} +{} -{}", stat.insertions, stat.deletions),
                None => branch.to_string(),
            };
            // The last conflict check found its work clashing with another's or its target's.
            Some(if view.conflicts.is_empty() {
                work
            } else {
                format!("{work} !conflict")
            })
        })
        .unwrap_or_default();
    let style = if view.status == Status::InputRequired {
        status_style(Status::InputRequired, state.color).add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    Row::new([
        Cell::from(view.id.as_str()),
        Cell::from(agent_cell(view)),
        Cell::from(Span::styled(status, status_style(view.status, state.color))),
        Cell::from(since(row.created)),
        Cell::from(since(row.last_activity)),
        Cell::from(progress),
        Cell::from(view.objective.lines().next().unwrap_or("")),
    ])
    .style(style)
}

fn agent_cell(view: &crate::ops::TaskView) -> String {
    match &view.host {
        Some(host) => format!("{}@{host}", view.agent_kind),
        None => view.agent_kind.clone(),
    }
}

fn draw_preview(state: &State, frame: &mut Frame, area: Rect) {
    let preview = state
        .preview
        .as_ref()
        .filter(|p| Some(&p.task_id) == state.selected.as_ref());
    let reason = state
        .selected_row()
        .and_then(|row| row.view.reason.as_deref())
        .map(|reason| format!(" — {reason}"))
        .unwrap_or_default();
    let title = match (&state.selected, preview) {
        (Some(id), Some(p)) if p.live => format!(" {id}{reason} — screen "),
        (Some(id), Some(_)) => format!(" {id}{reason} — transcript "),
        (Some(id), None) => format!(" {id}{reason} "),
        (None, _) => " preview ".to_string(),
    };
    let block = Block::new().borders(Borders::TOP).title(title);
    let inner = block.inner(area);
    let lines: Vec<Line> = match preview {
        Some(p) => {
            let skip = p.lines.len().saturating_sub(inner.height as usize);
            p.lines[skip..]
                .iter()
                .map(|line| Line::raw(line.as_str()))
                .collect()
        }
        None => match state
            .selected_row()
            .and_then(|row| row.view.host.as_deref())
        {
            // A host's screen is not fetched each refresh: it is one key away.
            Some(host) => vec![Line::raw(format!(
                "on host {host}: Enter attaches over ssh, l shows its log, r its result"
            ))],
            None if state.selected.is_some() => vec![Line::raw("…")],
            None => Vec::new(),
        },
    };
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

fn status_line(state: &State) -> Line<'static> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    match &state.mode {
        Mode::Filter => Line::from(vec![
            Span::styled("/", bold),
            Span::raw(format!("{}▏", state.filter)),
        ]),
        Mode::Steer { task_id, text } => Line::from(vec![
            Span::styled(format!("steer {task_id}> "), bold),
            Span::raw(format!("{text}▏")),
            Span::styled(
                "   (Enter sends, Esc drops)",
                Style::new().add_modifier(Modifier::DIM),
            ),
        ]),
        Mode::ConfirmCancel { task_id } => Line::from(Span::styled(
            format!("cancel {task_id}? y cancels it, any other key keeps it running"),
            bold,
        )),
        Mode::AnswerPermission { task_id } => Line::from(Span::styled(
            format!(
                "{task_id} asks a permission: y allow once, a allow always, n reject, any other key waits"
            ),
            bold,
        )),
        Mode::Normal | Mode::Help => match &state.message {
            Some(message) => Line::raw(message.clone()),
            None if !state.filter.is_empty() => Line::raw(format!(
                "filter: {}   (/ changes it, Esc clears it)",
                state.filter
            )),
            None => Line::default(),
        },
    }
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let width = area.width.min(76);
    let height = (HELP.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(key, what)| {
            Line::from(vec![
                Span::styled(
                    format!("{key:<9}"),
                    Style::new().add_modifier(Modifier::BOLD),
                ),
                Span::raw(*what),
            ])
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" keys — any key closes ")),
        popup,
    );
}

fn status_style(status: Status, color: bool) -> Style {
    if !color {
        return Style::new();
    }
    match status {
        Status::InputRequired => Style::new().fg(Color::Yellow),
        Status::Queued => Style::new().fg(Color::Blue),
        Status::Running => Style::new().fg(Color::Cyan),
        Status::Completed => Style::new().fg(Color::Green),
        Status::Failed | Status::TimedOut => Style::new().fg(Color::Red),
        Status::Cancelled => Style::new().fg(Color::Magenta),
        Status::Untrusted | Status::Unknown => Style::new().fg(Color::Red).bold(),
    }
}

/// `950`, `12.3k`, `4.1M`.
fn short_number(n: u64) -> String {
    match n {
        0..1000 => n.to_string(),
        1000..1_000_000 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::top::fixtures::{board, loaded};
    use crate::top::update::{Key, Msg, update};

    fn draw(state: &State, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| view(state, frame)).unwrap();
        terminal.backend().to_string()
    }

    #[test]
    fn input_required_first_then_running_then_latest_ended() {
        let state = loaded(board());
        let order: Vec<&str> = state.visible().iter().map(|r| r.view.id.as_str()).collect();
        assert_eq!(
            order,
            [
                "t_00000000000c",
                "t_00000000000e",
                "t_00000000000b",
                "t_00000000000d",
                "t_00000000000a"
            ]
        );
        assert_eq!(state.selected.as_deref(), Some("t_00000000000c"));
    }

    #[test]
    fn dashboard_layout() {
        let state = loaded(board());
        insta::assert_snapshot!(draw(&state, 120, 24));
    }

    #[test]
    fn a_hosts_task_names_its_host_and_its_preview_says_how_to_reach_it() {
        let mut rows = board();
        let mut far = crate::top::fixtures::row("t_0000000000aa", Status::Running, None, 0, "far");
        far.view.host = Some("gpu-box".into());
        rows.insert(0, far);
        let mut state = loaded(rows);
        state.selected = Some("t_0000000000aa".into());
        insta::assert_snapshot!(draw(&state, 120, 24));
    }

    #[test]
    fn narrow_terminal_cuts_the_objective() {
        let state = loaded(board());
        insta::assert_snapshot!(draw(&state, 80, 16));
    }

    #[test]
    fn many_tasks_keep_the_selection_in_view_and_the_preview_its_third() {
        let rows = (0..30)
            .map(|n| {
                crate::top::fixtures::row(
                    &format!("t_{n:012}"),
                    Status::Running,
                    None,
                    n,
                    &format!("task number {n}"),
                )
            })
            .collect();
        let mut state = loaded(rows);
        update(&mut state, Msg::Page(table_rows(24)));
        update(&mut state, Msg::Key(Key::PageDown));
        update(&mut state, Msg::Key(Key::Down));
        assert_eq!(state.selected.as_deref(), Some("t_000000000013"));
        insta::assert_snapshot!(draw(&state, 100, 24));
    }

    #[test]
    fn no_tasks_yet() {
        let state = loaded(Vec::new());
        insta::assert_snapshot!(draw(&state, 80, 12));
    }

    #[test]
    fn steer_line_and_filter() {
        let mut state = loaded(board());
        for key in [
            Key::Char('/'),
            Key::Char('r'),
            Key::Char('e'),
            Key::Char('v'),
            Key::Enter,
            Key::Char('s'),
        ] {
            update(&mut state, Msg::Key(key));
        }
        for c in "also check the tests".chars() {
            update(&mut state, Msg::Key(Key::Char(c)));
        }
        insta::assert_snapshot!(draw(&state, 100, 14));
    }

    #[test]
    fn a_filter_left_in_place_is_named_below_the_table() {
        let mut state = loaded(board());
        for key in [
            Key::Char('/'),
            Key::Char('f'),
            Key::Char('a'),
            Key::Char('i'),
            Key::Enter,
        ] {
            update(&mut state, Msg::Key(key));
        }
        insta::assert_snapshot!(draw(&state, 100, 12));
    }

    #[test]
    fn cancel_asks_first() {
        let mut state = loaded(board());
        update(&mut state, Msg::Key(Key::Char('x')));
        insta::assert_snapshot!(draw(&state, 100, 14));
    }

    #[test]
    fn help_overlay() {
        let mut state = loaded(board());
        update(&mut state, Msg::Key(Key::Char('?')));
        insta::assert_snapshot!(draw(&state, 100, 20));
    }
}

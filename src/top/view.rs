//! Drawing `cuekit top` from its state, and nothing else: no reads, no clocks.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState};

use super::state::{Mode, State};
use crate::domain::display::age;
use crate::domain::display::terminal_text::visible;
use crate::domain::status::Status;
use crate::ops::BoardRow;

/// The footer: every key, the most needed first; a terminal narrower than one line of them
/// gets two.
pub const KEYS: &str = "↑↓ select  ↵ attach  s steer  p answer  x cancel  h hand off  l log  r result  d diff  / filter  a all  ? help  q quit";

/// The keys for `cuekit man top` and `cuekit top --help`.
pub const MAN_KEYS: &str = "Keys:
  ↑ ↓ j k, PgUp PgDn, g G   select a task
  Enter                     attach to its tmux session (detach: prefix, then d)
  s                         steer: type a message, Enter sends it
  p                         answer an ACP task's permission request: y allow once, a always, n reject
  x                         cancel the task (y confirms)
  h                         hand a running task off to another agent: ↑ ↓ pick an installed one
                            (type :MODEL for a model), Enter, an optional message, Enter
  l                         its readable log in a pager ($PAGER, else less)
  r                         its result in a pager
  d                         the diff of a worktree task
  /                         filter rows (Esc clears)
  a                         this project's tasks, or every task
  ?                         the keys
  q, Ctrl-C                 quit";

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
        "h",
        "hand it to another agent: ↑↓ picks, Enter, a message, Enter",
    ),
    (
        "p",
        "answer a permission request: y allow once, a always, n reject",
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
    let footer_height = footer_lines(area.width).len() as u16;
    let available = area.height.saturating_sub(2 + footer_height);
    let rows = state.visible().len() as u16 + 1;
    let table_height = rows.clamp(3, available.saturating_sub(min_preview(area.height)).max(3));
    let [header, table, preview, status, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(table_height),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(footer_height),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_line(state, area.width)), header);
    draw_table(state, frame, table);
    draw_preview(state, frame, preview);
    frame.render_widget(Paragraph::new(status_line(state)), status);
    let keys: Vec<Line> = footer_lines(area.width)
        .into_iter()
        .map(Line::raw)
        .collect();
    frame.render_widget(
        Paragraph::new(keys).style(Style::new().add_modifier(Modifier::DIM)),
        footer,
    );
    if state.mode == Mode::Help {
        draw_help(frame, area);
    }
}

/// [`KEYS`] on one line when it fits `width`, else split between two key pairs.
fn footer_lines(width: u16) -> Vec<String> {
    if KEYS.chars().count() <= width as usize {
        return vec![KEYS.to_string()];
    }
    let pairs: Vec<&str> = KEYS.split("  ").collect();
    let half = pairs.len().div_ceil(2);
    vec![pairs[..half].join("  "), pairs[half..].join("  ")]
}

fn min_preview(height: u16) -> u16 {
    (height / 3).max(5)
}

/// Rows the table shows at most in a frame of `height` lines: what a page key moves by.
pub fn table_rows(height: u16) -> usize {
    height.saturating_sub(3 + min_preview(height) + 1).max(1) as usize
}

/// The counts first (what a glance needs), then the scope; `cuekit top — ` in front when the
/// line has room for it.
fn header_line(state: &State, width: u16) -> Line<'static> {
    // A narrow terminal names the project by its folder, a wide one by its path.
    let project = match state.project.rsplit_once('/') {
        Some((_, name)) if width < 110 && !name.is_empty() => name,
        _ => state.project.as_str(),
    };
    let scope = if state.all {
        "every task".to_string()
    } else {
        format!("project {project}")
    };
    let mut spans = Vec::new();
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
            let word = match status {
                Status::InputRequired => "need you",
                status => crate::domain::plain::status_word(*status),
            };
            spans.push(Span::styled(
                format!("{n} {word}"),
                status_style(*status, state.color),
            ));
        }
    }
    spans.push(Span::raw(format!(" — {scope}")));
    let used: usize = spans.iter().map(|span| span.content.chars().count()).sum();
    let brand = "cuekit top — ";
    if used + brand.chars().count() <= width as usize {
        spans.insert(
            0,
            Span::styled("cuekit top", Style::new().add_modifier(Modifier::BOLD)),
        );
        spans.insert(1, Span::raw(" — "));
    }
    Line::from(spans)
}

fn draw_table(state: &State, frame: &mut Frame, area: Rect) {
    let visible = state.visible();
    // The status in words takes 44 columns; below 110 it is said short, its reason moves
    // above the preview, the age goes, and the objective keeps the room.
    let wide = area.width >= 110;
    let status_width = if wide { 44 } else { 17 };
    let progress: Vec<String> = visible
        .iter()
        .map(|row| progress_cell(&row.view, wide))
        .collect();
    let with_progress = progress.iter().any(|cell| !cell.is_empty());
    // `gemini@gpu-box`: a host's task names its host, and only then does the column grow.
    let agent_width = visible
        .iter()
        .map(|row| agent_cell(&row.view).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 24) as u16;
    let mut titles = vec!["ID", "AGENT", "STATUS"];
    let mut widths = vec![
        Constraint::Length(14),
        Constraint::Length(agent_width),
        Constraint::Length(status_width),
    ];
    if wide {
        titles.push("AGE");
        widths.push(Constraint::Length(4));
    }
    titles.push("ACTIVE");
    widths.push(Constraint::Length(6));
    if with_progress {
        let need = progress
            .iter()
            .map(|p| p.chars().count())
            .max()
            .unwrap_or(0);
        titles.push("PROGRESS");
        widths.push(Constraint::Length(
            need.clamp(8, if wide { 28 } else { 12 }) as u16,
        ));
    }
    titles.push("OBJECTIVE");
    widths.push(Constraint::Min(10));
    let rows: Vec<Row> = visible
        .iter()
        .zip(progress)
        .map(|(row, progress)| table_row(state, row, wide, with_progress.then_some(progress)))
        .collect();
    let header = Row::new(titles).style(Style::new().add_modifier(Modifier::BOLD));
    let table = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▶ ");
    let mut table_state = TableState::default().with_selected(state.selected_index(&visible));
    frame.render_stateful_widget(table, area, &mut table_state);
}

/// Turns and tokens of a streaming task; a worktree task's work against its base (its branch
/// named when `wide`), `!conflict` when the last check found it clashing.
fn progress_cell(view: &crate::ops::TaskView, wide: bool) -> String {
    view.progress
        .as_ref()
        .map(|p| match (p.tokens, wide) {
            (Some(tokens), true) => format!("{}t {} tok", p.turns, short_number(tokens)),
            (Some(tokens), false) => format!("{}t {}", p.turns, short_number(tokens)),
            (None, _) => format!("{}t", p.turns),
        })
        .or_else(|| {
            let branch = view.branch.as_deref()?;
            let stat = view
                .diff_stat
                .as_ref()
                .filter(|stat| stat.files > 0)
                .map(|stat| format!("+{} -{}", stat.insertions, stat.deletions));
            let work = match (wide, stat) {
                (true, Some(stat)) => format!("{branch} {stat}"),
                (true, None) => branch.to_string(),
                (false, Some(stat)) => stat,
                (false, None) => String::new(),
            };
            Some(if view.conflicts.is_empty() {
                work
            } else {
                format!("{work} !conflict").trim().to_string()
            })
        })
        .unwrap_or_default()
}

/// The status in words: whole when `wide`, else the few words a narrow column holds.
fn status_cell(view: &crate::ops::TaskView, wide: bool) -> String {
    if view.stopping {
        return "stopping".to_string();
    }
    if wide {
        let said = crate::domain::plain::said(
            view.status,
            view.reason.as_deref(),
            view.phase.as_deref(),
            view.hint.as_deref(),
        );
        return visible(&said.line()).into_owned();
    }
    crate::domain::plain::short(view.status, view.reason.as_deref(), view.phase.as_deref())
        .to_string()
}

fn table_row<'a>(
    state: &State,
    row: &'a BoardRow,
    wide: bool,
    progress: Option<String>,
) -> Row<'a> {
    let view = &row.view;
    let since = |time: Option<std::time::SystemTime>| {
        time.map(|t| age::compact(t, state.now)).unwrap_or_default()
    };
    let style = if view.status == Status::InputRequired {
        status_style(Status::InputRequired, state.color).add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    let mut cells = vec![
        Cell::from(view.id.as_str()),
        Cell::from(agent_cell(view)),
        Cell::from(Span::styled(
            status_cell(view, wide),
            status_style(view.status, state.color),
        )),
    ];
    if wide {
        cells.push(Cell::from(since(row.created)));
    }
    cells.push(Cell::from(since(row.last_activity)));
    if let Some(progress) = progress {
        cells.push(Cell::from(progress));
    }
    cells.push(Cell::from(view.objective.lines().next().unwrap_or("")));
    Row::new(cells).style(style)
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
    let said = state
        .selected_row()
        .map(|row| {
            let view = &row.view;
            let said = crate::domain::plain::said(
                view.status,
                view.reason.as_deref(),
                view.phase.as_deref(),
                view.hint.as_deref(),
            );
            format!(" — {}", visible(&said.line()))
        })
        .unwrap_or_default();
    let title = match (&state.selected, preview) {
        (Some(id), Some(p)) if p.live => format!(" {id}{said} — screen "),
        (Some(id), Some(_)) => format!(" {id}{said} — transcript "),
        (Some(id), None) => format!(" {id}{said} "),
        (None, _) => " preview ".to_string(),
    };
    let block = Block::new().borders(Borders::TOP).title(title);
    let inner = block.inner(area);
    let lines: Vec<Line> = match preview {
        Some(p) => {
            let mut lines = lead_lines(state, p, inner.width as usize, inner.height as usize);
            let room = (inner.height as usize).saturating_sub(lines.len());
            let skip = p.lines.len().saturating_sub(room);
            lines.extend(p.lines[skip..].iter().map(|line| Line::raw(line.as_str())));
            lines
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

/// What the preview leads with, wrapped to `width`, up to half of `height`: the question a
/// permission dialog asks (`p` answers it), else the child's latest answer; then a rule.
fn lead_lines(
    state: &State,
    preview: &crate::ops::Preview,
    width: usize,
    height: usize,
) -> Vec<Line<'static>> {
    if preview.lead.is_empty() || width < 8 {
        return Vec::new();
    }
    let row = state.selected_row().map(|row| &row.view);
    let asking = row.is_some_and(|view| {
        view.status == Status::InputRequired && view.reason.as_deref() == Some("permission_prompt")
    });
    // `p` answers what cuekit can answer (a request it holds); a dialog on a screen is
    // answered in the pane.
    let answerable = row.is_some_and(|view| view.request.is_some());
    let (label, after) = match (asking, answerable) {
        (true, true) => ("it asks: ", "p answers it, ↵ attaches"),
        (true, false) => ("it asks: ", "↵ attaches to answer it"),
        (false, _) => ("answer: ", "the screen"),
    };
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    let text = format!("{label}{}", preview.lead.join("\n"));
    'wrap: for line in text.lines() {
        let chars: Vec<char> = visible(line).chars().collect();
        for chunk in chars.chunks(width).take(height / 2) {
            if lines.len() >= height / 2 {
                break 'wrap;
            }
            lines.push(Line::styled(chunk.iter().collect::<String>(), bold));
        }
        if chars.is_empty() {
            lines.push(Line::raw(""));
        }
    }
    lines.push(Line::styled(
        format!("── {after} ──"),
        Style::new().add_modifier(Modifier::DIM),
    ));
    lines
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
        Mode::HandOff {
            task_id,
            to,
            message: None,
        } => Line::from(vec![
            Span::styled(format!("hand {task_id} off to "), bold),
            Span::raw(format!("{to}▏")),
            Span::styled(
                "   (↑↓ another agent, :MODEL a model, Enter next, Esc drops)",
                Style::new().add_modifier(Modifier::DIM),
            ),
        ]),
        Mode::HandOff {
            to,
            message: Some(text),
            ..
        } => Line::from(vec![
            Span::styled(format!("message for {to} (optional)> "), bold),
            Span::raw(format!("{text}▏")),
            Span::styled(
                "   (Enter hands off, Esc drops)",
                Style::new().add_modifier(Modifier::DIM),
            ),
        ]),
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

/// The status line after a steer: `ID: steered — the child received your message`, in the
/// words every face uses (`crate::domain::plain::steer_said`), no code.
pub fn steer_receipt(task_id: &str, receipt: &crate::ops::SteerReceipt) -> String {
    let said = crate::domain::plain::steer_said(receipt.receipt, receipt.blocked_by);
    format!("{task_id}: {}", said.line())
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
    #[test]
    fn a_steer_receipt_speaks_plainly() {
        use crate::domain::attention::Attention;
        use crate::domain::steer::Receipt;
        let receipt = |receipt, blocked_by| crate::ops::SteerReceipt {
            task_id: "t_0123456789ab".into(),
            receipt,
            blocked_by,
            delivery: None,
            enter_retried: false,
            message: None,
            elapsed_ms: 0,
            at: String::new(),
        };
        assert_eq!(
            super::steer_receipt("t_0123456789ab", &receipt(Receipt::Submitted, None)),
            "t_0123456789ab: steered — the child received your message"
        );
        let blocked = super::steer_receipt(
            "t_0123456789ab",
            &receipt(Receipt::Blocked, Some(Attention::AuthRequired)),
        );
        assert_eq!(
            blocked,
            "t_0123456789ab: not sent — a dialog holds the child: needs a login or API key"
        );
        assert!(blocked.chars().count() <= 80, "{blocked}");
    }

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

    /// A permission row under an idle one in creation order, selected, its preview leading
    /// with the question.
    fn asking() -> State {
        let mut rows = board();
        let mut asks = crate::top::fixtures::row(
            "t_00000000000f",
            Status::InputRequired,
            Some("permission_prompt"),
            600,
            "Tidy the release script",
        );
        asks.view.hint = Some(
            "it asks: Allow execution of [Shell]? (Shell echo hi > f.txt) 1. Allow once · \
             2. Allow for this session · 3. No, suggest changes (esc); attach and answer"
                .into(),
        );
        rows.push(asks);
        let mut state = loaded(rows.clone());
        state.selected = Some("t_00000000000f".into());
        update(
            &mut state,
            Msg::Refreshed(crate::ops::Board {
                rows,
                preview: Some(crate::ops::Preview {
                    task_id: "t_00000000000f".into(),
                    live: true,
                    lines: vec![
                        "│ ? Shell echo hi > f.txt".into(),
                        "│ Allow execution of [Shell]?".into(),
                        "│ ● 1. Allow once".into(),
                        " YOLO ctrl+y   no sandbox   gemini-2.5-pro (98% context left)".into(),
                    ],
                    lead: vec![
                        "Allow execution of [Shell]? (Shell echo hi > f.txt) 1. Allow once · \
                         2. Allow for this session · 3. No, suggest changes (esc)"
                            .into(),
                    ],
                }),
            }),
        );
        state
    }

    #[test]
    fn a_permission_row_leads_and_its_preview_starts_with_the_question() {
        let state = asking();
        let order: Vec<&str> = state.visible().iter().map(|r| r.view.id.as_str()).collect();
        assert_eq!(
            &order[..3],
            ["t_00000000000c", "t_00000000000f", "t_00000000000e"]
        );
        let shown = draw(&state, 80, 24);
        assert!(shown.contains("asks permission"), "{shown}");
        assert!(
            shown.contains("it asks: Allow execution of [Shell]?"),
            "{shown}"
        );
        assert!(shown.contains("p answer"), "{shown}");
        insta::assert_snapshot!("asking_80x24", shown);
        insta::assert_snapshot!("asking_120x40", draw(&state, 120, 40));
    }

    #[test]
    fn every_key_is_in_the_footer_at_80_columns() {
        let shown = draw(&loaded(board()), 80, 24);
        for key in [
            "↑↓",
            "↵",
            "s steer",
            "p answer",
            "x cancel",
            "h hand off",
            "l log",
            "r result",
            "d diff",
            "/ filter",
            "a all",
            "? help",
            "q quit",
        ] {
            assert!(shown.contains(key), "{key} missing:\n{shown}");
        }
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
    fn hand_off_asks_the_agent_then_the_message() {
        let mut state = loaded(board());
        state.agents = vec!["gemini".into(), "opencode".into()];
        update(&mut state, Msg::Key(Key::Char('h')));
        let shown = draw(&state, 100, 14);
        assert!(
            shown.contains("hand t_00000000000c off to opencode"),
            "{shown}"
        );
        update(&mut state, Msg::Key(Key::Enter));
        for c in "polish it".chars() {
            update(&mut state, Msg::Key(Key::Char(c)));
        }
        insta::assert_snapshot!(draw(&state, 100, 14));
    }

    #[test]
    fn help_overlay() {
        let mut state = loaded(board());
        update(&mut state, Msg::Key(Key::Char('?')));
        insta::assert_snapshot!(draw(&state, 100, 20));
    }
}

//! The session as someone attached to the pane reads it (and `cuekit logs` later): the
//! prompt, the answer as it streams, thoughts folded to a line, plans, tool calls with kind,
//! title, status and a short output, permission requests with their options, stop reasons,
//! errors. Pure text; the agent's own words have their control characters escaped.

use super::protocol::{PermissionOption, ToolCall, Update};
use crate::domain::display::terminal_text::visible;

/// How much of a tool's output is shown in the pane (all of it is in `events.jsonl`).
const OUTPUT_LINES: usize = 6;

pub fn header(first_prompt: &str) -> String {
    let first = first_prompt.lines().next().unwrap_or("");
    format!("── cuekit acp ── {}\n", visible(first))
}

pub fn prompt(text: &str) -> String {
    let mut out = String::from("\n▶ you\n");
    for line in text.lines() {
        out.push_str(&format!("  {}\n", visible(line)));
    }
    out.push_str("◀ agent\n");
    out
}

pub fn note(text: &str) -> String {
    format!("· {}\n", visible(text))
}

/// How much of an agent's error is shown (its whole text is in `events.jsonl`).
const ERROR_CHARS: usize = 400;

pub fn failure(text: &str) -> String {
    format!("✗ {}\n", visible(&shortened(text, ERROR_CHARS)))
}

/// `text` cut to `limit` characters, with a mark where it was cut.
pub fn shortened(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!(
            "{}… ({} characters more)",
            &text[..at],
            text[at..].chars().count()
        ),
        None => text.to_string(),
    }
}

pub fn stop(reason: &str) -> String {
    format!("\n■ turn ended: {}\n", visible(reason))
}

pub fn permission(tool: &ToolCall, options: &[PermissionOption]) -> String {
    let mut out = format!("\n? permission: {}\n", describe(tool));
    if let Some(text) = &tool.text {
        out.push_str(&excerpt(text));
    }
    for option in options {
        out.push_str(&format!(
            "    [{}] {} ({})\n",
            visible(&option.id),
            visible(&option.name),
            visible(&option.kind)
        ));
    }
    out
}

pub fn asking() -> String {
    "  waiting for an answer: `cuekit approve <id> --allow|--allow-always|--reject`, or type y, a or n here\n"
        .to_string()
}

pub fn answered(option: Option<&PermissionOption>, by: &str) -> String {
    match option {
        Some(option) => format!(
            "  → {} ({}, by {})\n",
            visible(&option.name),
            visible(&option.kind),
            visible(by)
        ),
        None => format!("  → cancelled (by {})\n", visible(by)),
    }
}

fn describe(tool: &ToolCall) -> String {
    let kind = tool.kind.map_or("other", |k| k.as_str());
    let title = tool.title.as_deref().unwrap_or("(untitled)");
    let mut text = format!("[{kind}] {}", visible(title));
    if !tool.paths.is_empty() {
        text.push_str(&format!(" — {}", visible(&tool.paths.join(", "))));
    }
    text
}

/// The first lines of a tool's output, indented.
fn excerpt(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in lines.iter().take(OUTPUT_LINES) {
        out.push_str(&format!("    │ {}\n", visible(line)));
    }
    if lines.len() > OUTPUT_LINES {
        out.push_str(&format!(
            "    │ … {} more lines\n",
            lines.len() - OUTPUT_LINES
        ));
    }
    out
}

/// What an update shows, if anything.
pub fn update(update: &Update) -> Option<String> {
    match update {
        Update::AgentText(text) => Some(visible(text).into_owned()),
        Update::Thought(text) => {
            let first = text.trim().lines().next().unwrap_or("");
            (!first.is_empty()).then(|| format!("\n  (thinking: {})\n", visible(first)))
        }
        Update::UserText(_) | Update::Other(_) => None,
        Update::ToolCall(tool) => Some(format!(
            "\n⚙ {} [{}]\n",
            describe(tool),
            tool.status.as_deref().unwrap_or("pending")
        )),
        Update::ToolCallUpdate(tool) => {
            let status = tool.status.as_deref()?;
            let mut out = format!(
                "  ⚙ {} → {}\n",
                tool.title.as_deref().map_or_else(
                    || visible(&tool.id).into_owned(),
                    |t| visible(t).into_owned()
                ),
                visible(status)
            );
            if let Some(text) = &tool.text {
                out.push_str(&excerpt(text));
            }
            Some(out)
        }
        Update::Plan(entries) => {
            let mut out = String::from("\n☰ plan\n");
            for (status, content) in entries {
                let mark = match status.as_str() {
                    "completed" => "✓",
                    "in_progress" => "▸",
                    _ => "·",
                };
                out.push_str(&format!("  {mark} {}\n", visible(content)));
            }
            Some(out)
        }
        Update::ModeChanged(mode) => Some(note(&format!("mode: {mode}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::acp::policy::ToolKind;

    #[test]
    fn tool_calls_permissions_and_plans_read_plainly() {
        let tool = ToolCall {
            id: "t1".into(),
            kind: Some(ToolKind::Execute),
            title: Some("echo hi > f.txt".into()),
            text: Some((1..=8).map(|n| format!("line {n}\n")).collect()),
            ..ToolCall::default()
        };
        let options = vec![PermissionOption {
            id: "proceed_once".into(),
            name: "Allow".into(),
            kind: "allow_once".into(),
        }];
        let shown = permission(&tool, &options);
        assert!(
            shown.contains("? permission: [execute] echo hi > f.txt"),
            "{shown}"
        );
        assert!(
            shown.contains("[proceed_once] Allow (allow_once)"),
            "{shown}"
        );
        assert!(shown.contains("… 2 more lines"), "{shown}");
        let plan = update(&Update::Plan(vec![
            ("completed".into(), "read".into()),
            ("pending".into(), "write".into()),
        ]))
        .unwrap();
        assert!(
            plan.contains("✓ read") && plan.contains("· write"),
            "{plan}"
        );
        // An agent's escape sequences never reach the terminal raw.
        let text = update(&Update::AgentText("a\u{1b}]0;x\u{7}b".into())).unwrap();
        assert!(!text.contains('\u{1b}'), "{text}");
        assert_eq!(
            update(&Update::Other("available_commands_update".into())),
            None
        );
    }
}

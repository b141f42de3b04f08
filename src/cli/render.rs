//! Text and JSON rendering shared by the subcommands.

use serde::Serialize;

use crate::ops::TaskView;

pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("views serialize")
    );
}

/// The one-line summary used by list and wait.
pub fn task_line(task: &TaskView) -> String {
    let exit = task
        .exit_code
        .map(|code| format!(" (exit {code})"))
        .unwrap_or_default();
    let reason = task
        .reason
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    format!(
        "{}  {}{exit}{reason}",
        task.id,
        super::style::status(task.status, 0)
    )
}

/// The full view used by submit and status.
pub fn task_details(task: &TaskView) -> String {
    let mut out = task_line(task);
    let mode = task.mode.map_or("-", |m| m.as_str());
    let model = task
        .model
        .as_deref()
        .map(|m| format!(", model {m}"))
        .unwrap_or_default();
    out.push_str(&format!(
        "\n  agent:      {} ({mode}{model})",
        task.agent_kind
    ));
    out.push_str(&format!(
        "\n  objective:  {}",
        first_line(&task.objective, 100)
    ));
    if let Some(hint) = &task.hint {
        out.push_str(&format!("\n  hint:       {hint}"));
    }
    if let Some(host) = &task.host {
        out.push_str(&format!(
            "\n  host:       {host} (the paths below are the host's)"
        ));
    }
    if let Some(role) = &task.role {
        out.push_str(&format!("\n  role:       {role}"));
    }
    if let Some(team) = &task.team {
        out.push_str(&format!("\n  team:       {team}"));
    }
    if let Some(report) = &task.last_report {
        out.push_str(&format!(
            "\n  report:     {} #{} at {}: {}",
            report.kind.as_str(),
            report.seq,
            report.at,
            first_line(&report.message, 100)
        ));
    }
    for warning in &task.warnings {
        out.push_str(&format!("\n  warning:    {warning}"));
    }
    if let (Some(branch), Some(worktree)) = (&task.branch, &task.worktree) {
        let base = task.base_ref.as_deref().unwrap_or("?");
        out.push_str(&format!("\n  branch:     {branch} (from {base})"));
        out.push_str(&format!("\n  worktree:   {}", worktree.display()));
        if let Some(stat) = &task.diff_stat {
            out.push_str(&format!("\n  changes:    {stat}"));
        }
    }
    out.push_str(&format!("\n  transcript: {}", task.transcript.display()));
    if let Some(attach) = &task.attach_hint
        && !task.status.is_terminal()
    {
        out.push_str(&format!(
            "\n  attach:     {attach}   (or `cuekit attach {}`)",
            task.id
        ));
    }
    if task.host.is_some() && !task.status.is_terminal() {
        out.push_str(&format!("\n  attach:     cuekit attach {}", task.id));
    }
    out
}

pub fn first_line(text: &str, max_chars: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max_chars || text.lines().nth(1).is_some() {
        let cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

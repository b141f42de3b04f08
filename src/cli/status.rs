use std::path::Path;

use super::render::{first_line, print_json, say, task_details, task_line, visible};
use super::style;
use crate::ops;

pub fn status(ids: &[String], cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let tasks = ops::status(ids, cwd)?;
    if json {
        if let [task] = tasks.as_slice() {
            print_json(task);
        } else {
            print_json(&tasks);
        }
    } else {
        let details: Vec<String> = tasks.iter().map(task_details).collect();
        println!("{}", details.join("\n\n"));
    }
    Ok(0)
}

pub fn team_status(team: &str, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let summary = ops::team_status(team, cwd)?;
    if json {
        print_json(&summary);
        return Ok(0);
    }
    let counts: Vec<String> = summary
        .counts
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    say(&format!(
        "team {}: {} task{} ({})",
        summary.team,
        summary.total,
        if summary.total == 1 { "" } else { "s" },
        counts.join(", ")
    ));
    for waiting in &summary.waiting {
        let message = waiting
            .message
            .as_deref()
            .map(|m| format!(": {}", first_line(m, 80)))
            .unwrap_or_default();
        say(&format!(
            "  waits:  {} [{}]{message}",
            waiting.id, waiting.reason
        ));
    }
    for task in &summary.tasks {
        println!("  {}", task_line(task));
    }
    Ok(0)
}

pub fn list(all: bool, team: Option<&str>, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let tasks = match team {
        Some(team) => ops::team_list(team, cwd)?,
        None => ops::list(all, cwd)?,
    };
    if json {
        print_json(&tasks);
        return Ok(0);
    }
    if tasks.is_empty() {
        println!(
            "no tasks{}",
            if all {
                ""
            } else {
                " in this project (try --all)"
            }
        );
        return Ok(0);
    }
    // The branch column only when some task has one.
    let branches = tasks.iter().any(|t| t.branch.is_some());
    let branch_header = if branches {
        format!("{:<40} ", "BRANCH (CHANGES)")
    } else {
        String::new()
    };
    // The host column only when some task runs on a host.
    let hosts = tasks.iter().any(|t| t.host.is_some());
    let host_header = if hosts {
        format!("{:<12} ", "HOST")
    } else {
        String::new()
    };
    let now = std::time::SystemTime::now();
    println!(
        "{:<16} {host_header}{:<14} {:<8} {:<11} {:<11} {:<9} {branch_header}OBJECTIVE",
        "ID", "STATUS", "REPORT", "AGENT", "MODE", "CREATED"
    );
    for task in &tasks {
        // The kind of the child's last report: `blocked` means it waits on the parent.
        let report = task
            .last_report
            .as_ref()
            .map_or("-", |report| report.kind.as_str());
        // A stored conflict check that found this task's work clashing: `!conflict`.
        let clash = if task.conflicts.is_empty() {
            ""
        } else {
            " !conflict"
        };
        let branch = match (&task.branch, &task.diff_stat) {
            (Some(branch), Some(stat)) => format!(
                "{:<40} ",
                format!(
                    "{branch} ({}f +{} -{}){clash}",
                    stat.files, stat.insertions, stat.deletions
                )
            ),
            (Some(branch), None) => format!("{:<40} ", format!("{branch}{clash}")),
            (None, _) if branches => format!("{:<40} ", "-"),
            (None, _) => String::new(),
        };
        let host = if hosts {
            format!("{:<12} ", task.host.as_deref().unwrap_or("-"))
        } else {
            String::new()
        };
        // The status word is cuekit's own and coloured; everything around it is made visible.
        let before = format!("{:<16} {host}", task.id);
        let after = format!(
            " {:<8} {:<11} {:<11} {:<9} {branch}{}",
            report,
            task.agent_kind,
            task.mode.map_or("-", |m| m.as_str()),
            crate::domain::display::age::ago(&task.created_at, now),
            first_line(&task.objective, 60)
        );
        println!(
            "{}{}{}",
            visible(&before),
            // An ending on record whose processes are still being ended: not a plain one.
            if task.stopping {
                format!("{:<14}", "stopping")
            } else {
                style::status(task.status, 14)
            },
            visible(&after)
        );
    }
    Ok(0)
}

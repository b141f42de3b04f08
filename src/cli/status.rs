use std::path::Path;

use super::render::{first_line, print_json, say, task_details, task_line};
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
    let mut tasks = tasks;
    super::list_table::sort(&mut tasks);
    let now = std::time::SystemTime::now();
    for line in super::list_table::lines(&tasks, super::list_table::width(), now) {
        println!("{line}");
    }
    Ok(0)
}

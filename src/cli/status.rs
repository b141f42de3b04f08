use std::path::Path;

use super::render::{first_line, print_json, task_details};
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

pub fn list(all: bool, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let tasks = ops::list(all, cwd)?;
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
    println!(
        "{:<16} {:<10} {:<8} {:<12} {:<24} {branch_header}OBJECTIVE",
        "ID", "STATUS", "AGENT", "MODE", "CREATED"
    );
    for task in &tasks {
        let branch = match (&task.branch, &task.diff_stat) {
            (Some(branch), Some(stat)) => format!(
                "{:<40} ",
                format!(
                    "{branch} ({}f +{} -{})",
                    stat.files, stat.insertions, stat.deletions
                )
            ),
            (Some(branch), None) => format!("{branch:<40} "),
            (None, _) if branches => format!("{:<40} ", "-"),
            (None, _) => String::new(),
        };
        println!(
            "{:<16} {:<10} {:<8} {:<12} {:<24} {branch}{}",
            task.id,
            task.status.as_str(),
            task.agent_kind,
            task.mode.map_or("-", |m| m.as_str()),
            task.created_at,
            first_line(&task.objective, 60)
        );
    }
    Ok(0)
}

use std::path::Path;

use super::render::{first_line, print_json, task_details};
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
    let now = std::time::SystemTime::now();
    println!(
        "{:<16} {:<14} {:<11} {:<11} {:<9} OBJECTIVE",
        "ID", "STATUS", "AGENT", "MODE", "CREATED"
    );
    for task in &tasks {
        println!(
            "{:<16} {} {:<11} {:<11} {:<9} {}",
            task.id,
            style::status(task.status, 14),
            task.agent_kind,
            task.mode.as_str(),
            crate::age::ago(&task.created_at, now),
            first_line(&task.objective, 60)
        );
    }
    Ok(0)
}

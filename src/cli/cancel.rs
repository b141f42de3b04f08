use std::path::Path;
use std::time::Duration;

use clap::Args;

use super::render::{print_json, task_line};
use crate::ops;

#[derive(Debug, Args)]
pub struct CancelArgs {
    #[arg(required_unless_present = "team", value_name = "ID", add = super::task_ids())]
    ids: Vec<String>,
    /// Cancel every member of a team (ended members only lose their leftover sessions).
    #[arg(long, value_name = "NAME", conflicts_with = "ids")]
    team: Option<String>,
    /// How long the agent gets to exit on SIGTERM before SIGKILL.
    #[arg(long, default_value = "3s", value_parser = super::parse_duration)]
    grace: Duration,
}

pub fn run(args: &CancelArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let ids = match &args.team {
        Some(team) => ops::team_ids(team)?,
        None => args.ids.clone(),
    };
    let tasks = ops::cancel(&ids, cwd, args.grace)?;
    if json {
        print_json(&tasks);
    } else {
        for task in &tasks {
            println!("{}", task_line(task));
        }
    }
    Ok(0)
}

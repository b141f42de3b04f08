use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::ops;

#[derive(Debug, Args)]
pub struct ConflictsArgs {
    /// Only a team's members.
    #[arg(long, value_name = "TEAM")]
    team: Option<String>,
}

pub fn run(args: &ConflictsArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let found = ops::conflicts(args.team.as_deref(), cwd)?;
    if json {
        print_json(&found);
        return Ok(0);
    }
    for conflict in &found.conflicts {
        let files: Vec<&str> = conflict.files.iter().map(|f| f.path.as_str()).collect();
        say(&format!(
            "{:<16} {:<24} {:<16} {}",
            conflict.a,
            conflict.other(),
            conflict.reason,
            files.join(", ")
        ));
    }
    say(&format!(
        "{} conflict{} among {} worktree task{}",
        found.conflicts.len(),
        if found.conflicts.len() == 1 { "" } else { "s" },
        found.checked.len(),
        if found.checked.len() == 1 { "" } else { "s" }
    ));
    Ok(0)
}

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::render::{print_json, say, task_line};
use crate::ops::{self, SubmitOutcome};

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Submit every member of a team spec (a YAML list of `{objective, role?, agent?, …}`).
    Submit {
        /// The team's name: a label on each member, for `--team` on list, status, wait, …
        #[arg(value_name = "NAME")]
        name: String,
        /// The YAML file listing the members.
        #[arg(long, value_name = "FILE")]
        spec: PathBuf,
    },
}

pub fn run(command: &TeamCommand, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    match command {
        TeamCommand::Submit { name, spec } => {
            let spec = ops::read_team_spec(spec)?;
            let submitted = ops::team_submit(name, &spec, cwd)?;
            if json {
                print_json(&submitted);
                return Ok(0);
            }
            for outcome in &submitted.tasks {
                match outcome {
                    SubmitOutcome::Submitted(task) => println!("{}", task_line(task)),
                    SubmitOutcome::DryRun { launch_command, .. } => say(launch_command),
                }
            }
            Ok(0)
        }
    }
}

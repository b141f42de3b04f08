use std::path::Path;

use clap::Subcommand;

use super::render::{print_json, say};
use crate::domain::error::ErrorCode;
use crate::ops::{self, HostReport};

/// `cuekit hosts`: exit status 0 when every host answers with this cuekit's version, else the
/// first failing host's error code's status.
pub fn run(cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let reports = ops::hosts(cwd)?;
    if json {
        print_json(&reports);
    } else if reports.is_empty() {
        println!("no hosts configured (add `hosts:` to ~/.config/cuekit/config.yaml)");
    } else {
        for report in &reports {
            say(&line(report));
        }
    }
    Ok(reports
        .iter()
        .find_map(|report| report.error.as_ref())
        .map_or(0, |error| error.code.exit_status()))
}

/// `gpu  me@gpu  ok  cuekit 0.1.0  tmux 3.3a  tasks: 2 running, 1 completed`
fn line(report: &HostReport) -> String {
    let state = match &report.error {
        None => "ok".to_string(),
        Some(error) if error.code == ErrorCode::HostUnreachable => "unreachable".to_string(),
        Some(error) => error.code.as_str().to_string(),
    };
    let mut out = format!("{}  {}  {state}", report.name, report.ssh);
    for part in [&report.cuekit_version, &report.tmux_version]
        .into_iter()
        .flatten()
    {
        out.push_str(&format!("  {part}"));
    }
    if let Some(tasks) = &report.tasks {
        let counts: Vec<String> = tasks.iter().map(|(s, n)| format!("{n} {s}")).collect();
        out.push_str(&format!("  tasks: {}", counts.join(", ")));
    }
    if let Some(error) = &report.error {
        out.push_str(&format!("\n  {}", error.message));
        if let Some(hint) = &error.hint {
            out.push_str(&format!("\n  hint: {hint}"));
        }
    }
    out
}

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Copy this cuekit to the host (its `cuekit` path, else ~/.local/bin/cuekit) when the
    /// host's OS and architecture match, and check it runs.
    Install {
        /// A host configured under `hosts:`.
        name: String,
    },
}

pub fn host(command: &HostCommand, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let HostCommand::Install { name } = command;
    let installed = ops::host_install(name, cwd)?;
    if json {
        print_json(&installed);
    } else {
        say(&format!(
            "host {}: installed {} at {}",
            installed.host, installed.version, installed.path
        ));
        if let Some(note) = &installed.note {
            say(&format!("  note: {note}"));
        }
    }
    Ok(0)
}

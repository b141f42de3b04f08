//! `cuekit doctor`: what is missing before anything runs, one line per check with the next
//! step for each problem. Nothing here touches the network, writes credentials or waits long
//! on a hung binary; `--fix` only creates directories and adds the `.gitignore` entry.
//!
//! Each area's checks are a file of their own: agents, environment, git, queue, sandbox,
//! storage, tmux, trust.

mod agents;
mod environment;
mod git;
mod outbound;
mod queue;
mod sandbox;
mod storage;
mod tmux;
mod trust;

use std::path::Path;

use serde::Serialize;

use crate::effects::config::Config;
use crate::effects::tmux::Socket;
use agents::agent_checks;
use environment::environment_checks;
use git::git_check;
use git::worktree_check;
use queue::queue_check;
use sandbox::keystroke_check;
use sandbox::{identity_check, network_check, sandbox_check};
use storage::storage_checks;
use tmux::orphan_check;
use tmux::tmux_checks;
use trust::trust_check;

pub use storage::{add_gitignore_entry, ignores_cuekit};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// What `--fix` did about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
}

impl Check {
    pub fn new(name: impl Into<String>, level: Level, message: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            level,
            message: message.into(),
            next_step: None,
            fixed: None,
        }
    }

    fn next(mut self, step: impl Into<String>) -> Check {
        self.next_step = Some(step.into());
        self
    }
}

/// `all`: every agent's binary and login; else only the agents in use (the default agent,
/// those a config file sets `adapters.<kind>` for, those of tasks in the registry).
pub fn doctor(cwd: &Path, fix: bool, all: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let config = match Config::load(cwd) {
        Ok(config) => {
            let files: Vec<String> = config.files().iter().map(|f| f.to_string()).collect();
            let message = if files.is_empty() {
                "no config file (built-in defaults)".to_string()
            } else {
                format!("parses: {}", files.join(", "))
            };
            checks.push(Check::new("config", Level::Ok, message));
            if let Some(check) = trust_check(&config) {
                checks.push(check);
            }
            if config
                .notify()
                .value
                .contains(&crate::effects::config::NotifyChannel::Desktop)
            {
                checks.push(match crate::effects::notify::session_bus() {
                    Ok(()) => Check::new(
                        "desktop notifications",
                        Level::Ok,
                        "D-Bus session bus reachable",
                    ),
                    Err(why) => Check::new("desktop notifications", Level::Warn, why)
                        .next("run cuekit inside a desktop session, or drop `desktop` from notify"),
                });
            }
            checks.extend(outbound::outbound_check(&config));
            checks.push(sandbox_check(&config));
            checks.extend(network_check(&config));
            checks.extend(identity_check(&config));
            checks.push(keystroke_check());
            config
        }
        Err(err) => {
            checks.push(
                Check::new("config", Level::Fail, err.message)
                    .next("fix the file; nothing can be submitted until it parses"),
            );
            Config::default()
        }
    };
    let socket = Socket(config.socket().value);
    checks.extend(tmux_checks(&socket));
    if let Ok(socket) = socket.resolve() {
        checks.push(orphan_check(&socket, fix));
    }
    checks.extend(agent_checks(&config, all));
    checks.extend(queue_check());
    checks.extend(queue::stranded_check());
    checks.extend(environment_checks());
    checks.extend(storage_checks(cwd, fix));
    checks.push(git_check());
    checks.extend(worktree_check(cwd, &config, fix));
    checks
}

//! `cuekit trust FILE`: the file is read once, through the project door, and those bytes are
//! both what is checked and what is trusted, so a file swapped between the two is never
//! trusted unread.

use std::path::{Path, PathBuf};

use crate::domain::error::{Error, ErrorCode, Result};

/// Trusts `file` as it is now; returns its absolute path. Only a file that parses can be
/// trusted (trusting a broken one would be trusting nothing in particular): a config file, or
/// a team spec (whose members may run the command agent). A broken one is refused with its
/// location, as a config file.
pub fn trust(file: &Path) -> Result<PathBuf> {
    let bytes = crate::effects::project::files::read_named(file)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        Error::invalid_input(format!("{} is not UTF-8 text", file.display()))
            .with_hint("a config file or a team spec is YAML text")
    })?;
    if let Err(config_error) = crate::effects::config::parse_text(text, file) {
        let is_config = file
            .file_name()
            .is_some_and(|name| name == crate::effects::config::PROJECT_FILE);
        if is_config {
            return Err(config_error);
        }
        if let Err(team_error) =
            crate::effects::team::parse_team_spec(text, &file.display().to_string())
        {
            // Nested too deep to be parsed at all: the config's error says so.
            if crate::domain::yaml_depth::too_deep(text, crate::domain::yaml_depth::MAX_DEPTH)
                .is_some()
            {
                return Err(config_error);
            }
            // A list, or a mapping with members, was meant as a team spec: its own error says
            // what is wrong with it.
            let meant_as_team = match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
                Ok(serde_yaml_ng::Value::Sequence(_)) => true,
                Ok(serde_yaml_ng::Value::Mapping(root)) => root.contains_key("members"),
                _ => false,
            };
            return Err(if meant_as_team {
                team_error
            } else {
                config_error
            });
        }
    }
    crate::effects::trust::trust(file, &bytes)
}

/// `cuekit trust [FILE] [--revoke]`, as a person runs it: refused inside a task's pane (its
/// ancestry says so, whatever its environment) and away from a terminal, since trust is a
/// person's decision. `file` defaults to the project's config file, found from `cwd` upwards.
/// Returns the file's path and the state it is left in.
pub fn trust_by_person(
    file: Option<&Path>,
    revoke: bool,
    cwd: &Path,
) -> Result<(PathBuf, &'static str)> {
    // A child agent may run shell commands: trust is the person's, not the task's. Its own
    // environment can be cleared (`env -u CUEKIT_TASK_ID`); its ancestry cannot.
    let inside = std::env::var(crate::effects::process::TASK_ID_VARIABLE)
        .ok()
        .or_else(|| super::task::task_of_process(std::process::id()));
    if let Some(task) = inside {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "`cuekit trust` does not run inside a cuekit task (this runs in task {task}'s \
                 pane): trust is a person's decision"
            ),
        )
        .with_hint("run it yourself, in your own shell"));
    }
    // A person runs it at a terminal; a process that detached from its own (`setsid`, a
    // server's `run-shell`) is not one.
    if crate::effects::process::controlling_terminal(std::process::id()).is_none() {
        return Err(Error::new(
            ErrorCode::NotATerminal,
            "`cuekit trust` runs only at a terminal: trust is a person's decision",
        )
        .with_hint("run it yourself, in your own terminal"));
    }
    let file = match file {
        Some(file) => file.to_path_buf(),
        None => crate::effects::config::project_file(cwd).ok_or_else(|| {
            Error::invalid_input(format!(
                "no {} here or above",
                crate::effects::config::PROJECT_FILE
            ))
            .with_hint("name the file: `cuekit trust PATH`")
        })?,
    };
    let (path, state) = if revoke {
        (crate::effects::trust::revoke(&file)?, "untrusted")
    } else {
        (trust(&file)?, "trusted")
    };
    Ok((path, state))
}

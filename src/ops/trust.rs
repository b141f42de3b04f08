//! `cuekit trust FILE`: the file is read once, through the project door, and those bytes are
//! both what is checked and what is trusted, so a file swapped between the two is never
//! trusted unread.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::domain::error::{Error, ErrorCode, Result};

/// Trusts `file` as it is now; returns its absolute path. Only a file that parses can be
/// trusted (trusting a broken one would be trusting nothing in particular): a config file, or
/// a team spec (whose members may run the command agent). A broken one is refused with its
/// location, as a config file.
pub fn trust(file: &Path) -> Result<PathBuf> {
    let (bytes, _) = read_checked(file)?;
    crate::effects::trust::trust(file, &bytes)
}

/// What trusting a file makes apply, shown before a person decides.
#[derive(Debug, Clone, Serialize)]
pub struct TrustPreview {
    pub file: PathBuf,
    /// `config`, `team spec` or `agent file`.
    pub kind: &'static str,
    /// A config file's keys that run code or place files, each with its value (as YAML on one
    /// line): what its trust makes apply. Empty when it sets none.
    pub keys: Vec<(String, String)>,
    /// A team spec's or an agent file's whole text: each member runs as written, the agent
    /// loads the file as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// What a trusted file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Config,
    TeamSpec,
    /// A file an agent's own CLI loads from the project and that can run code.
    AgentFile,
}

/// The file's bytes, read once, and what it is.
fn read_checked(file: &Path) -> Result<(Vec<u8>, Kind)> {
    let bytes = crate::effects::project::files::read_named(file)?;
    // Known by its place (`.qwen/settings.json`, `.pi/extensions/x.ts`…), whatever its text.
    if crate::domain::adapter::project_files::is_code_file(file) {
        return Ok((bytes, Kind::AgentFile));
    }
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
        return Ok((bytes, Kind::TeamSpec));
    }
    Ok((bytes, Kind::Config))
}

/// The preview of `bytes`, read and checked as `file` by [`read_checked`].
fn preview(file: &Path, bytes: &[u8], kind: Kind) -> TrustPreview {
    let text = String::from_utf8_lossy(bytes).into_owned();
    if kind != Kind::Config {
        return TrustPreview {
            file: file.to_path_buf(),
            kind: if kind == Kind::AgentFile {
                "agent file"
            } else {
                "team spec"
            },
            keys: Vec::new(),
            text: Some(text),
        };
    }
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap_or_default();
    let (_, withheld) = crate::effects::config::class::sift(value.clone(), false);
    let keys = withheld
        .iter()
        .filter(|w| w.needs_trust())
        .map(|w| (w.key.clone(), value_at(&value, &w.key)))
        .collect();
    TrustPreview {
        file: file.to_path_buf(),
        kind: "config",
        keys,
        text: None,
    }
}

/// The value at a dotted key, as YAML on one line.
fn value_at(root: &serde_yaml_ng::Value, key: &str) -> String {
    let found = key.split('.').try_fold(root, |value, name| value.get(name));
    match found {
        Some(value) => serde_json::to_string(value).unwrap_or_else(|_| "(set)".into()),
        None => "(set)".into(),
    }
}

/// `cuekit trust [FILE] [--revoke]`, as a person runs it: refused inside a task's pane (its
/// ancestry says so, whatever its environment) and away from a terminal, since trust is a
/// person's decision. `file` defaults to the project's config file, found from `cwd` upwards.
/// Returns the file's path and the state it is left in.
///
/// Before trusting, `confirm` is shown what the trust makes apply ([`TrustPreview`]) and says
/// whether the person agrees; the bytes it was shown are the bytes trusted.
pub fn trust_by_person(
    file: Option<&Path>,
    revoke: bool,
    cwd: &Path,
    confirm: &mut dyn FnMut(&TrustPreview) -> bool,
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
    if revoke {
        return Ok((crate::effects::trust::revoke(&file)?, "untrusted"));
    }
    let (bytes, kind) = read_checked(&file)?;
    if !confirm(&preview(&file, &bytes, kind)) {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("{} is not trusted: the answer was no", file.display()),
        )
        .with_hint("read the file, then run `cuekit trust` again and answer y (or pass --yes)"));
    }
    Ok((crate::effects::trust::trust(&file, &bytes)?, "trusted"))
}

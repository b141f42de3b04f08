//! Registering this cuekit with a parent agent (an MCP client): its entry merged into the
//! client's own file, or a package for the client's extension system written. The texts are
//! the domain's ([`crate::domain::parent`]); this writes them.

use std::path::{Path, PathBuf};

use crate::domain::error::{Error, ErrorCode};
use crate::domain::parent::{Client, client_config, extension, install, snippet};
use crate::effects::bounded::{Bounded, RunError};

/// This cuekit binary's real path, which a client's config names.
pub fn this_binary() -> Result<std::path::PathBuf, Error> {
    let exe = std::env::current_exe().map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("cannot find the path of this cuekit binary: {err}"),
        )
    })?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

/// The credential variables of the agents a parent is likely to start: the default agent and
/// every agent installed here, each variable once.
pub fn child_auth_env(cwd: &Path) -> Vec<&'static str> {
    let config = crate::effects::config::Config::load(cwd).ok();
    let default_agent = config.as_ref().map(|c| c.agent().value);
    let mut names = Vec::new();
    for adapter in crate::domain::adapter::ADAPTERS {
        let bin = config
            .as_ref()
            .and_then(|c| c.bin(adapter.kind()))
            .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
        let wanted = default_agent.as_deref() == Some(adapter.kind())
            || (!adapter.runs_argv && crate::effects::which::find_on_path(&bin).is_some());
        if wanted {
            for name in adapter.auth_env {
                if !names.contains(name) {
                    names.push(*name);
                }
            }
        }
    }
    names
}

/// Registers this cuekit with `client` in its own file (see [`install`]).
pub fn install(
    client: Client,
    project: bool,
    force: bool,
    cwd: &Path,
) -> Result<serde_json::Value, Error> {
    let (exe, auth_env) = (this_binary()?, child_auth_env(cwd));
    let config = client_config(client, &exe, &auth_env);
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .ok_or_else(|| Error::new(ErrorCode::Io, "HOME is not set").with_hint("set HOME"))?;
    let (file, section): (std::path::PathBuf, &str) = match (client, project) {
        (Client::Claude, _) => return claude_add(&config, project),
        (Client::Codex, true) | (Client::Copilot, true) => {
            return Err(Error::invalid_input(
                "this client has no project file for MCP servers cuekit writes",
            )
            .with_hint("leave out --scope project"));
        }
        (Client::Codex, false) => {
            let dir = std::env::var_os("CODEX_HOME")
                .map_or_else(|| home.join(".codex"), std::path::PathBuf::from);
            return codex_append(&dir.join("config.toml"), &snippet(client, &exe, &auth_env));
        }
        (Client::Gemini, false) => (home.join(".gemini/settings.json"), "mcpServers"),
        (Client::Gemini, true) => (".gemini/settings.json".into(), "mcpServers"),
        (Client::Qwen, false) => (home.join(".qwen/settings.json"), "mcpServers"),
        (Client::Qwen, true) => (".qwen/settings.json".into(), "mcpServers"),
        (Client::Copilot, false) => (home.join(".copilot/mcp-config.json"), "mcpServers"),
        (Client::Opencode, false) => (home.join(".config/opencode/opencode.json"), "mcp"),
        (Client::Opencode, true) => ("opencode.json".into(), "mcp"),
        (Client::Generic, _) => {
            return Err(
                Error::invalid_input("a generic client has no file cuekit knows")
                    .with_hint("add the entry `cuekit mcp config` prints to your client's file"),
            );
        }
    };
    let entry = &config[section]["cuekit"];
    // A project's file is project data: read through the door, written where no link leads.
    let (file, old) = if project {
        let root = crate::effects::project::Root::new(cwd)?;
        let old = root.read_text(&file)?;
        (root.prove_no_links(&file)?, old)
    } else {
        let old = match std::fs::read_to_string(&file) {
            Ok(text) => Some(text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(Error::io("read", &file, err)),
        };
        (file, old)
    };
    let at = |err: Error| {
        Error::new(err.code, format!("{}: {}", file.display(), err.message))
            .with_hint(err.hint.unwrap_or_default())
    };
    let merged = install::merge_json(old.as_deref(), section, entry, force).map_err(at)?;
    let install::Merge::Text(text) = merged else {
        return Ok(serde_json::json!({"file": file, "changed": false}));
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|err| Error::io("create", dir, err))?;
    }
    let backup = match &old {
        Some(old) => {
            let backup = file.with_extension(format!(
                "{}.cuekit-backup",
                file.extension().and_then(|e| e.to_str()).unwrap_or("json")
            ));
            crate::effects::store::write_atomic(&backup, old.as_bytes())?;
            Some(backup)
        }
        None => None,
    };
    crate::effects::store::write_atomic(&file, text.as_bytes())?;
    Ok(serde_json::json!({"file": file, "changed": true, "backup": backup}))
}

/// How long `claude mcp add-json` may take.
const CLAUDE_ADD_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// Claude Code owns its user file at run time: the entry goes through its own command.
fn claude_add(config: &serde_json::Value, project: bool) -> Result<serde_json::Value, Error> {
    let entry = config["mcpServers"]["cuekit"].to_string();
    let scope = if project { "project" } else { "user" };
    let output = Bounded::new("claude", CLAUDE_ADD_WITHIN)
        .args(["mcp", "add-json", "-s", scope, "cuekit", &entry])
        .run()
        .map_err(|err| match err {
            RunError::Start { source, .. } => Error::new(
                ErrorCode::AgentNotFound,
                format!("cannot run `claude mcp add-json`: {source}"),
            )
            .with_hint(
                "install Claude Code, or add the entry `cuekit mcp config --client claude` prints",
            ),
            other => other.into(),
        })?;
    if !output.success() {
        return Err(Error::invalid_input(format!(
            "`claude mcp add-json` refused: {}",
            String::from_utf8_lossy(&output.stderr.bytes()).trim()
        ))
        .with_hint("`claude mcp remove cuekit -s SCOPE` first to replace an entry"));
    }
    Ok(serde_json::json!({"client": "claude", "scope": scope, "changed": true}))
}

/// Codex's TOML: the table is appended (the rest of the file, comments included, stays as it
/// is); a file that has a `cuekit` table already is left alone unless it is this very one.
fn codex_append(file: &Path, table: &str) -> Result<serde_json::Value, Error> {
    let old = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(Error::io("read", file, err)),
    };
    if old.contains(table.trim_end()) {
        return Ok(serde_json::json!({"file": file, "changed": false}));
    }
    if old
        .lines()
        .any(|line| line.trim() == "[mcp_servers.cuekit]")
    {
        return Err(Error::invalid_input(format!(
            "{} already has another [mcp_servers.cuekit] table: it was left as it is",
            file.display()
        ))
        .with_hint("replace it by hand with what `cuekit mcp config --client codex` prints"));
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|err| Error::io("create", dir, err))?;
    }
    let backup = (!old.is_empty()).then(|| file.with_extension("toml.cuekit-backup"));
    if let Some(backup) = &backup {
        crate::effects::store::write_atomic(backup, old.as_bytes())?;
    }
    let separator = if old.is_empty() || old.ends_with("\n\n") {
        ""
    } else if old.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    crate::effects::store::write_atomic(file, format!("{old}{separator}{table}").as_bytes())?;
    Ok(serde_json::json!({"file": file, "changed": true, "backup": backup}))
}

/// Writes the package for `client`'s own extension system into `dir` (default: cuekit's data
/// directory, `extensions/<client>`); returns the folder and the names written.
pub fn write_extension(
    client: Client,
    dir: Option<&Path>,
    cwd: &Path,
) -> Result<(PathBuf, Vec<&'static str>), Error> {
    let dir = match dir {
        Some(dir) => cwd.join(dir),
        None => crate::effects::store::data_dir()
            .ok_or_else(|| {
                Error::new(ErrorCode::Io, "cannot find a home directory")
                    .with_hint("set HOME, or pass --dir")
            })?
            .join("extensions")
            .join(client.name()),
    };
    let files = extension::files(client, &this_binary()?, &child_auth_env(cwd));
    for (name, content) in &files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            crate::effects::store::create_private_dir(parent)?;
        }
        crate::effects::store::write_atomic(&path, content.as_bytes())?;
    }
    Ok((dir, files.iter().map(|(name, _)| *name).collect()))
}

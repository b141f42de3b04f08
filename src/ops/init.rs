use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::PROJECT_FILE;

/// The starter's opening: what the file is and how a project file applies. Every line is true of
/// any starter `init` writes; the keys after it are commented out, so they keep their defaults.
const STARTER_HEAD: &str = "\
# cuekit project configuration, written by `cuekit init`. It sets only what differs from
# cuekit's built-in defaults: a key commented out keeps its default. `cuekit config` shows each
# effective value and where it comes from; docs/reference.md (\"Configuration\") and
# .cuekit.yaml.example in cuekit's repository describe every key.
# A project file is the repository's word (docs/guides/trust-and-faults.md): keys that run code
# (an agent's bin or env, worktree.setup, hooks, check) apply only while you trust the file as
# it is (`cuekit trust`, after any edit), and permissions may only be made stricter than your own.

";

/// Keys a project often sets, commented out.
const STARTER_KEYS: &str = "\
#   worktree: true   # every task in its own git worktree (`submit --no-worktree` overrides)
#   timeout: 30m     # stop a task after this long (timed_out)
# check:
#   run: [\"make test\"]   # a check every task gets: it completes only when its work passes
";

#[derive(Debug, Clone, Serialize)]
pub struct InitOutcome {
    pub config: PathBuf,
    /// Whether an existing file was replaced (`--force`).
    pub overwritten: bool,
    pub gitignore: PathBuf,
}

/// Writes the starter `.cuekit.yaml` into `dir` (never over an existing one unless `force`)
/// and makes `.gitignore` ignore `.cuekit/`; with `agent`, the starter's `defaults.agent` is
/// that one (say `antigravity` where the Gemini CLI's login no longer serves). The starter is
/// trusted (see [`crate::effects::trust`]); any later edit withdraws that until `cuekit trust`.
pub fn init(dir: &Path, force: bool, agent: Option<&str>) -> Result<InitOutcome> {
    let starter = starter(agent)?;
    let config = dir.join(PROJECT_FILE);
    let exists = config.exists();
    if exists && !force {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("{} already exists", config.display()),
        )
        .with_hint("keep it, or run `cuekit init --force` to replace it with the starter file"));
    }
    crate::effects::store::write_atomic(&config, starter.as_bytes())?;
    // cuekit's own starter, written at the person's request: its keys are trusted as written.
    crate::effects::trust::trust(&config, starter.as_bytes())?;
    crate::ops::doctor::add_gitignore_entry(dir)?;
    Ok(InitOutcome {
        config,
        overwritten: exists,
        gitignore: dir.join(".gitignore"),
    })
}

/// The starter: [`STARTER_HEAD`], then `defaults.agent` set only when `agent` is not the
/// built-in default, and the common keys commented out.
fn starter(agent: Option<&str>) -> Result<String> {
    let built_in = crate::domain::adapter::ADAPTERS[0].kind();
    let agent = agent
        .map(|kind| crate::domain::adapter::lookup(kind).map(|adapter| adapter.kind()))
        .transpose()?;
    let agent_line = match agent {
        Some(kind) if kind != built_in => format!(
            "defaults:\n  agent: {kind}   # the agent `cuekit submit` runs without --agent (default: {built_in})\n"
        ),
        _ => format!(
            "# defaults:\n#   agent: claude-code   # the agent `cuekit submit` runs without --agent (default: {built_in})\n"
        ),
    };
    Ok(format!("{STARTER_HEAD}{agent_line}{STARTER_KEYS}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_starter_sets_only_what_differs_from_the_defaults() {
        let plain = super::starter(None).unwrap();
        assert!(
            plain
                .lines()
                .all(|line| line.trim().is_empty() || line.starts_with('#')),
            "{plain}"
        );
        assert_eq!(super::starter(Some("gemini")).unwrap(), plain);
        let other = super::starter(Some("antigravity")).unwrap();
        let set: Vec<&str> = other
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .collect();
        assert_eq!(set.len(), 2, "{other}");
        assert!(set[1].starts_with("  agent: antigravity "), "{other}");
        let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&other).unwrap();
        assert_eq!(value["defaults"]["agent"], "antigravity");
    }
}

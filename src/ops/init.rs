use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::{EXAMPLE, PROJECT_FILE};

/// The starter's `defaults.agent` line.
const DEFAULT_AGENT_LINE: &str = "  agent: gemini\n";

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
    let starter = match agent {
        Some(kind) => {
            let kind = crate::domain::adapter::lookup(kind)?.kind();
            EXAMPLE.replacen(DEFAULT_AGENT_LINE, &format!("  agent: {kind}\n"), 1)
        }
        None => EXAMPLE.to_string(),
    };
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_starter_names_its_default_agent_once() {
        assert_eq!(super::EXAMPLE.matches(super::DEFAULT_AGENT_LINE).count(), 1);
    }
}

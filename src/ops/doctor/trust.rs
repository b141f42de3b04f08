//! The project file's trust: whether its code-running keys apply.

use crate::effects::config::Config;

use super::{Check, Level};

/// Whether the project file's code-running keys apply. Nothing the file names is run here
/// unless it is trusted (the agent checks use only trusted binaries).
pub(super) fn trust_check(config: &Config) -> Option<Check> {
    let (path, state) = config.project_trust()?;
    let ignored = config.ignored();
    let needs_trust: Vec<&str> = ignored
        .iter()
        .filter(|w| w.needs_trust())
        .map(|w| w.key.as_str())
        .collect();
    let others: Vec<String> = ignored
        .iter()
        .filter(|w| !w.needs_trust())
        .map(|w| format!("{} ({})", w.key, w.class.as_str()))
        .collect();
    if ignored.is_empty() {
        return Some(Check::new(
            "config trust",
            Level::Ok,
            format!("{}: {}", path.display(), state.as_str()),
        ));
    }
    let mut said = Vec::new();
    if !needs_trust.is_empty() {
        said.push(format!(
            "its keys that run code or place files are not used ({}); submits that need them are refused",
            needs_trust.join(", ")
        ));
    }
    if !others.is_empty() {
        said.push(format!(
            "keys a project file may not set, or only stricter, are ignored: {}",
            others.join(", ")
        ));
    }
    let next = if needs_trust.is_empty() {
        "move user-only keys to ~/.config/cuekit/config.yaml; a project may only tighten a policy"
            .to_string()
    } else {
        format!(
            "read it; if you trust it, run `cuekit trust {}`",
            path.display()
        )
    };
    Some(
        Check::new(
            "config trust",
            Level::Warn,
            format!(
                "{} is {}: {}",
                path.display(),
                state.as_str(),
                said.join("; ")
            ),
        )
        .next(next),
    )
}

//! The environment cuekit runs in.

use super::{Check, Level};

pub(super) fn environment_checks() -> Vec<Check> {
    let mut checks = Vec::new();
    for name in ["CI", "GITHUB_ACTIONS"] {
        if let Ok(value) = std::env::var(name) {
            checks.push(Check::new(format!("environment {name}"), Level::Warn, format!("{name}={value}: the Gemini CLI runs a positional prompt headless when it is set; cuekit unsets it for interactive tasks, other tools you start may not")));
        }
    }
    for (name, agent) in [
        ("GEMINI_CLI", "the Gemini CLI"),
        ("CLAUDECODE", "Claude Code"),
        ("CODEX_SANDBOX", "Codex"),
        ("OPENCODE", "opencode"),
    ] {
        if std::env::var_os(name).is_some() {
            checks.push(Check::new(format!("environment {name}"), Level::Warn, format!("running inside {agent} ({name} is set): children inherit its environment and sandbox"))
                .next("if a child misbehaves, submit from a plain shell"));
        }
    }
    if checks.is_empty() {
        checks.push(Check::new(
            "environment",
            Level::Ok,
            "no variables that change how children run",
        ));
    }
    checks
}

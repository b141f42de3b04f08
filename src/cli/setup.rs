//! The commands that prepare and inspect rather than run tasks: adapters, config, init, doctor.

use std::path::Path;

use super::render::print_json;
use crate::adapter::ADAPTERS;
use crate::config::Config;
use crate::doctor::{self, Level};
use crate::ops;

pub fn adapters(json: bool) -> anyhow::Result<i32> {
    let infos: Vec<_> = ADAPTERS.iter().map(|adapter| adapter.info()).collect();
    if json {
        print_json(&infos);
        return Ok(0);
    }
    for info in infos {
        let caps = &info.capabilities;
        let modes: Vec<&str> = caps.supported_modes.iter().map(|m| m.as_str()).collect();
        println!(
            "{}  (binary: {}; install: {})",
            caps.agent_kind, info.default_bin, info.install_hint
        );
        println!(
            "  modes: {} (default {})",
            modes.join(", "),
            caps.default_mode.as_str()
        );
        println!(
            "  steering: {}  attach: {}  model selection: {}  artifacts: {}  live progress: {}",
            caps.supports_steering,
            caps.supports_attach,
            caps.supports_model_selection,
            caps.supports_artifacts,
            caps.supports_live_progress
        );
        println!("  models: {}", info.available_models.join(", "));
    }
    Ok(0)
}

pub fn config(cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let config = Config::load(cwd)?;
    let entries = config.entries();
    if json {
        print_json(&entries);
        return Ok(0);
    }
    for entry in entries {
        let value = match &entry.value {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Null => "-".to_string(),
            other => other.to_string(),
        };
        println!("{:<36} {:<24} ({})", entry.key, value, entry.source);
    }
    Ok(0)
}

pub fn init(cwd: &Path, force: bool, json: bool) -> anyhow::Result<i32> {
    let outcome = ops::init(cwd, force)?;
    if json {
        print_json(&outcome);
    } else {
        let verb = if outcome.overwritten {
            "replaced"
        } else {
            "wrote"
        };
        println!("{verb} {}", outcome.config.display());
        println!("{} ignores .cuekit/", outcome.gitignore.display());
    }
    Ok(0)
}

/// Exit status 1 when any check failed, 0 otherwise (warnings included).
pub fn doctor(cwd: &Path, fix: bool, json: bool) -> anyhow::Result<i32> {
    let checks = doctor::doctor(cwd, fix);
    if json {
        print_json(&checks);
    } else {
        for check in &checks {
            let level = match check.level {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            println!("{level}  {}: {}", check.name, check.message);
            if let Some(fixed) = &check.fixed {
                println!("      fixed: {fixed}");
            }
            if let Some(next) = &check.next_step {
                println!("      next: {next}");
            }
        }
    }
    Ok(i32::from(
        checks.iter().any(|check| check.level == Level::Fail),
    ))
}

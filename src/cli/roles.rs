use std::path::Path;

use super::render::{first_line, print_json, say};
use crate::ops::{ListedRole as Listed, roles};

pub fn run(cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let listed = roles(cwd)?;
    if json {
        let rows: Vec<serde_json::Value> = listed
            .iter()
            .map(|listed| match listed {
                Listed::Role(role) => serde_json::json!(role),
                Listed::Broken { name, error } => serde_json::json!({
                    "name": name,
                    "error": {"code": error.code, "message": error.message, "hint": error.hint},
                }),
            })
            .collect();
        print_json(&rows);
        return Ok(0);
    }
    println!(
        "{:<14} {:<24} {:<40} DESCRIPTION",
        "ROLE", "DEFAULTS", "SOURCE"
    );
    for listed in &listed {
        let role = match listed {
            Listed::Role(role) => role,
            Listed::Broken { name, error } => {
                say(&format!("{name:<14} {:<24} {}", "BROKEN", error.message));
                continue;
            }
        };
        let defaults: Vec<String> = [
            role.agent.clone(),
            role.model.clone(),
            role.mode.map(|m| m.as_str().to_string()),
            role.approval_mode.as_ref().map(|a| format!("approval {a}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let defaults = if defaults.is_empty() {
            "-".to_string()
        } else {
            defaults.join(", ")
        };
        say(&format!(
            "{:<14} {:<24} {:<40} {}",
            role.name,
            defaults,
            role.source.to_string(),
            first_line(role.description.as_deref().unwrap_or(""), 70)
        ));
    }
    Ok(0)
}

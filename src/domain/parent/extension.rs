//! The packages `cuekit mcp extension` writes for the parents' own extension systems, each
//! registering this cuekit binary as an MCP server (keys by reference, as `cuekit mcp config`
//! prints them) with a text that tells the parent when and how to delegate:
//! - a Gemini CLI extension (`gemini-extension.json`, `GEMINI.md`), for `gemini extensions link
//!   DIR` (or `install DIR`);
//! - a Claude Code plugin (`.claude-plugin/plugin.json`, `.mcp.json`, a `delegate` skill), for
//!   `claude --plugin-dir DIR` or a marketplace.

use std::path::Path;

use serde_json::{Value, json};

use super::{Client, client_config};

/// The manifest's file name, as Gemini CLI looks for it.
pub const MANIFEST: &str = "gemini-extension.json";
/// The context file the manifest names.
pub const CONTEXT_FILE: &str = "GEMINI.md";
/// What the parent is told about delegating.
pub const CONTEXT: &str = include_str!("delegation.md");

/// `gemini-extension.json` for `exe`, passing `auth_env` by reference.
pub fn manifest(exe: &Path, auth_env: &[&str]) -> Value {
    let servers = client_config(Client::Gemini, exe, auth_env)["mcpServers"].clone();
    json!({
        "name": "cuekit",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Delegate work to child coding agents running in tmux",
        "contextFileName": CONTEXT_FILE,
        "mcpServers": servers,
    })
}

/// The files of `client`'s package for `exe`: relative path and content.
pub fn files(client: super::Client, exe: &Path, auth_env: &[&str]) -> Vec<(&'static str, String)> {
    let json = |value: &Value| {
        let mut text = serde_json::to_string_pretty(value).expect("a manifest serializes");
        text.push('\n');
        text
    };
    match client {
        super::Client::Claude => vec![
            (
                ".claude-plugin/plugin.json",
                json(&json!({
                    "name": "cuekit",
                    "version": env!("CARGO_PKG_VERSION"),
                    "description": "Delegate work to child coding agents running in tmux",
                })),
            ),
            (
                ".mcp.json",
                json(&client_config(Client::Claude, exe, auth_env)),
            ),
            (
                "skills/delegate/SKILL.md",
                format!(
                    "---\nname: delegate\ndescription: Delegate coding work to child agents through \
                     the cuekit MCP server, when work splits into parts that can run side by side, \
                     when a part is long (tests, a refactor, a review), or when a second opinion \
                     helps.\n---\n\n{CONTEXT}"
                ),
            ),
        ],
        _ => vec![
            (MANIFEST, json(&manifest(exe, auth_env))),
            (CONTEXT_FILE, CONTEXT.to_string()),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_registers_this_binary_and_names_its_context_file() {
        let manifest = manifest(Path::new("/opt/bin/cuekit"), &["GEMINI_API_KEY"]);
        assert_eq!(manifest["name"], "cuekit");
        assert_eq!(manifest["contextFileName"], CONTEXT_FILE);
        let server = &manifest["mcpServers"]["cuekit"];
        assert_eq!(server["command"], "/opt/bin/cuekit");
        assert_eq!(server["args"], json!(["mcp"]));
        assert_eq!(server["env"]["GEMINI_API_KEY"], "$GEMINI_API_KEY");
        assert!(CONTEXT.contains("submit_task"));
        let plugin = files(Client::Claude, Path::new("/c"), &["GEMINI_API_KEY"]);
        let names: Vec<&str> = plugin.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            [
                ".claude-plugin/plugin.json",
                ".mcp.json",
                "skills/delegate/SKILL.md"
            ]
        );
        assert!(plugin[1].1.contains("${GEMINI_API_KEY}"));
        assert!(plugin[2].1.starts_with("---\nname: delegate\n"));
    }
}

//! The Gemini CLI extension `cuekit mcp extension gemini` writes: a manifest that registers this
//! cuekit binary as an MCP server (keys by reference, as `cuekit mcp config` prints them) and a
//! context file that tells the parent when and how to delegate. `gemini extensions link DIR`
//! (or `install DIR`) takes the folder as it is.

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
    }
}

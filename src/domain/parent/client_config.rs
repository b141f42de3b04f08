//! `cuekit mcp config`: the snippet that registers this cuekit binary with an MCP client.

use std::path::Path;

use serde_json::{Value, json};

/// The MCP clients cuekit knows how to register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// Claude Code (`.mcp.json` in the project, or `claude mcp add-json`), Claude Desktop.
    Claude,
    /// Gemini CLI (`.gemini/settings.json` in the project or `~/.gemini/settings.json`).
    Gemini,
    /// OpenAI Codex CLI (`~/.codex/config.toml`, TOML).
    Codex,
    /// Qwen Code (`~/.qwen/settings.json`; a Gemini CLI fork, `$VAR` expanded alike).
    Qwen,
    /// opencode (`opencode.json`: `mcp`, `type: local`, `environment`, `{env:VAR}`).
    Opencode,
    /// GitHub Copilot CLI (`~/.copilot/mcp-config.json`).
    Copilot,
    /// Any client that reads the common `mcpServers` shape.
    Generic,
}

impl Client {
    pub const NAMES: [&'static str; 7] = [
        "claude", "gemini", "codex", "qwen", "opencode", "copilot", "generic",
    ];

    pub fn parse(name: &str) -> Option<Client> {
        match name {
            "claude" => Some(Client::Claude),
            "gemini" => Some(Client::Gemini),
            "codex" => Some(Client::Codex),
            "qwen" => Some(Client::Qwen),
            "opencode" => Some(Client::Opencode),
            "copilot" => Some(Client::Copilot),
            "generic" => Some(Client::Generic),
            _ => None,
        }
    }

    /// The name `parse` takes.
    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Gemini => "gemini",
            Client::Codex => "codex",
            Client::Qwen => "qwen",
            Client::Opencode => "opencode",
            Client::Copilot => "copilot",
            Client::Generic => "generic",
        }
    }

    /// Where the snippet goes, for a person reading it.
    pub fn where_to_put_it(self) -> &'static str {
        match self {
            Client::Claude => {
                "merge into .mcp.json at the project root (or run `claude mcp add-json cuekit '<the inner object>'`)"
            }
            Client::Gemini => {
                "merge into .gemini/settings.json in the project, or ~/.gemini/settings.json"
            }
            Client::Codex => {
                "append to ~/.codex/config.toml (codex mcp add cannot write env_vars; it rewrites the [mcp_servers] tables and drops comments in them)"
            }
            Client::Qwen => {
                "merge into .qwen/settings.json in the project, or ~/.qwen/settings.json"
            }
            Client::Opencode => {
                "merge into opencode.json in the project, or ~/.config/opencode/opencode.json"
            }
            Client::Copilot => "merge into ~/.copilot/mcp-config.json",
            Client::Generic => "merge into your MCP client's server configuration",
        }
    }
}

/// The `mcpServers` entry that starts `<exe> mcp` over stdio, handing it the variables in
/// `auth_env` by reference, never by value: MCP clients pass a server no secret-like variable
/// they were not told to, and a child agent without its key fails `auth_missing`. Gemini CLI
/// expands `$VAR` in its settings, Claude Code `${VAR}` in `.mcp.json`; a client that expands
/// neither hands the reference on as text, which `cuekit mcp` then drops ([`unexpanded`]).
///
/// Codex expands no reference: its snippet forwards the variables by name (`env_vars`), and is
/// TOML ([`snippet`]); opencode substitutes `{env:VAR}` and calls the map `environment`.
pub fn client_config(client: Client, exe: &Path, auth_env: &[&str]) -> Value {
    let command = exe.to_string_lossy();
    let reference = |name: &str| match client {
        Client::Gemini | Client::Qwen => format!("${name}"),
        Client::Opencode => format!("{{env:{name}}}"),
        Client::Claude | Client::Copilot | Client::Generic | Client::Codex => {
            format!("${{{name}}}")
        }
    };
    let env: serde_json::Map<String, Value> = auth_env
        .iter()
        .map(|name| (name.to_string(), Value::String(reference(name))))
        .collect();
    match client {
        Client::Claude => json!({"mcpServers": {"cuekit":
            {"type": "stdio", "command": command, "args": ["mcp"], "env": env}}}),
        Client::Copilot => json!({"mcpServers": {"cuekit":
            {"type": "local", "command": command, "args": ["mcp"], "env": env, "tools": ["*"]}}}),
        Client::Opencode => json!({"$schema": "https://opencode.ai/config.json", "mcp": {"cuekit":
            {"type": "local", "command": [command, "mcp"], "environment": env, "enabled": true}}}),
        Client::Codex => json!({"mcp_servers": {"cuekit":
            {"command": command, "args": ["mcp"], "env_vars": auth_env}}}),
        Client::Gemini | Client::Qwen | Client::Generic => {
            json!({"mcpServers": {"cuekit": {"command": command, "args": ["mcp"], "env": env}}})
        }
    }
}

/// Codex's snippet: a TOML table for `~/.codex/config.toml`.
pub fn snippet(client: Client, exe: &Path, auth_env: &[&str]) -> String {
    if client != Client::Codex {
        return serde_json::to_string_pretty(&client_config(client, exe, auth_env))
            .expect("a snippet serializes");
    }
    // TOML basic strings take JSON's escapes for everything a path or a variable name holds.
    let quoted = |text: &str| serde_json::to_string(text).expect("a string serializes");
    let names: Vec<String> = auth_env.iter().map(|name| quoted(name)).collect();
    format!(
        "[mcp_servers.cuekit]\ncommand = {}\nargs = [\"mcp\"]\nenv_vars = [{}]\n",
        quoted(&exe.to_string_lossy()),
        names.join(", ")
    )
}

/// Whether a value is a reference its client did not expand (`$NAME`, `${NAME}`), or empty:
/// the parent does not have the variable, and a child must not get a bogus key.
pub fn unexpanded(value: &str) -> bool {
    let name = value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .or_else(|| value.strip_prefix('$'));
    value.is_empty()
        || name.is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_starts_the_given_binary_with_mcp() {
        for name in ["claude", "gemini", "qwen", "copilot", "generic"] {
            let client = Client::parse(name).unwrap();
            let config = client_config(client, Path::new("/opt/bin/cuekit"), &[]);
            let server = &config["mcpServers"]["cuekit"];
            assert_eq!(server["command"], "/opt/bin/cuekit", "{name}");
            assert_eq!(server["args"], json!(["mcp"]), "{name}");
        }
        let opencode = client_config(Client::Opencode, Path::new("/opt/bin/cuekit"), &["K"]);
        assert_eq!(
            opencode["mcp"]["cuekit"]["command"],
            json!(["/opt/bin/cuekit", "mcp"])
        );
        assert_eq!(opencode["mcp"]["cuekit"]["environment"]["K"], "{env:K}");
        let codex = snippet(
            Client::Codex,
            Path::new("/opt/bin/cue\"kit"),
            &["GEMINI_API_KEY"],
        );
        assert_eq!(
            codex,
            "[mcp_servers.cuekit]\ncommand = \"/opt/bin/cue\\\"kit\"\nargs = [\"mcp\"]\nenv_vars = [\"GEMINI_API_KEY\"]\n"
        );
        assert_eq!(Client::NAMES.len(), 7);
        assert_eq!(
            client_config(Client::Claude, Path::new("/c"), &[])["mcpServers"]["cuekit"]["type"],
            "stdio"
        );
        assert_eq!(Client::parse("cursor"), None);
    }

    #[test]
    fn keys_are_passed_by_reference_in_each_client_s_syntax() {
        let env = |client| {
            client_config(client, Path::new("/c"), &["GEMINI_API_KEY"])["mcpServers"]["cuekit"]
                ["env"]["GEMINI_API_KEY"]
                .clone()
        };
        assert_eq!(env(Client::Gemini), "$GEMINI_API_KEY");
        assert_eq!(env(Client::Qwen), "$GEMINI_API_KEY");
        assert_eq!(env(Client::Copilot), "${GEMINI_API_KEY}");
        assert_eq!(env(Client::Claude), "${GEMINI_API_KEY}");
        assert_eq!(env(Client::Generic), "${GEMINI_API_KEY}");
    }

    #[test]
    fn references_left_unexpanded_and_empty_values_are_told_apart_from_keys() {
        for value in ["", "$GEMINI_API_KEY", "${GEMINI_API_KEY}"] {
            assert!(unexpanded(value), "{value:?}");
        }
        for value in ["AIza-key", "$ecret-with-dash", "${x", "sk-${A}", "$"] {
            assert!(!unexpanded(value), "{value:?}");
        }
    }
}

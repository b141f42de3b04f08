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
    /// Any client that reads the common `mcpServers` shape.
    Generic,
}

impl Client {
    pub const NAMES: [&'static str; 3] = ["claude", "gemini", "generic"];

    pub fn parse(name: &str) -> Option<Client> {
        match name {
            "claude" => Some(Client::Claude),
            "gemini" => Some(Client::Gemini),
            "generic" => Some(Client::Generic),
            _ => None,
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
            Client::Generic => "merge into your MCP client's server configuration",
        }
    }
}

/// The `mcpServers` entry that starts `<exe> mcp` over stdio.
pub fn client_config(client: Client, exe: &Path) -> Value {
    let command = exe.to_string_lossy();
    let server = match client {
        Client::Claude => json!({"type": "stdio", "command": command, "args": ["mcp"], "env": {}}),
        Client::Gemini | Client::Generic => json!({"command": command, "args": ["mcp"]}),
    };
    json!({"mcpServers": {"cuekit": server}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_starts_the_given_binary_with_mcp() {
        for name in Client::NAMES {
            let client = Client::parse(name).unwrap();
            let config = client_config(client, Path::new("/opt/bin/cuekit"));
            let server = &config["mcpServers"]["cuekit"];
            assert_eq!(server["command"], "/opt/bin/cuekit", "{name}");
            assert_eq!(server["args"], json!(["mcp"]), "{name}");
        }
        assert_eq!(
            client_config(Client::Claude, Path::new("/c"))["mcpServers"]["cuekit"]["type"],
            "stdio"
        );
        assert_eq!(Client::parse("cursor"), None);
    }
}

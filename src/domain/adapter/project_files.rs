//! The project files an agent's own CLI loads when it starts, that can run code before the
//! model's first turn: an MCP server's command, a plugin or an extension. A cloned repository
//! arrives with them, so — as with `.cuekit.yaml`'s keys that run code — a task of that agent
//! starts only once the user trusted each of them (`cuekit trust FILE`).
//!
//! Gemini and Codex need no list: Gemini runs with `--skip-trust` (an untrusted folder's
//! settings are ignored), Codex reads a project's `.codex/` only for a project trusted in
//! `~/.codex/config.toml`. Qwen Code (a Gemini fork) has folder trust off by default; opencode
//! and pi have no trust of their own. Claude Code and Copilot have a folder trust, but the
//! permission bypass cuekit starts them with (`--dangerously-skip-permissions`,
//! `COPILOT_ALLOW_ALL`) skips it, and `claude-agent-acp` (the ACP mode) loads the same project
//! settings as the CLI.

use std::path::{Component, Path};

/// The paths, relative to each folder from the agent's start folder up to the repository's top,
/// that `agent_kind`'s CLI loads at its start and that can run code. A path ending in `/` is a
/// folder: every file under it counts.
pub fn code_files(agent_kind: &str) -> &'static [&'static str] {
    match agent_kind {
        // 0.15.10: `mcpServers`, hooks and tool discovery commands in the workspace settings;
        // extensions of the workspace.
        "qwen" => &[".qwen/settings.json", ".qwen/extensions/"],
        // 1.18: the project config (`mcp` of type `local`, `plugin`), found upwards from the
        // start folder to the worktree's top, and `.opencode/`'s plugins and tools (TypeScript
        // run in its process).
        "opencode" => &[
            "opencode.json",
            "opencode.jsonc",
            ".opencode/opencode.json",
            ".opencode/opencode.jsonc",
            ".opencode/plugin/",
            ".opencode/plugins/",
            ".opencode/tool/",
            ".opencode/tools/",
        ],
        // pi: the project's extensions (TypeScript run in its process) and the project settings
        // (`packages` and `extensions` it installs and loads).
        "pi" => &[".pi/settings.json", ".pi/extensions/"],
        // Claude Code 2.x (and claude-agent-acp, its SDK): the project settings' `hooks`
        // (SessionStart runs before the model is asked), `apiKeyHelper`, `statusLine`,
        // `enabledPlugins`, `enableAllProjectMcpServers`; `.mcp.json`'s servers; the hook scripts
        // the settings conventionally name under `.claude/hooks/`.
        "claude-code" => &[
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".mcp.json",
            ".claude/hooks/",
        ],
        // Copilot CLI: the project's hooks (`.github/hooks/*.json`, sessionStart included), its
        // MCP servers (`.mcp.json`, `.github/mcp.json`) and LSP servers (`.github/lsp.json`).
        "copilot" => &[
            ".github/hooks/",
            ".mcp.json",
            ".github/mcp.json",
            ".github/lsp.json",
        ],
        _ => &[],
    }
}

/// The agents [`code_files`] names files for.
const CODE_AGENTS: [&str; 5] = ["qwen", "opencode", "pi", "claude-code", "copilot"];

/// Whether `path` (absolute or relative) is one of the files some agent's CLI loads from a
/// project ([`code_files`] of any agent): a file `cuekit trust` takes as an agent's file.
pub fn is_code_file(path: &Path) -> bool {
    let parts: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    CODE_AGENTS
        .iter()
        .flat_map(|kind| code_files(kind))
        .any(|entry| {
            let folder = entry.ends_with('/');
            let want: Vec<&str> = entry.trim_end_matches('/').split('/').collect();
            if folder {
                // The folder's name anywhere above the file's own name.
                parts.len() > want.len()
                    && parts[..parts.len() - 1]
                        .windows(want.len())
                        .any(|window| window == want.as_slice())
            } else {
                parts.ends_with(&want)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_that_load_project_code_name_their_files() {
        assert!(code_files("qwen").contains(&".qwen/settings.json"));
        assert!(code_files("opencode").contains(&"opencode.json"));
        assert!(code_files("pi").contains(&".pi/extensions/"));
        assert!(code_files("gemini").is_empty());
        assert!(code_files("codex").is_empty());
        assert!(code_files("claude-code").contains(&".claude/settings.json"));
        assert!(code_files("claude-code").contains(&".mcp.json"));
        assert!(code_files("copilot").contains(&".github/hooks/"));
    }

    #[test]
    fn an_agents_file_is_known_by_its_place() {
        for yes in [
            "/r/.qwen/settings.json",
            "opencode.json",
            "/r/sub/opencode.jsonc",
            "/r/.pi/extensions/helper.ts",
            "/r/.pi/extensions/deep/x.ts",
            "/r/.opencode/plugin/p.ts",
            ".pi/settings.json",
            "/r/.claude/settings.json",
            "/r/.claude/settings.local.json",
            "/r/.mcp.json",
            "/r/.claude/hooks/start.sh",
            "/r/.github/hooks/hooks.json",
            "/r/.github/mcp.json",
        ] {
            assert!(is_code_file(Path::new(yes)), "{yes}");
        }
        for no in [
            "/r/.cuekit.yaml",
            "/r/.pi/extensions",
            "/r/settings.json",
            "/r/.qwen/other.json",
            "/r/.gemini/settings.json",
            "/r/.claude/agents/reviewer.md",
            "/r/CLAUDE.md",
            "/r/.github/workflows/ci.yml",
        ] {
            assert!(!is_code_file(Path::new(no)), "{no}");
        }
    }
}

//! OpenAI's Codex CLI. Flags verified against `codex --help` / `codex exec --help` of
//! @openai/codex 0.171.0.

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::{Attention, ScreenRules};
use crate::domain::error::Result;
use crate::domain::launch::single_quote;
use crate::domain::spec::{Mode, TaskSpec};

/// The bridge `codex-acp` (@agentclientprotocol/codex-acp 2.6.0; no `--help`: any argument but
/// `--version`, `login` and `cli` starts the ACP server). It runs `codex app-server` of its own
/// dependency @openai/codex 0.166.0 (`CODEX_PATH` overrides it), not the adapter's binary.
/// Verified with a throw-away HOME: `initialize` answers protocol version 1, `loadSession:
/// true`, the auth methods `api-key` and `chat-gpt`; without credentials `session/new` fails
/// with -32000 "Authentication required". With a custom model provider in
/// `~/.codex/config.toml` it answers the modes `read-only`, `workspace-write`, `agent` and
/// `agent-full-access`; cuekit has no approval modes for codex, so none are mapped. The model
/// is set with `session/set_model`. A turn against a local Responses-API server ends
/// `end_turn`. Three processes (the node bridge, node `codex.js`, the native app-server): all
/// end within 3 s of a SIGTERM to the bridge, and on stdin EOF (after ~2 s).
static CODEX_ACP: AcpLaunch = AcpLaunch {
    program: Some("codex-acp"),
    args: &[],
    model_flag: None,
    modes: &[],
    env: &[],
    load_overwrites_same_minute: false,
    verified: "@agentclientprotocol/codex-acp 2.6.0 (initialize and session/new without credentials, an offline turn against a local Responses-API server)",
};

pub(super) static CODEX: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("codex"),
    default_bin: "codex",
    available_models: &[],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    // The login screen is read off the 0.171 TUI (tests/fixtures/screens/codex-auth.txt); the
    // other patterns come from its texts, not yet from a live screen.
    screen: ScreenRules {
        dialogs: &[
            (Attention::AuthRequired, &["Sign in with ChatGPT"]),
            (
                Attention::TrustRequired,
                &[
                    "Trust this folder?",
                    "Do you trust the files in this folder?",
                ],
            ),
            (
                Attention::PermissionPrompt,
                &[
                    "Allow command?",
                    "Would you like to run the following command?",
                ],
            ),
        ],
        busy: &["Esc to interrupt", "esc to interrupt"],
        ready: &["? for shortcuts"],
        input_prefixes: &["›", ">"],
        login_hint: None,
    },
    build_launch: build_codex_launch_command,
    runs_argv: false,
    acp: Some(&CODEX_ACP),
    sandbox: &CODEX_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &[],
    install_hint: "npm install -g @openai/codex",
    auth_probe: codex_auth,
    resume_hint: None,
    auth_env: &["CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "OPENAI_API_KEY"],
};

/// Interactive `codex --no-daemon [-m 'M'] [bypass] -- 'P'` (no background app-server that
/// would outlive the pane); batch `codex exec --skip-git-repo-check … -- 'P' </dev/null`.
/// Without `--`, a prompt starting with `-` makes codex print help and exit 0.
pub fn build_codex_launch_command(spec: &TaskSpec, mode: Mode, bin: &str) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    super::approval_mode(spec, &[], "codex", &mut warnings);
    let mut parts = vec![shell_word_for_bin(bin)?];
    parts.push(match mode {
        Mode::Interactive => "--no-daemon".to_string(),
        Mode::Batch => "exec --skip-git-repo-check".to_string(),
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    });
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&CODEX, "-m", model, &mut warnings)?);
    }
    if spec.skips_permissions() {
        parts.push("--dangerously-bypass-approvals-and-sandbox".to_string());
    }
    parts.push(format!("-- {}", single_quote(&super::prompt_of(spec)?)?));
    if mode == Mode::Batch {
        // `exec` appends a piped stdin to the prompt and waits for its end.
        parts.push("</dev/null".to_string());
    }
    Ok(LaunchCommand::from_words(parts, warnings))
}

/// Only `CODEX_API_KEY` or a stored login count: `OPENAI_API_KEY` in the environment is ignored.
fn codex_auth() -> AuthProbe {
    if let Some(name) = super::env_set(&["CODEX_API_KEY", "CODEX_ACCESS_TOKEN"]) {
        return AuthProbe::Configured(format!("{name} is set"));
    }
    let codex_home = std::env::var("CODEX_HOME")
        .ok()
        .map(std::path::PathBuf::from);
    let stored = match codex_home {
        Some(home) => Some(home.join("auth.json")).filter(|p| p.is_file()),
        None => super::home_file(".codex/auth.json"),
    };
    match stored {
        Some(path) => AuthProbe::Configured(format!("login stored in {}", path.display())),
        None => AuthProbe::Missing(
            "set CODEX_API_KEY or run `codex login` (OPENAI_API_KEY alone is ignored by codex)"
                .to_string(),
        ),
    }
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static CODEX_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".codex"],
    // Archived rollouts are whole conversations of every project, as sessions are.
    state: &[".codex/sessions", ".codex/log", ".codex/archived_sessions"],
    // Every project's prompts, and the index of every session: a private one inside.
    private: &[".codex/history.jsonl", ".codex/session_index.jsonl"],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn build(objective: &str, mode: Mode, edit: impl FnOnce(&mut TaskSpec)) -> String {
        crate::domain::adapter::built(&CODEX, objective, mode, edit)
    }

    #[test]
    fn recognises_the_real_login_screen() {
        let screen = include_str!("../../../tests/fixtures/screens/codex-auth.txt");
        assert_eq!(
            crate::domain::attention::detect(&CODEX.screen, screen, false),
            Some(Attention::AuthRequired)
        );
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(
            build("fix it", Mode::Interactive, |s| s.model = Some("o3".into())),
            "codex --no-daemon -m 'o3' --dangerously-bypass-approvals-and-sandbox -- 'fix it'"
        );
        assert_eq!(
            build("-hello", Mode::Batch, |s| s.dangerously_skip_permissions =
                Some(false)),
            "codex exec --skip-git-repo-check -- '-hello' </dev/null"
        );
    }

    /// The ACP command is the bridge, not `codex`; the model is chosen once the session exists.
    #[test]
    fn acp_launch() {
        let spec = TaskSpec {
            agent_kind: "codex".into(),
            objective: "x".into(),
            model: Some("gpt-5.5".into()),
            approval_mode: None,
            ..TaskSpec::default()
        };
        let launch = CODEX
            .launch(&spec, Mode::Acp, CODEX.default_bin, "cuekit")
            .unwrap();
        assert_eq!(
            launch.command,
            r#"cuekit __acp --prompt-file "$cuekit_prompt" --bypass --session-model 'gpt-5.5' -- codex-acp"#
        );
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
    }
}

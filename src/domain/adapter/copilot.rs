//! GitHub Copilot CLI. Flags verified against `copilot --help` of @github/copilot 1.0.102.

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::{Attention, ScreenRules};
use crate::domain::error::Result;
use crate::domain::launch::single_quote;
use crate::domain::spec::{Mode, TaskSpec};

/// `copilot --acp` (1.0.102: `--help` lists `--acp` "Start as Agent Client Protocol server";
/// `--model` applies in ACP mode too: an offline turn sent the model it names). Verified with a
/// throw-away HOME: `initialize` answers protocol version 1, `loadSession: true`, the auth
/// method `copilot-login`; without credentials `session/new` fails with -32000 "Authentication
/// required". Offline (`COPILOT_OFFLINE`, `COPILOT_PROVIDER_BASE_URL`, a model) it answers the
/// modes `https://agentclientprotocol.com/protocol/session-modes#agent`, `#plan` and
/// `#autopilot`; cuekit has no approval modes for copilot, so none are mapped. Two processes:
/// the node loader and the native binary it spawns, which a SIGTERM to the loader leaves
/// orphaned (no setting avoids it: end the process group). `COPILOT_AUTO_UPDATE=false`, as
/// for the other modes, keeps the installed version instead of a downloaded one.
static COPILOT_ACP: AcpLaunch = AcpLaunch {
    program: None,
    args: &["--acp"],
    model_flag: Some("--model"),
    modes: &[],
    env: &[("COPILOT_AUTO_UPDATE", "false")],
    load_overwrites_same_minute: false,
    verified: "@github/copilot 1.0.102 (--help, initialize and session/new without credentials, an offline turn against a local OpenAI-compatible server)",
};

pub(super) static COPILOT: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("copilot"),
    default_bin: "copilot",
    available_models: &[],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    screen: ScreenRules {
        dialogs: &[
            (Attention::AuthRequired, &["Please use /login"]),
            (
                Attention::TrustRequired,
                &[
                    "Do you trust the files in this folder?",
                    "Confirm folder trust",
                ],
            ),
        ],
        busy: &["Esc to cancel"],
        ready: &[],
        input_prefixes: &[],
        login_hint: None,
    },
    build_launch: build_copilot_launch_command,
    runs_argv: false,
    acp: Some(&COPILOT_ACP),
    sandbox: &COPILOT_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &[],
    install_hint: "npm install -g @github/copilot",
    auth_probe: copilot_auth,
    resume_hint: None,
    auth_env: &[
        "COPILOT_GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "COPILOT_PROVIDER_BASE_URL",
    ],
};

/// Interactive `copilot [--model 'M'] [--yolo] --interactive='P'`, batch `… --prompt='P'
/// </dev/null`: attached forms, since `-p -x` and `-p -- -x` fail. With the bypass on,
/// `COPILOT_ALLOW_ALL=true` also skips the folder-trust dialog that `--yolo` alone still shows.
pub fn build_copilot_launch_command(
    spec: &TaskSpec,
    mode: Mode,
    bin: &str,
) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    super::approval_mode(spec, &[], "copilot", &mut warnings);
    let mut parts = vec!["COPILOT_AUTO_UPDATE=false".to_string()];
    if spec.skips_permissions() {
        parts.push("COPILOT_ALLOW_ALL=true".to_string());
    }
    parts.push(shell_word_for_bin(bin)?);
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&COPILOT, "--model", model, &mut warnings)?);
    }
    if spec.skips_permissions() {
        parts.push("--yolo".to_string());
    }
    let prompt = single_quote(&super::prompt_of(spec)?)?;
    parts.push(match mode {
        Mode::Interactive => format!("--interactive={prompt}"),
        Mode::Batch => format!("--prompt={prompt} </dev/null"),
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    });
    Ok(LaunchCommand::from_words(parts, warnings))
}

fn copilot_auth() -> AuthProbe {
    if let Some(name) = super::env_set(&["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"]) {
        let classic = std::env::var(&name).is_ok_and(|token| token.starts_with("ghp_"));
        if !classic {
            return AuthProbe::Configured(format!("{name} is set (validated by Copilot online)"));
        }
    }
    if super::env_set(&["COPILOT_PROVIDER_BASE_URL"]).is_some() {
        return AuthProbe::Configured(
            "COPILOT_PROVIDER_BASE_URL is set (own model provider)".to_string(),
        );
    }
    AuthProbe::Missing(
        "set COPILOT_GITHUB_TOKEN (not a classic ghp_ token) or run `copilot` and /login"
            .to_string(),
    )
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static COPILOT_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".copilot"],
    state: &[
        ".copilot/session-state",
        ".copilot/logs",
        ".copilot/history-session-state",
    ],
    private: &[],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn build(objective: &str, mode: Mode, edit: impl FnOnce(&mut TaskSpec)) -> String {
        crate::domain::adapter::built(&COPILOT, objective, mode, edit)
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(
            build("-x", Mode::Interactive, |_| {}),
            "COPILOT_AUTO_UPDATE=false COPILOT_ALLOW_ALL=true copilot --yolo --interactive='-x'"
        );
        assert_eq!(
            build("x", Mode::Batch, |s| s.dangerously_skip_permissions =
                Some(false)),
            "COPILOT_AUTO_UPDATE=false copilot --prompt='x' </dev/null"
        );
    }

    /// The ACP command: `--acp` with the model on its command line, auto-update off.
    #[test]
    fn acp_launch() {
        let spec = TaskSpec {
            agent_kind: "copilot".into(),
            objective: "x".into(),
            model: Some("gpt-5".into()),
            approval_mode: None,
            ..TaskSpec::default()
        };
        let launch = COPILOT
            .launch(&spec, Mode::Acp, COPILOT.default_bin, "cuekit")
            .unwrap();
        assert_eq!(
            launch.command,
            r#"cuekit __acp --prompt-file "$cuekit_prompt" --bypass --env 'COPILOT_AUTO_UPDATE=false' -- copilot --acp --model 'gpt-5'"#
        );
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
    }
}

//! pi (the pi coding agent). Flags verified against `pi --help` of
//! @mariozechner/pi-coding-agent 0.73.1; its ACP bridge also with @earendil-works/pi-coding-agent
//! 1.6.0, the package pi moved to.

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::ScreenRules;
use crate::domain::error::Result;
use crate::domain::launch::{PROMPT_VARIABLE, single_quote};
use crate::domain::spec::{Mode, TaskSpec};

/// The bridge `pi-acp` (no `--help`: it speaks ACP on stdio), which runs `pi --mode rpc` from
/// PATH (`PI_ACP_PI_COMMAND` overrides it): 0.0.34 with @earendil-works/pi-coding-agent 1.6.0
/// (Node >= 22.19), or 0.0.24 with @mariozechner/pi-coding-agent 0.73.1, the newest pi on Node
/// 20 (0.0.34 asks it for `get_available_thinking_levels`, which 0.73.1 answers without the
/// request id, so `session/new` never returns once a model is configured). Verified with a
/// throw-away HOME:
/// `initialize` answers protocol version 1, `loadSession: true`, the auth method
/// `pi_terminal_login`; without credentials `session/new` fails with -32000 "Authentication
/// required: Configure an API key or log in with an OAuth provider." With a provider in
/// `~/.pi/agent/models.json` it answers `modes` that are pi's thinking levels (`off` …
/// `xhigh`), not approval modes (pi has none), and a turn ends `end_turn`. The model is set
/// with `session/set_model`. Two processes (the node bridge and pi): both end on stdin EOF or
/// a SIGTERM to the bridge.
static PI_ACP: AcpLaunch = AcpLaunch {
    program: Some("pi-acp"),
    args: &[],
    model_flag: None,
    modes: &[],
    env: &[],
    load_overwrites_same_minute: false,
    verified: "pi-acp 0.0.34 with @earendil-works/pi-coding-agent 1.6.0, and 0.0.24 with @mariozechner/pi-coding-agent 0.73.1 (initialize and session/new without credentials, an offline turn against a local OpenAI-compatible server)",
};

pub(super) static PI: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("pi"),
    default_bin: "pi",
    available_models: &[],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    screen: ScreenRules {
        dialogs: &[],
        busy: &[],
        ready: &[],
        input_prefixes: &[],
        login_hint: None,
    },
    build_launch: build_pi_launch_command,
    runs_argv: false,
    acp: Some(&PI_ACP),
    sandbox: &PI_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &[],
    install_hint: "npm install -g @earendil-works/pi-coding-agent (Node >= 22.19; on older Node: @mariozechner/pi-coding-agent)",
    auth_probe: pi_auth,
    resume_hint: None,
    auth_env: &PI_AUTH_ENV,
};

/// Interactive `pi [--model 'M'] 'P'`; batch `pi -p [--model 'M'] < prompt.txt`. pi has no `--`
/// terminator: any word starting with `-` is an option and one starting with `@` a file, so an
/// interactive prompt starting with either gets a leading space (pi keeps it), and batch reads
/// the prompt from stdin. pi has no permission system: the bypass option changes nothing.
pub fn build_pi_launch_command(spec: &TaskSpec, mode: Mode, bin: &str) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    super::approval_mode(spec, &[], "pi", &mut warnings);
    if spec.dangerously_skip_permissions == Some(false) {
        warnings
            .push("pi has no permission prompts; --no-skip-permissions has no effect".to_string());
    }
    let mut parts = vec![shell_word_for_bin(bin)?];
    if mode == Mode::Batch {
        parts.push("-p".to_string());
    }
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&PI, "--model", model, &mut warnings)?);
    }
    let prompt = super::prompt_of(spec)?;
    parts.push(match mode {
        Mode::Interactive if prompt.starts_with(['-', '@']) => single_quote(&format!(" {prompt}"))?,
        Mode::Interactive => single_quote(&prompt)?,
        Mode::Batch => format!("< \"${PROMPT_VARIABLE}\""),
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    });
    Ok(LaunchCommand::from_words(parts, warnings))
}

/// The provider keys pi reads from the environment.
const PI_AUTH_ENV: [&str; 9] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
];

/// pi creates `~/.pi/agent/auth.json` as `{}` on every run: only a non-empty one counts.
fn pi_auth() -> AuthProbe {
    if let Some(name) = super::env_set(&PI_AUTH_ENV) {
        return AuthProbe::Configured(format!("{name} is set"));
    }
    let stored = super::home_file(".pi/agent/auth.json").filter(|path| {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .is_some_and(|json| json.as_object().is_some_and(|o| !o.is_empty()))
    });
    match stored {
        Some(path) => AuthProbe::Configured(format!("keys stored in {}", path.display())),
        None => AuthProbe::Missing(
            "set a provider key such as ANTHROPIC_API_KEY, or log in with pi once".to_string(),
        ),
    }
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static PI_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".pi"],
    state: &[".pi/agent/sessions"],
    private: &[],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn build(objective: &str, mode: Mode) -> String {
        crate::domain::adapter::built(&PI, objective, mode, |_| {})
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(build("fix it", Mode::Interactive), "pi 'fix it'");
        assert_eq!(build("-v it", Mode::Interactive), "pi ' -v it'");
        assert_eq!(build("@file", Mode::Interactive), "pi ' @file'");
        assert_eq!(build("-v it", Mode::Batch), "pi -p < \"$cuekit_prompt\"");
    }

    /// The ACP command is the bridge, which runs `pi` from PATH; the model is chosen once the session exists.
    #[test]
    fn acp_launch() {
        let spec = TaskSpec {
            agent_kind: "pi".into(),
            objective: "x".into(),
            model: Some("anthropic/claude-sonnet-4-5".into()),
            approval_mode: None,
            ..TaskSpec::default()
        };
        let launch = PI
            .launch(&spec, Mode::Acp, PI.default_bin, "cuekit")
            .unwrap();
        assert_eq!(
            launch.command,
            r#"cuekit __acp --prompt-file "$cuekit_prompt" --bypass --session-model 'anthropic/claude-sonnet-4-5' -- pi-acp"#
        );
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
    }
}

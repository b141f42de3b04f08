//! opencode. Flags verified against `opencode --help` / `opencode run --help` of
//! opencode-ai 1.18.33.

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::ScreenRules;
use crate::domain::error::Result;
use crate::domain::launch::{PROMPT_VARIABLE, single_quote};
use crate::domain::spec::{Mode, TaskSpec};

/// `opencode acp` (1.18.33: `opencode --help` lists the subcommand "start ACP (Agent Client
/// Protocol) server"; `opencode acp --help` has no model option). Verified with a throw-away
/// HOME: `initialize` answers protocol version 1, `loadSession: true`, the auth method
/// `opencode-login`; `session/new` succeeds without credentials (its default model is free)
/// and returns no `modes`, only `configOptions` (`model`, and `mode` with `build` and `plan`);
/// cuekit has no approval modes for opencode, so none are mapped. The model is set with
/// `session/set_model` (the agent implements it). A turn against a local OpenAI-compatible
/// provider (`OPENCODE_CONFIG_CONTENT`) ends `end_turn`. One native process; it exits on stdin
/// EOF and leaves nothing behind on SIGTERM.
static OPENCODE_ACP: AcpLaunch = AcpLaunch {
    program: None,
    args: &["acp"],
    model_flag: None,
    modes: &[],
    env: &[],
    load_overwrites_same_minute: false,
    verified: "opencode-ai 1.18.33 (--help, initialize and session/new without credentials, an offline turn against a local OpenAI-compatible server)",
};

pub(super) static OPENCODE: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("opencode"),
    default_bin: "opencode",
    available_models: &[],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    // opencode shows no login or trust screen (its default model is free).
    screen: ScreenRules {
        dialogs: &[],
        busy: &["esc interrupt"],
        ready: &[],
        input_prefixes: &[],
        login_hint: None,
    },
    build_launch: build_opencode_launch_command,
    runs_argv: false,
    acp: Some(&OPENCODE_ACP),
    sandbox: &OPENCODE_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &[],
    install_hint: "npm install -g opencode-ai",
    auth_probe: opencode_auth,
    resume_hint: None,
    auth_env: &[],
};

/// Interactive `opencode [-m 'M'] [--auto] --prompt='P'` (a positional is a project
/// directory); batch `opencode run [-m 'M'] [--auto] < prompt.txt`. The batch prompt goes on
/// stdin because `run` wraps any argument containing a space in literal double quotes before
/// the model sees it, and crashes on number-like arguments.
pub fn build_opencode_launch_command(
    spec: &TaskSpec,
    mode: Mode,
    bin: &str,
) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    super::approval_mode(spec, &[], "opencode", &mut warnings);
    let mut parts = vec![
        "OPENCODE_DISABLE_AUTOUPDATE=1".to_string(),
        shell_word_for_bin(bin)?,
    ];
    if mode == Mode::Batch {
        parts.push("run".to_string());
    }
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&OPENCODE, "-m", model, &mut warnings)?);
    }
    if spec.skips_permissions() {
        parts.push("--auto".to_string());
    }
    let prompt = super::prompt_of(spec)?;
    parts.push(match mode {
        Mode::Interactive => format!("--prompt={}", single_quote(&prompt)?),
        Mode::Batch => format!("< \"${PROMPT_VARIABLE}\""),
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    });
    Ok(LaunchCommand::from_words(parts, warnings))
}

fn opencode_auth() -> AuthProbe {
    match super::home_file(".local/share/opencode/auth.json") {
        Some(path) => AuthProbe::Configured(format!("providers stored in {}", path.display())),
        None => {
            AuthProbe::Configured("no key needed for opencode's default free model".to_string())
        }
    }
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static OPENCODE_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".config/opencode"],
    state: &[".local/share/opencode", ".local/state/opencode"],
    private: &[],
    shared: &[".local/share/opencode/auth.json"],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn build(objective: &str, mode: Mode) -> String {
        crate::domain::adapter::built(&OPENCODE, objective, mode, |_| {})
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(
            build("-fix 'it'", Mode::Interactive),
            r"OPENCODE_DISABLE_AUTOUPDATE=1 opencode --auto --prompt='-fix '\''it'\'''"
        );
        assert_eq!(
            build("fix it", Mode::Batch),
            "OPENCODE_DISABLE_AUTOUPDATE=1 opencode run --auto < \"$cuekit_prompt\""
        );
    }

    /// The ACP command: `opencode acp`, the model chosen once the session exists.
    #[test]
    fn acp_launch() {
        let spec = TaskSpec {
            agent_kind: "opencode".into(),
            objective: "x".into(),
            model: Some("opencode/big-pickle".into()),
            approval_mode: None,
            ..TaskSpec::default()
        };
        let launch = OPENCODE
            .launch(&spec, Mode::Acp, OPENCODE.default_bin, "cuekit")
            .unwrap();
        assert_eq!(
            launch.command,
            r#"cuekit __acp --prompt-file "$cuekit_prompt" --bypass --session-model 'opencode/big-pickle' -- opencode acp"#
        );
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
    }
}

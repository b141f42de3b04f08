//! Qwen Code (a Gemini CLI fork). Flags verified against `qwen --help` of
//! @qwen-code/qwen-code 0.15.10 (the newest that installs on Node 20).

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::{Attention, ScreenRules};
use crate::domain::error::Result;
use crate::domain::launch::single_quote;
use crate::domain::spec::{Mode, TaskSpec};

const APPROVAL_MODES: [&str; 4] = ["plan", "default", "auto-edit", "yolo"];

/// `qwen --acp` (0.15.10: `--help` lists `--acp`; `--experimental-acp` still works as a
/// deprecated alias that prints a warning). Verified with a throw-away HOME: `initialize`
/// answers protocol version 1, `loadSession: true`, auth methods `openai` and `qwen-oauth`;
/// without credentials `session/new` fails with -32000 "Authentication required: Use Qwen Code
/// CLI to authenticate first." With `--auth-type openai` and a key it answers the modes `plan`,
/// `default`, `auto-edit`, `yolo` (cuekit's names, one to one) and the model given with `-m`
/// as the current one; a turn against a local OpenAI-compatible server ends `end_turn`.
/// Without `QWEN_CODE_NO_RELAUNCH` the CLI relaunches itself as a child node process that a
/// SIGTERM to the parent leaves orphaned; with it, one process, which exits on stdin EOF.
/// The auto-updater runs only in the interactive UI, so ACP mode needs no switch for it.
static QWEN_ACP: AcpLaunch = AcpLaunch {
    program: None,
    args: &["--acp"],
    model_flag: Some("-m"),
    modes: &[
        ("plan", "plan"),
        ("default", "default"),
        ("auto-edit", "auto-edit"),
        ("yolo", "yolo"),
    ],
    env: &[("QWEN_CODE_NO_RELAUNCH", "true")],
    load_overwrites_same_minute: false,
    verified: "@qwen-code/qwen-code 0.15.10 (--help, initialize and session/new with and without auth, an offline turn against a local OpenAI-compatible server)",
};

pub(super) static QWEN: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("qwen"),
    default_bin: "qwen",
    available_models: &[],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    // Like Gemini, a set CI makes it run headless.
    interactive_unset_env: &["CI", "GITHUB_ACTIONS"],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    screen: ScreenRules {
        // The auth dialog read off the 0.15.10 TUI (tests/fixtures/screens/qwen-auth.txt).
        dialogs: &[(
            Attention::AuthRequired,
            &[
                "Select Authentication Method",
                "Connect a Provider",
                "How would you like to authenticate",
            ],
        )],
        busy: &["esc to cancel"],
        ready: &["Type your message"],
        input_prefixes: &[">", "*"],
        login_hint: None,
    },
    build_launch: build_qwen_launch_command,
    runs_argv: false,
    acp: Some(&QWEN_ACP),
    sandbox: &QWEN_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &APPROVAL_MODES,
    install_hint: "npm install -g @qwen-code/qwen-code",
    auth_probe: qwen_auth,
    resume_hint: None,
    auth_env: &["OPENAI_API_KEY", "OPENAI_BASE_URL"],
};

/// Interactive `qwen [-m 'M'] [-y] --prompt-interactive='P'`, batch `… --prompt='P' </dev/null`.
/// Always the attached forms: `-p -x`, a positional `-x` and `-- -x` all fail to reach the model.
/// The auto-updater (which installs globally mid-task) is switched off.
pub fn build_qwen_launch_command(spec: &TaskSpec, mode: Mode, bin: &str) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    let mut parts = vec!["NO_UPDATE_NOTIFIER=1".to_string(), shell_word_for_bin(bin)?];
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&QWEN, "-m", model, &mut warnings)?);
    }
    match super::approval_mode(spec, &APPROVAL_MODES, "qwen", &mut warnings) {
        // `-y` together with `--approval-mode` is a parse error.
        Some(approval) => parts.push(format!("--approval-mode {approval}")),
        None if spec.skips_permissions() => parts.push("-y".to_string()),
        None => {}
    }
    // The session cuekit chose (its chat is where `result` reads the child's answer): a UUID,
    // the only form Qwen Code takes.
    // A session continued (`--resume-from` a task whose session cuekit chose): `--resume ID`
    // (0.15.10 refuses it together with `--session-id`).
    if let Some(session) = spec.resume_session.as_deref() {
        parts.push(format!("--resume {}", single_quote(session)?));
    } else if mode == Mode::Interactive
        && let Some(session) = spec.session_id.as_deref()
    {
        let session = super::session_name::session_name("qwen", session);
        parts.push(format!("--session-id {}", single_quote(&session)?));
    }
    let prompt = single_quote(&super::prompt_of(spec)?)?;
    parts.push(match mode {
        Mode::Interactive => format!("--prompt-interactive={prompt}"),
        Mode::Batch => format!("--prompt={prompt} </dev/null"),
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    });
    Ok(LaunchCommand::from_words(parts, warnings))
}

/// qwen needs an auth *type* (settings or `--auth-type`); a key in the environment alone is
/// not enough.
fn qwen_auth() -> AuthProbe {
    let selected = super::home_file(".qwen/settings.json").and_then(|path| {
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        Some((
            json.pointer("/security/auth/selectedType")?
                .as_str()?
                .to_string(),
            path,
        ))
    });
    if let Some((kind, path)) = selected {
        return AuthProbe::Configured(format!("{kind} selected in {}", path.display()));
    }
    match super::home_file(".qwen/oauth_creds.json") {
        Some(path) => AuthProbe::Configured(format!("Qwen OAuth login in {}", path.display())),
        None => AuthProbe::Missing(
            "select an auth type in ~/.qwen/settings.json (security.auth.selectedType) and set its key; a key alone is not enough"
                .to_string(),
        ),
    }
}

/// Inside a sandbox: its settings read-only; its sessions (0.15.10 keeps its chats in
/// `.qwen/projects`, where `result` reads them), and history kept.
static QWEN_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".qwen"],
    state: &[".qwen/tmp", ".qwen/history", ".qwen/projects"],
    private: &[".qwen/projects.json"],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn build(objective: &str, mode: Mode, edit: impl FnOnce(&mut TaskSpec)) -> String {
        crate::domain::adapter::built(&QWEN, objective, mode, edit)
    }

    #[test]
    fn recognises_the_real_login_screen() {
        let screen = include_str!("../../../tests/fixtures/screens/qwen-auth.txt");
        assert_eq!(
            crate::domain::attention::detect(&QWEN.screen, screen, false),
            Some(Attention::AuthRequired)
        );
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(
            build("-fix", Mode::Interactive, |_| {}),
            "NO_UPDATE_NOTIFIER=1 qwen -y --prompt-interactive='-fix'"
        );
        assert_eq!(
            build("x", Mode::Batch, |s| s.approval_mode = Some("plan".into())),
            "NO_UPDATE_NOTIFIER=1 qwen --approval-mode plan --prompt='x' </dev/null"
        );
        // The session cuekit chose, as the UUID Qwen Code takes; interactive only.
        let uuid = crate::domain::adapter::session_name::session_uuid("t_0123456789ab");
        assert_eq!(
            build("x", Mode::Interactive, |s| s.session_id =
                Some("t_0123456789ab".into())),
            format!("NO_UPDATE_NOTIFIER=1 qwen -y --session-id '{uuid}' --prompt-interactive='x'")
        );
        assert_eq!(
            build("x", Mode::Interactive, |s| {
                s.session_id = Some("t_0123456789ab".into());
                s.resume_session = Some(uuid.clone());
            }),
            format!("NO_UPDATE_NOTIFIER=1 qwen -y --resume '{uuid}' --prompt-interactive='x'")
        );
    }

    /// The ACP command: one process, the model on its command line, each approval mode its own ACP mode.
    #[test]
    fn acp_launch() {
        let spec = TaskSpec {
            agent_kind: "qwen".into(),
            objective: "x".into(),
            model: Some("qwen3-coder".into()),
            approval_mode: Some("auto-edit".into()),
            ..TaskSpec::default()
        };
        let launch = QWEN
            .launch(&spec, Mode::Acp, QWEN.default_bin, "cuekit")
            .unwrap();
        assert_eq!(
            launch.command,
            r#"cuekit __acp --prompt-file "$cuekit_prompt" --bypass --session-mode 'auto-edit' --env 'QWEN_CODE_NO_RELAUNCH=true' -- qwen --acp -m 'qwen3-coder'"#
        );
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
        let acp = QWEN.acp.unwrap();
        for mode in APPROVAL_MODES {
            assert!(acp.mode_id(mode).is_some(), "{mode}");
        }
    }
}

//! Anthropic's Claude Code. Flags verified against `claude --help` of
//! @anthropic-ai/claude-code 2.1.197 (the newest that installs on Node 20).

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::{Attention, ScreenRules};
use crate::domain::error::Result;
use crate::domain::launch::single_quote;
use crate::domain::spec::{Mode, TaskSpec};

/// `--permission-mode` choices; any of them replaces the bypass flag.
const PERMISSION_MODES: [&str; 6] = [
    "default",
    "acceptEdits",
    "auto",
    "dontAsk",
    "plan",
    "bypassPermissions",
];

/// The bridge `claude-agent-acp` (@agentclientprotocol/claude-agent-acp 0.49.0, the newest
/// that supports Node 20: 0.50.0 and later declare `node >=22`). It has no `--help` and takes
/// no arguments: it speaks ACP on stdio and drives the Claude Code binary of its own
/// @anthropic-ai/claude-agent-sdk (0.3.185, Claude Code 2.1.185; `CLAUDE_CODE_EXECUTABLE`
/// overrides it). Verified with a throw-away HOME: `initialize` answers protocol version 1,
/// `loadSession: true`, no auth methods; `session/new` succeeds without credentials with the
/// modes `auto`, `default`, `acceptEdits`, `plan`, `dontAsk`, `bypassPermissions` (cuekit's
/// permission modes, one to one), and the first `session/prompt` then fails with -32000
/// "Authentication required". A turn against a local Anthropic-compatible server
/// (`ANTHROPIC_BASE_URL`) ends `end_turn`. As root the bridge withholds `bypassPermissions`
/// unless `IS_SANDBOX` is set, and with any value but `1` (e.g. `yes`) Claude Code then refuses
/// the `--allow-dangerously-skip-permissions` it is started with (`session/new` fails with
/// -32603 "Internal error", "Claude Code process exited with code 1"): `IS_SANDBOX=1`, as the
/// other modes set it for the bypass. No model option, and no `session/set_model` (-32601
/// "Method not found"): the model is its `model` config option (`session/set_config_option`)
/// or `ANTHROPIC_MODEL`. Two processes (the node bridge and Claude Code); both end on stdin
/// EOF or a SIGTERM to the bridge.
static CLAUDE_ACP: AcpLaunch = AcpLaunch {
    program: Some("claude-agent-acp"),
    args: &[],
    model_flag: None,
    modes: &[
        ("default", "default"),
        ("acceptEdits", "acceptEdits"),
        ("auto", "auto"),
        ("dontAsk", "dontAsk"),
        ("plan", "plan"),
        ("bypassPermissions", "bypassPermissions"),
    ],
    env: &[("IS_SANDBOX", "1")],
    load_overwrites_same_minute: false,
    verified: "@agentclientprotocol/claude-agent-acp 0.49.0 (initialize, session/new and session/prompt without credentials, an offline turn against a local Anthropic-compatible server)",
};

pub(super) static CLAUDE: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("claude-code"),
    default_bin: "claude",
    available_models: &["haiku", "sonnet", "opus"],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    // The dialogs from the 2.1.x TUI's texts; the permission dialog, busy and idle screens
    // captured from 2.1.185 (tests/fixtures/screens/claude-*.txt): its prompt is `❯`, and a
    // mode other than the default shows `(shift+tab to cycle)` in place of `? for shortcuts`.
    screen: ScreenRules {
        dialogs: &[
            (
                Attention::AuthRequired,
                &[
                    "Please run /login",
                    "Select login method",
                    "Do you want to use this API key?",
                ],
            ),
            (
                Attention::TrustRequired,
                &[
                    "Is this a project you created or one you trust",
                    "Do you trust the files in this folder?",
                ],
            ),
            (
                Attention::PermissionPrompt,
                &["Do you want to proceed?", "Yes, I accept"],
            ),
        ],
        busy: &["esc to interrupt"],
        ready: &["? for shortcuts", "(shift+tab to cycle)"],
        input_prefixes: &[">", "❯"],
        login_hint: None,
    },
    build_launch: build_claude_launch_command,
    runs_argv: false,
    acp: Some(&CLAUDE_ACP),
    sandbox: &CLAUDE_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &PERMISSION_MODES,
    install_hint: "npm install -g @anthropic-ai/claude-code",
    auth_probe: claude_auth,
    resume_hint: None,
    auth_env: &CLAUDE_AUTH_ENV,
};

/// Interactive `claude [--model 'M'] [--dangerously-skip-permissions] -- 'P'`, batch adds `-p`
/// (a switch) and reads nothing from stdin. `--` keeps a prompt starting with `-` a prompt.
/// The auto-updater is switched off (it installs globally mid-task); as root the bypass flag
/// is refused unless `IS_SANDBOX=1`, which a delegated pane is the sandbox for.
pub fn build_claude_launch_command(
    spec: &TaskSpec,
    mode: Mode,
    bin: &str,
) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    let mut parts = vec!["DISABLE_AUTOUPDATER=1".to_string()];
    let permission_mode =
        super::approval_mode(spec, &PERMISSION_MODES, "claude-code", &mut warnings);
    let bypass = permission_mode.is_none() && spec.skips_permissions();
    if bypass || permission_mode == Some("bypassPermissions") {
        parts.push("IS_SANDBOX=1".to_string());
    }
    parts.push(shell_word_for_bin(bin)?);
    if mode == Mode::Batch {
        parts.push("-p".to_string());
    }
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&CLAUDE, "--model", model, &mut warnings)?);
    }
    match permission_mode {
        Some(permission_mode) => parts.push(format!("--permission-mode {permission_mode}")),
        None if bypass => parts.push("--dangerously-skip-permissions".to_string()),
        None => {}
    }
    // The session cuekit chose (its record is where `result` reads the child's answer): a
    // UUID, the only form Claude Code takes.
    // A session continued (`--resume-from` a task whose session cuekit chose) is resumed in
    // its own record: `--resume ID` (checked with 2.1.185: the record grows).
    if let Some(session) = spec.resume_session.as_deref() {
        parts.push(format!("--resume {}", single_quote(session)?));
    } else if mode == Mode::Interactive
        && let Some(session) = spec.session_id.as_deref()
    {
        let session = super::session_name::session_name("claude-code", session);
        parts.push(format!("--session-id {}", single_quote(&session)?));
    }
    parts.push(format!("-- {}", single_quote(&super::prompt_of(spec)?)?));
    if mode == Mode::Batch {
        parts.push("</dev/null".to_string());
    }
    Ok(LaunchCommand::from_words(parts, warnings))
}

/// Where Claude Code's credentials can come from in the environment.
const CLAUDE_AUTH_ENV: [&str; 5] = [
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
];

fn claude_auth() -> AuthProbe {
    if let Some(name) = super::env_set(&CLAUDE_AUTH_ENV) {
        return AuthProbe::Configured(format!("{name} is set"));
    }
    match super::home_file(".claude/.credentials.json") {
        Some(path) => AuthProbe::Configured(format!("login stored in {}", path.display())),
        None => {
            AuthProbe::Missing("set ANTHROPIC_API_KEY, or run `claude` once and /login".to_string())
        }
    }
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static CLAUDE_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".claude"],
    state: &[
        ".claude/projects",
        ".claude/todos",
        ".claude/shell-snapshots",
        ".claude/statsig",
        ".claude/session-env",
        ".claude/file-history",
        ".claude/debug",
        // Plan mode's plans, of every project.
        ".claude/plans",
    ],
    // Every project's prompts: a private one inside.
    private: &[".claude/history.jsonl"],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn build(objective: &str, mode: Mode, edit: impl FnOnce(&mut TaskSpec)) -> String {
        crate::domain::adapter::built(&CLAUDE, objective, mode, edit)
    }

    #[test]
    fn launch_shapes() {
        assert_eq!(
            build("fix it", Mode::Interactive, |_| {}),
            "DISABLE_AUTOUPDATER=1 IS_SANDBOX=1 claude --dangerously-skip-permissions -- 'fix it'"
        );
        assert_eq!(
            build("-v is a prompt", Mode::Batch, |s| s.model =
                Some("sonnet".into())),
            "DISABLE_AUTOUPDATER=1 IS_SANDBOX=1 claude -p --model 'sonnet' --dangerously-skip-permissions -- '-v is a prompt' </dev/null"
        );
        assert_eq!(
            build("x", Mode::Interactive, |s| s.dangerously_skip_permissions =
                Some(false)),
            "DISABLE_AUTOUPDATER=1 claude -- 'x'"
        );
        assert_eq!(
            build("x", Mode::Batch, |s| s.approval_mode = Some("plan".into())),
            "DISABLE_AUTOUPDATER=1 claude -p --permission-mode plan -- 'x' </dev/null"
        );
        // The session cuekit chose, as the UUID Claude Code takes; interactive only.
        let uuid = crate::domain::adapter::session_name::session_uuid("t_0123456789ab");
        assert_eq!(
            build("x", Mode::Interactive, |s| s.session_id =
                Some("t_0123456789ab".into())),
            format!(
                "DISABLE_AUTOUPDATER=1 IS_SANDBOX=1 claude --dangerously-skip-permissions --session-id '{uuid}' -- 'x'"
            )
        );
        assert!(
            !build("x", Mode::Batch, |s| s.session_id =
                Some("t_0123456789ab".into()))
            .contains("--session-id")
        );
        assert_eq!(
            build("x", Mode::Interactive, |s| {
                s.session_id = Some("t_0123456789ab".into());
                s.resume_session = Some(uuid.clone());
            }),
            format!(
                "DISABLE_AUTOUPDATER=1 IS_SANDBOX=1 claude --dangerously-skip-permissions --resume '{uuid}' -- 'x'"
            )
        );
    }

    /// The screens of the real 2.1.185 TUI: asked, busy, and idle after a turn whatever the
    /// permission mode (cuekit's default, bypass, shows no `? for shortcuts`).
    #[test]
    fn reads_the_real_screens() {
        use crate::domain::attention::{awaits_message, detect};
        let screen = |name: &str| match name {
            "permission" => include_str!("../../../tests/fixtures/screens/claude-permission.txt"),
            "busy" => include_str!("../../../tests/fixtures/screens/claude-busy.txt"),
            "idle-default" => {
                include_str!("../../../tests/fixtures/screens/claude-idle-default.txt")
            }
            _ => include_str!("../../../tests/fixtures/screens/claude-idle-bypass.txt"),
        };
        let rules = &CLAUDE.screen;
        assert_eq!(
            detect(rules, screen("permission"), false),
            Some(Attention::PermissionPrompt)
        );
        assert_eq!(detect(rules, screen("busy"), false), None);
        assert!(!awaits_message(rules, screen("busy")));
        for idle in ["idle-default", "idle-bypass"] {
            assert_eq!(
                detect(rules, screen(idle), false),
                Some(Attention::IdleAtPrompt),
                "{idle}"
            );
            assert!(awaits_message(rules, screen(idle)), "{idle}");
        }
    }

    /// The ACP command is the bridge, not `claude`; each permission mode is its own ACP mode.
    #[test]
    fn acp_launch() {
        let spec = TaskSpec {
            agent_kind: "claude-code".into(),
            objective: "x".into(),
            model: Some("sonnet".into()),
            approval_mode: Some("plan".into()),
            ..TaskSpec::default()
        };
        let launch = CLAUDE
            .launch(&spec, Mode::Acp, CLAUDE.default_bin, "cuekit")
            .unwrap();
        assert_eq!(
            launch.command,
            r#"cuekit __acp --prompt-file "$cuekit_prompt" --bypass --session-mode 'plan' --session-model 'sonnet' --env 'IS_SANDBOX=1' -- claude-agent-acp"#
        );
        assert!(launch.warnings.is_empty(), "{:?}", launch.warnings);
        let acp = CLAUDE.acp.unwrap();
        for mode in PERMISSION_MODES {
            assert!(acp.mode_id(mode).is_some(), "{mode}");
        }
    }
}

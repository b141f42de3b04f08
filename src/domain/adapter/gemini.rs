//! Google Gemini CLI. Flags verified against `gemini --help` of @google/gemini-cli 0.61.0
//! (see shared/reference/gemini-cli.md).

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, ExitReason, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::{Attention, ScreenRules};
use crate::domain::error::Result;
use crate::domain::launch::{PROMPT_VARIABLE, single_quote};
use crate::domain::spec::{Mode, TaskSpec};

/// What works now that the Gemini CLI no longer serves personal "Login with Google" accounts
/// (Google AI Pro/Ultra and free Code Assist for individuals, since 2026-06-18).
pub const PERSONAL_LOGIN_ENDED: &str = "the Gemini CLI needs credentials, and since 2026-06-18 it no longer serves personal \
     Google logins: export GEMINI_API_KEY=… (an AI Studio key), or use Vertex AI \
     (GOOGLE_GENAI_USE_VERTEXAI=true) or a Code Assist Standard/Enterprise login, or submit with \
     --agent antigravity (Google's successor CLI)";

pub const GEMINI_APPROVAL_MODES: [&str; 4] = ["default", "auto_edit", "yolo", "plan"];

/// `gemini --acp` (0.61.0: `--help` lists `--acp`, `--experimental-acp` is its deprecated
/// alias; `initialize`, `session/new`, `session/prompt`, `session/request_permission` verified
/// offline with canned replies, see ../shared/reference/gemini-cli.md "ACP"). `session/new`
/// answers the modes `default`, `autoEdit`, `yolo` and `plan`. One process: a relaunched
/// child would outlive a killed parent.
static GEMINI_ACP: AcpLaunch = AcpLaunch {
    program: None,
    args: &["--acp"],
    model_flag: Some("-m"),
    modes: &[
        ("default", "default"),
        ("auto_edit", "autoEdit"),
        ("yolo", "yolo"),
        ("plan", "plan"),
    ],
    env: &[("GEMINI_CLI_NO_RELAUNCH", "true")],
    // Seen with 0.61.0: `session/load` within the minute of `session/new` answers "No previous
    // sessions found" and the session's file is gone (tests/integration/acp.rs resumes across it).
    load_overwrites_same_minute: true,
    verified: "@google/gemini-cli 0.61.0 (--help, an offline ACP turn with canned replies)",
};

pub(super) static GEMINI: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("gemini"),
    default_bin: "gemini",
    // Names the 0.61.0 CLI itself accepts: its aliases, then concrete model ids.
    available_models: &[
        "auto",
        "pro",
        "flash",
        "flash-lite",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-3-pro-preview",
        "gemini-3.1-pro-preview",
        "gemini-3-flash-preview",
        "gemini-3.5-flash",
        "gemini-3.1-flash-lite",
        "gemini-3.5-flash-lite",
    ],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[
        ExitReason {
            code: 1,
            reason: "agent_error",
            hint: "usage or API error: read the transcript (`cuekit logs <id>`)",
        },
        ExitReason {
            code: 41,
            reason: "auth_missing",
            hint: PERSONAL_LOGIN_ENDED,
        },
        ExitReason {
            code: 42,
            reason: "input_error",
            hint: "Gemini rejected its input (e.g. an unknown --resume id); check the prompt and flags",
        },
        ExitReason {
            code: 44,
            reason: "sandbox_error",
            hint: "Gemini's sandbox failed to start; check its sandbox settings",
        },
        ExitReason {
            code: 52,
            reason: "config_error",
            hint: "Gemini's settings.json is invalid; fix ~/.gemini/settings.json",
        },
        ExitReason {
            code: 53,
            reason: "turn_limit",
            hint: "the session reached its turn limit; split the task or raise the limit",
        },
        ExitReason {
            code: 54,
            reason: "tool_execution_error",
            hint: "a tool call failed fatally; read the transcript",
        },
        ExitReason {
            code: 55,
            reason: "untrusted_workspace",
            hint: "the folder is not trusted; cuekit passes --skip-trust, so check the CLI version",
        },
        ExitReason {
            code: 130,
            reason: "cancelled",
            hint: "the run was cancelled inside Gemini (Ctrl-C)",
        },
    ],
    // The TUI turns an Enter arriving within 30 ms of typed text into a newline.
    interactive_unset_env: &["CI", "GITHUB_ACTIONS"],
    steer_enter_delay: Duration::from_millis(100),
    // A bracketed paste needs longer: 100 ms is at the edge (90 ms failed), 120-200 ms held.
    paste_enter_delay: Duration::from_millis(250),
    // Nothing to clear: a steer is refused while a dialog is up, and an idle prompt is empty.
    steer_pre_keys: &[],
    // Read off the 0.61.0 TUI in tmux (tests/fixtures/screens/gemini-*.txt).
    screen: ScreenRules {
        dialogs: &[
            (
                Attention::AuthRequired,
                // The login menu, and the key dialog its "Use Gemini API Key" opens.
                &["How would you like to authenticate", "Enter Gemini API Key"],
            ),
            (
                Attention::TrustRequired,
                &["Do you trust the files in this folder?"],
            ),
            (
                Attention::PermissionPrompt,
                &["Allow once", "Allow execution of", "Apply this change?"],
            ),
        ],
        busy: &["esc to cancel"],
        ready: &["Type your message"],
        // `*` in YOLO mode (-y), `>` otherwise.
        input_prefixes: &[">", "*"],
        login_hint: Some(PERSONAL_LOGIN_ENDED),
    },
    build_launch: build_gemini_launch_command,
    runs_argv: false,
    acp: Some(&GEMINI_ACP),
    sandbox: &GEMINI_SANDBOX,
    own_sandbox_flag: Some("--sandbox"),
    approval_modes: &GEMINI_APPROVAL_MODES,
    install_hint: "npm install -g @google/gemini-cli",
    auth_probe: gemini_auth,
    resume_hint: None,
    auth_env: &[
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GEMINI_CLI_USE_COMPUTE_ADC",
    ],
};

/// Gemini's own order of auth sources (env first, then `security.auth.selectedType` in its
/// settings file). Never runs the CLI: `gemini --list-sessions` can make network calls and hang.
fn gemini_auth() -> AuthProbe {
    let env_true = |name: &str| std::env::var(name).is_ok_and(|v| v == "true" || v == "1");
    if env_true("GOOGLE_GENAI_USE_GCA") {
        return personal_login("GOOGLE_GENAI_USE_GCA=true (Login with Google)".to_string());
    }
    for (name, how) in [
        (
            "GOOGLE_GENAI_USE_VERTEXAI",
            "GOOGLE_GENAI_USE_VERTEXAI=true (Vertex AI)",
        ),
        ("CLOUD_SHELL", "CLOUD_SHELL=true"),
        (
            "GEMINI_CLI_USE_COMPUTE_ADC",
            "GEMINI_CLI_USE_COMPUTE_ADC=true",
        ),
    ] {
        if env_true(name) {
            return AuthProbe::Configured(how.to_string());
        }
    }
    if let Some(name) = super::env_set(&["GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY"]) {
        return AuthProbe::Configured(format!("{name} is set"));
    }
    let home = std::env::var_os("GEMINI_CLI_HOME").or_else(|| std::env::var_os("HOME"));
    let settings = home.map(|home| std::path::PathBuf::from(home).join(".gemini/settings.json"));
    let selected = settings.as_ref().and_then(|path| {
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        json.pointer("/security/auth/selectedType")?
            .as_str()
            .map(String::from)
    });
    match (selected, settings) {
        (Some(kind), Some(path)) if kind == "oauth-personal" => {
            personal_login(format!("{kind} (Login with Google) selected in {}", path.display()))
        }
        (Some(kind), Some(path)) => AuthProbe::Configured(format!("{kind} selected in {}", path.display())),
        _ => AuthProbe::Missing(
            "set GEMINI_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI / GOOGLE_GENAI_USE_GCA), or run `gemini` once and log in"
                .to_string(),
        ),
    }
}

/// A Google login: since 2026-06-18 it works only for a Code Assist Standard or Enterprise
/// licence, so it is said with what works now.
fn personal_login(how: String) -> AuthProbe {
    AuthProbe::NotServed {
        how: format!(
            "{how}: since 2026-06-18 the Gemini CLI no longer serves personal Google accounts \
             (it still serves a Code Assist Standard or Enterprise licence)"
        ),
        hint: "export GEMINI_API_KEY=… (an AI Studio key), or use Vertex AI \
               (GOOGLE_GENAI_USE_VERTEXAI=true), or submit with --agent antigravity"
            .to_string(),
    }
}

/// What batch runs pass as `-p`: the prompt itself arrives on standard input, which headless
/// Gemini reads first (the model gets the stdin text, a blank line, then this).
pub const STDIN_PROMPT_NOTE: &str = "Do the task given on standard input.";

/// Builds the Gemini command line for a task.
///
/// Shapes (adapter design, corrected by the real CLI):
/// interactive `gemini --skip-trust [-y] [-m 'M'] 'P'`; batch
/// `… -p 'Do the task given on standard input.' < "$cuekit_prompt"`: headless Gemini reads the
/// prompt from stdin, so it may be far larger than one argv word (128 KiB on Linux) and stays
/// out of `ps`. A prompt starting with `-` is misparsed by the CLI as flags, so the interactive
/// form uses the attached `--prompt-interactive='P'` then.
pub fn build_gemini_launch_command(
    spec: &TaskSpec,
    mode: Mode,
    bin: &str,
) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    let mut parts = vec![shell_word_for_bin(bin)?, "--skip-trust".to_string()];

    match super::approval_mode(spec, &GEMINI_APPROVAL_MODES, "gemini", &mut warnings) {
        // The CLI rejects -y together with --approval-mode.
        Some(approval) => parts.push(format!("--approval-mode {approval}")),
        None if spec.skips_permissions() => parts.push("-y".to_string()),
        None => {}
    }
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&GEMINI, "-m", model, &mut warnings)?);
    }

    let event_stream = mode == Mode::Batch && spec.stream_events.unwrap_or(true);
    if event_stream {
        parts.push("-o stream-json".to_string());
    }
    // The CLI refuses --session-id together with --resume.
    if let Some(session) = spec.resume_session.as_deref() {
        parts.push(format!("--resume {}", single_quote(session)?));
    } else if let Some(session) = spec.session_id.as_deref() {
        parts.push(format!("--session-id {}", single_quote(session)?));
    }

    let prompt = super::prompt_of(spec)?;
    let quoted = single_quote(&prompt)?;
    parts.push(match mode {
        Mode::Batch => format!(
            "-p {} < \"${PROMPT_VARIABLE}\"",
            single_quote(STDIN_PROMPT_NOTE)?
        ),
        Mode::Interactive if prompt.starts_with('-') => {
            format!("--prompt-interactive={quoted}")
        }
        Mode::Interactive => quoted,
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    });

    Ok(LaunchCommand {
        command: parts.join(" "),
        warnings,
        event_stream,
        agent_at: None,
    })
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static GEMINI_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".gemini"],
    state: &[".gemini/tmp", ".gemini/history"],
    private: &[".gemini/projects.json"],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    /// How every batch command ends: the prompt is read from its file on stdin.
    const STDIN: &str = "-p 'Do the task given on standard input.' < \"$cuekit_prompt\"";

    /// A task in the seed's shape: plain-text batch output, so `-o stream-json` stays out.
    fn spec(objective: &str) -> TaskSpec {
        TaskSpec {
            agent_kind: "gemini".into(),
            objective: objective.into(),
            stream_events: Some(false),
            ..TaskSpec::default()
        }
    }

    fn build(spec: &TaskSpec, mode: Mode) -> LaunchCommand {
        build_gemini_launch_command(spec, mode, "gemini").unwrap()
    }

    #[test]
    fn an_acp_launch_says_where_the_agent_starts() {
        let launch = GEMINI
            .launch(&spec("hi"), Mode::Acp, "gemini", "'cuekit'")
            .unwrap();
        let at = launch
            .agent_at
            .expect("an ACP launch runs the client first");
        assert!(
            launch.command[..at].starts_with("'cuekit' __acp"),
            "{}",
            launch.command
        );
        assert!(launch.command[..at].ends_with(" -- "), "{}", launch.command);
        assert!(
            launch.command[at..].starts_with("gemini --acp"),
            "{}",
            launch.command
        );
        assert_eq!(build(&spec("hi"), Mode::Batch).agent_at, None);
    }

    #[test]
    fn capabilities_match_the_design() {
        let caps = &GEMINI.capabilities;
        assert_eq!(caps.agent_kind, "gemini");
        assert!(caps.supports_attach && caps.supports_steering && caps.supports_model_selection);
        assert_eq!(caps.default_mode, Mode::Interactive);
        assert_eq!(caps.supported_modes, &[Mode::Interactive, Mode::Batch]);
    }

    #[test]
    fn default_is_interactive_with_bypass() {
        assert_eq!(
            build(&spec("x"), Mode::Interactive).command,
            "gemini --skip-trust -y 'x'"
        );
    }

    #[test]
    fn model_is_quoted() {
        let mut s = spec("x");
        s.model = Some("gemini-2.5-flash".into());
        let launch = build(&s, Mode::Interactive);
        assert_eq!(
            launch.command,
            "gemini --skip-trust -y -m 'gemini-2.5-flash' 'x'"
        );
        assert!(launch.warnings.is_empty());
    }

    #[test]
    fn batch_uses_dash_p() {
        let mut s = spec("x");
        s.model = Some("gemini-2.5-flash".into());
        assert_eq!(
            build(&s, Mode::Batch).command,
            "gemini --skip-trust -y -m 'gemini-2.5-flash' -p 'Do the task given on standard input.' < \"$cuekit_prompt\""
        );
    }

    #[test]
    fn opting_out_of_bypass_keeps_skip_trust() {
        let mut s = spec("x");
        s.dangerously_skip_permissions = Some(false);
        assert_eq!(
            build(&s, Mode::Interactive).command,
            "gemini --skip-trust 'x'"
        );
        assert_eq!(
            build(&s, Mode::Batch).command,
            format!("gemini --skip-trust {STDIN}")
        );
    }

    #[test]
    fn valid_approval_mode_replaces_yolo_flag() {
        for approval in GEMINI_APPROVAL_MODES {
            let mut s = spec("x");
            s.approval_mode = Some(approval.into());
            // Precedence over the bypass option in both directions.
            for bypass in [None, Some(false), Some(true)] {
                s.dangerously_skip_permissions = bypass;
                assert_eq!(
                    build(&s, Mode::Interactive).command,
                    format!("gemini --skip-trust --approval-mode {approval} 'x'")
                );
            }
        }
    }

    #[test]
    fn invalid_approval_mode_falls_back_and_warns() {
        let mut s = spec("x");
        s.approval_mode = Some("readonly".into());
        let launch = build(&s, Mode::Interactive);
        assert_eq!(launch.command, "gemini --skip-trust -y 'x'");
        assert_eq!(launch.warnings.len(), 1);
        assert!(launch.warnings[0].contains("'readonly'"));
        s.dangerously_skip_permissions = Some(false);
        assert_eq!(
            build(&s, Mode::Interactive).command,
            "gemini --skip-trust 'x'"
        );
    }

    #[test]
    fn single_quotes_in_prompt_are_escaped() {
        assert_eq!(
            build(&spec("don't stop"), Mode::Interactive).command,
            r"gemini --skip-trust -y 'don'\''t stop'"
        );
    }

    #[test]
    fn leading_dash_prompts_use_attached_forms_or_stdin() {
        assert_eq!(
            build(&spec("-hello world"), Mode::Batch).command,
            format!("gemini --skip-trust -y {STDIN}")
        );
        assert_eq!(
            build(&spec("-hello world"), Mode::Interactive).command,
            "gemini --skip-trust -y --prompt-interactive='-hello world'"
        );
    }

    #[test]
    fn unknown_model_passes_through_with_warning() {
        let mut s = spec("x");
        s.model = Some("gemini-9-ultra".into());
        let launch = build(&s, Mode::Batch);
        assert!(launch.command.contains("-m 'gemini-9-ultra'"));
        assert!(launch.warnings[0].contains("gemini-9-ultra"));
    }

    #[test]
    fn bad_inputs_are_invalid_input() {
        let mut s = spec("x");
        s.model = Some("-x".into());
        assert!(build_gemini_launch_command(&s, Mode::Batch, "gemini").is_err());
        let err = build_gemini_launch_command(&spec("a\0b"), Mode::Batch, "gemini").unwrap_err();
        assert_eq!(err.code, crate::domain::error::ErrorCode::InvalidInput);
        let err = build_gemini_launch_command(&spec("  "), Mode::Batch, "gemini").unwrap_err();
        assert_eq!(err.code, crate::domain::error::ErrorCode::InvalidInput);
    }

    use crate::domain::adapter::screen_fixture as screen;

    #[test]
    fn recognises_the_real_tuis_screens() {
        use crate::domain::attention::{detect, input_line, is_busy};
        let rules = &GEMINI.screen;
        for (fixture, expected) in [
            ("gemini-auth.txt", Some(Attention::AuthRequired)),
            (
                "gemini-auth-key-detected.txt",
                Some(Attention::AuthRequired),
            ),
            ("gemini-api-key.txt", Some(Attention::AuthRequired)),
            ("gemini-trust.txt", Some(Attention::TrustRequired)),
            ("gemini-permission.txt", Some(Attention::PermissionPrompt)),
            ("gemini-idle.txt", Some(Attention::IdleAtPrompt)),
            ("gemini-busy.txt", None),
            ("gemini-typed-not-submitted.txt", None),
        ] {
            assert_eq!(
                detect(rules, &screen(fixture), false),
                expected,
                "{fixture}"
            );
        }
        assert!(is_busy(rules, &screen("gemini-busy.txt")));
        assert!(is_busy(rules, &screen("gemini-busy-yolo.txt")));
        assert_eq!(
            input_line(rules, &screen("gemini-busy-yolo.txt")),
            Some(" *   Type your message or @path/to/file")
        );
        assert_eq!(
            input_line(rules, &screen("gemini-typed-not-submitted.txt")),
            Some(" > hello there")
        );
        assert_eq!(
            input_line(rules, &screen("gemini-idle.txt")),
            Some(" >   Type your message or @path/to/file")
        );
    }

    #[test]
    fn batch_streams_events_by_default_and_interactive_never() {
        let mut s = spec("x");
        s.stream_events = None;
        let batch = build(&s, Mode::Batch);
        assert_eq!(
            batch.command,
            format!("gemini --skip-trust -y -o stream-json {STDIN}")
        );
        assert!(batch.event_stream);
        let interactive = build(&s, Mode::Interactive);
        assert_eq!(interactive.command, "gemini --skip-trust -y 'x'");
        assert!(!interactive.event_stream);
        assert!(!build(&spec("x"), Mode::Batch).event_stream);
    }

    #[test]
    fn sessions_are_named_or_resumed_never_both() {
        let mut s = spec("x");
        s.session_id = Some("t_0123456789ab".into());
        assert_eq!(
            build(&s, Mode::Interactive).command,
            "gemini --skip-trust -y --session-id 't_0123456789ab' 'x'"
        );
        s.resume_session = Some("abc-123".into());
        assert_eq!(
            build(&s, Mode::Batch).command,
            format!("gemini --skip-trust -y --resume 'abc-123' {STDIN}")
        );
    }

    #[test]
    fn custom_bin_is_used() {
        assert_eq!(
            build_gemini_launch_command(&spec("x"), Mode::Batch, "/opt/g/gemini")
                .unwrap()
                .command,
            format!("/opt/g/gemini --skip-trust -y {STDIN}")
        );
    }
}

//! Antigravity CLI (`agy`), the Gemini CLI's successor. `agy` installs from Google's own site and
//! is on no package registry cuekit can reach, so this adapter follows its public documentation
//! (repository `google-antigravity/antigravity-cli`) and its CHANGELOG, not a `--help` read
//! here; each flag below names where it is documented and the first version that names it.
//! It targets agy 1.1.10 and later (the first version whose whole `--help` flag list has been
//! published); docs/guides/antigravity-adapter.md has the sources and a smoke recipe.
//!
//! - `-p`/`--print` takes the prompt as its value (docs/docs-cli-gcli-migration.md: `agy -p
//!   "…"`), `-i`/`--prompt-interactive` runs a first prompt and stays in the TUI (CHANGELOG
//!   1.1.12). agy parses flags with Go's `flag` package: the attached form `-p=<prompt>` keeps a
//!   prompt starting with `-` a prompt (1.1.18 made a detached one an error). There is no
//!   positional prompt (an error since 1.1.18) and no stdin prompt for `-p` (1.1.1), so the
//!   prompt is one argv word: submit refuses one over Linux's 128 KiB word limit.
//! - `--dangerously-skip-permissions` (docs/docs-cli-using.md), `--model` (1.0.5), `--mode
//!   default|accept-edits|plan` (1.1.0), `--conversation <id>` (docs/docs-cli-commands-resume.md),
//!   `--add-dir` (1.1.10 flag list), `--output-format stream-json` (1.1.8), `--print-timeout`
//!   (1.1.10 flag list; default 5 minutes until 1.2.6, unlimited since),
//!   `--disable-slash-commands` (1.1.9).
//! - `AGY_CLI_DISABLE_AUTO_UPDATE=true` (docs/docs-cli-troubleshooting.md): agy otherwise
//!   updates itself in the background, in the middle of a task.

use std::time::Duration;

use super::acp::AcpLaunch;
use super::{Adapter, AuthProbe, Capabilities, ExitReason, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::{Attention, ScreenRules};
use crate::domain::error::Result;
use crate::domain::launch::single_quote;
use crate::domain::spec::{Mode, TaskSpec};

/// `--mode` values (CHANGELOG 1.1.0); each replaces the bypass flag.
const APPROVAL_MODES: [&str; 3] = ["default", "accept-edits", "plan"];

/// Google ships the ACP server as its own binary, `agy_acp_server`, through the ACP registry
/// (`agentclientprotocol/registry`, `antigravity-acp/agent.json`, whose archive names it
/// `agy_acp_server.par`: on Linux it is started with an empty `--uid=`, as here). Its `session/new` answers the modes `default`, `auto_edit` and
/// `yolo`; the model is a config option, not a flag. Not run here: the stand-in
/// tests/fixtures/fake-agy-acp speaks the lifecycle's part of the protocol.
static ANTIGRAVITY_ACP: AcpLaunch = AcpLaunch {
    program: Some("agy_acp_server"),
    args: if cfg!(target_os = "linux") {
        &["--uid="]
    } else {
        &[]
    },
    model_flag: None,
    // The pane's `accept-edits` is the server's `auto_edit`.
    modes: &[
        ("default", "default"),
        ("auto_edit", "auto_edit"),
        ("accept-edits", "auto_edit"),
        ("yolo", "yolo"),
    ],
    env: &[],
    load_overwrites_same_minute: false,
    verified: "documentation only (ACP registry entry antigravity-acp); tested against a stand-in",
};

pub(super) static ANTIGRAVITY: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("antigravity"),
    default_bin: "agy",
    // The models depend on the account: `agy models` lists them; any name is passed through.
    available_models: &[],
    // 3 since 1.2.6 (CHANGELOG; an `AGY_ERROR:` JSON line on stderr says more); 1 for auth,
    // quota and other failures, and 2 for a bad flag (Go's flag package), as peers saw them.
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[
        ExitReason {
            code: 1,
            reason: "agent_error",
            hint: "agy failed (not signed in, quota reached, or another error): read the transcript (`cuekit logs <id>`)",
        },
        ExitReason {
            code: 2,
            reason: "usage_error",
            hint: "agy rejected its command line (a flag or value it does not know): check that agy is 1.1.10 or later (`agy --version`)",
        },
        ExitReason {
            code: 3,
            reason: "api_error",
            hint: "the model API failed; the transcript's AGY_ERROR line says whether a retry can help",
        },
    ],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(100),
    paste_enter_delay: Duration::from_millis(250),
    steer_pre_keys: &[],
    // agy's documentation shows no screen; these are its TUI's words as peers captured them in
    // tmux (Agent of Empires, 1.0.x-1.2.0), in tests/fixtures/screens/agy-*.txt.
    screen: ScreenRules {
        // The menus, not their questions: a model's answer may well end "Do you want to
        // proceed?", and an approval's question changed across versions.
        dialogs: &[
            (
                Attention::AuthRequired,
                &["You are currently not signed in", "Select login method:"],
            ),
            (Attention::TrustRequired, &["Yes, I trust this folder"]),
            (
                Attention::PermissionPrompt,
                &[
                    // 1.1.18: `Requesting permission for:` … `2. Yes, and always allow …`.
                    "Requesting permission for:",
                    "Yes, and always allow",
                    // 1.2.0: `1. Yes, run command` … `4. No, cancel`.
                    "Yes, run command",
                    // The sandbox's menu (docs/docs-cli-sandbox.md).
                    "Yes, and run without sandbox restrictions",
                    "Yes, and run in sandbox",
                    // 1.0.x: `⚠ Approval Required` … `No, deny access`.
                    "Approval Required",
                    "No, deny access",
                    "awaiting user approval",
                ],
            ),
        ],
        busy: &["esc to cancel"],
        ready: &["? for shortcuts"],
        input_prefixes: &[">"],
        login_hint: Some(
            "agy is on its sign-in screen: attach and sign in (once per machine), or set \
             GEMINI_API_KEY with modelProvider \"gemini\" in ~/.gemini/antigravity-cli/settings.json",
        ),
    },
    build_launch: build_antigravity_launch_command,
    runs_argv: false,
    acp: Some(&ANTIGRAVITY_ACP),
    sandbox: &AGY_SANDBOX,
    own_sandbox_flag: Some("--sandbox"),
    approval_modes: &APPROVAL_MODES,
    install_hint: "curl -fsSL https://antigravity.google/cli/install.sh | bash (Google's installer; cuekit never runs it), then run `agy` once to sign in",
    auth_probe: antigravity_auth,
    resume_hint: Some("agy --conversation="),
    auth_env: &["GEMINI_API_KEY"],
};

/// agy's own directory (docs/docs-cli-settings.md).
const AGY_HOME: &str = ".gemini/antigravity-cli";

/// agy keeps its sign-in in the system keyring, or in a token file where there is none
/// (headless Linux, CHANGELOG 1.1.3); an API key needs `modelProvider: "gemini"` (1.1.13).
/// Neither the keyring nor the token's validity is checked (no network): a set-up agy
/// directory is taken as a sign-in there may be, and said so.
fn antigravity_auth() -> AuthProbe {
    let home = std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(AGY_HOME));
    let token = home
        .as_ref()
        .map(|dir| dir.join("antigravity-oauth-token"))
        .filter(|path| path.is_file());
    let provider = home.as_ref().and_then(|dir| {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("settings.json")).ok()?).ok()?;
        json.get("modelProvider")?.as_str().map(String::from)
    });
    let key = super::env_set(&["GEMINI_API_KEY"]);
    if let Some(token) = token {
        return AuthProbe::Configured(format!("a sign-in token in {}", token.display()));
    }
    match (key, provider.as_deref(), home.filter(|dir| dir.is_dir())) {
        (Some(key), Some("gemini"), _) => {
            AuthProbe::Configured(format!("{key} is set, modelProvider \"gemini\""))
        }
        (_, _, Some(dir)) => AuthProbe::Configured(format!(
            "agy is set up ({}); its sign-in is in the system keyring, which cuekit does not read",
            dir.display()
        )),
        (Some(key), _, None) => AuthProbe::Missing(format!(
            "{key} is set, but agy uses it only with \"modelProvider\": \"gemini\" in ~/{AGY_HOME}/settings.json; or run `agy` once and sign in"
        )),
        (None, _, None) => AuthProbe::Missing(
            "run `agy` once and sign in with Google, or set GEMINI_API_KEY with \"modelProvider\": \"gemini\" in its settings"
                .to_string(),
        ),
    }
}

/// agy's longest duration (Go's `time.Duration` tops out at about 2562047 hours).
const NO_PRINT_TIMEOUT: &str = "2562047h";

/// Builds the agy command line for a task.
///
/// Interactive: `agy [--dangerously-skip-permissions | --mode M] [--model 'M']
/// --add-dir="$(pwd -P)" -i='PROMPT'`. Batch: the same with `--output-format stream-json
/// --print-timeout=2562047h --disable-slash-commands [--conversation='ID'] -p='PROMPT'
/// </dev/null`.
///
/// `--add-dir` names the task's directory, physically resolved: peers saw agy's tools work in
/// its scratch directory otherwise. cuekit's timeout is the task's; agy's own print deadline is
/// lifted so it never cuts a run short first (it did at 5 minutes before 1.2.6, and since 1.1.28
/// it then exits 0 with partial output, which would read as success). A print run reads no
/// stdin, so it gets none. `--disable-slash-commands` (1.1.9): a prompt starting with `/` would
/// otherwise run as an agy command (print mode answers `/model`, `/usage` … since 1.1.11).
pub fn build_antigravity_launch_command(
    spec: &TaskSpec,
    mode: Mode,
    bin: &str,
) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    let mut parts = vec![
        "AGY_CLI_DISABLE_AUTO_UPDATE=true".to_string(),
        shell_word_for_bin(bin)?,
    ];
    match super::approval_mode(spec, &APPROVAL_MODES, "antigravity", &mut warnings) {
        Some(approval) => parts.push(format!("--mode {approval}")),
        None if spec.skips_permissions() => parts.push("--dangerously-skip-permissions".into()),
        None => {}
    }
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(
            &ANTIGRAVITY,
            "--model",
            model,
            &mut warnings,
        )?);
    }
    parts.push("--add-dir=\"$(pwd -P)\"".to_string());
    let event_stream = mode == Mode::Batch && spec.stream_events.unwrap_or(true);
    if mode == Mode::Batch {
        if event_stream {
            parts.push("--output-format stream-json".to_string());
        }
        parts.push(format!("--print-timeout={NO_PRINT_TIMEOUT}"));
        // A prompt starting with `/` is the task's words, not one of agy's commands.
        parts.push("--disable-slash-commands".to_string());
    }
    if let Some(conversation) = spec.resume_session.as_deref() {
        parts.push(format!("--conversation={}", single_quote(conversation)?));
    }
    let prompt = single_quote(&super::prompt_of(spec)?)?;
    parts.push(match mode {
        Mode::Batch => format!("-p={prompt} </dev/null"),
        Mode::Interactive => format!("-i={prompt}"),
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
static AGY_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".gemini/antigravity-cli", ".gemini/config"],
    state: &[
        ".gemini/antigravity-cli/conversations",
        ".gemini/antigravity-cli/cache",
    ],
    private: &[],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "AGY_CLI_DISABLE_AUTO_UPDATE=true agy";
    const DIR: &str = "--add-dir=\"$(pwd -P)\"";

    fn spec(objective: &str) -> TaskSpec {
        TaskSpec {
            agent_kind: "antigravity".into(),
            objective: objective.into(),
            ..TaskSpec::default()
        }
    }

    fn build(spec: &TaskSpec, mode: Mode) -> LaunchCommand {
        build_antigravity_launch_command(spec, mode, "agy").unwrap()
    }

    #[test]
    fn interactive_starts_the_tui_with_the_prompt_and_bypass() {
        let launch = build(&spec("fix it"), Mode::Interactive);
        assert_eq!(
            launch.command,
            format!("{ENV} --dangerously-skip-permissions {DIR} -i='fix it'")
        );
        assert!(!launch.event_stream);
    }

    #[test]
    fn batch_prints_a_stream_with_no_deadline_of_its_own_and_no_stdin() {
        let launch = build(&spec("fix it"), Mode::Batch);
        assert_eq!(
            launch.command,
            format!(
                "{ENV} --dangerously-skip-permissions {DIR} --output-format stream-json \
                 --print-timeout=2562047h --disable-slash-commands -p='fix it' </dev/null"
            )
        );
        assert!(launch.event_stream);
        let mut plain = spec("fix it");
        plain.stream_events = Some(false);
        let launch = build(&plain, Mode::Batch);
        assert!(!launch.command.contains("--output-format") && !launch.event_stream);
    }

    #[test]
    fn a_leading_dash_and_quotes_stay_in_the_attached_prompt_word() {
        let batch = build(&spec("-v don't $(x)"), Mode::Batch).command;
        assert!(
            batch.ends_with(r" -p='-v don'\''t $(x)' </dev/null"),
            "{batch}"
        );
        let interactive = build(&spec("-v"), Mode::Interactive).command;
        assert!(interactive.ends_with(" -i='-v'"), "{interactive}");
    }

    #[test]
    fn approval_modes_replace_the_bypass_and_others_warn() {
        for approval in APPROVAL_MODES {
            let mut s = spec("x");
            s.approval_mode = Some(approval.into());
            let command = build(&s, Mode::Interactive).command;
            assert_eq!(command, format!("{ENV} --mode {approval} {DIR} -i='x'"));
        }
        let mut s = spec("x");
        s.approval_mode = Some("yolo".into());
        let launch = build(&s, Mode::Interactive);
        assert!(launch.command.contains("--dangerously-skip-permissions"));
        assert!(
            launch.warnings[0].contains("'yolo'"),
            "{:?}",
            launch.warnings
        );
        s.approval_mode = None;
        s.dangerously_skip_permissions = Some(false);
        assert_eq!(
            build(&s, Mode::Interactive).command,
            format!("{ENV} {DIR} -i='x'")
        );
    }

    #[test]
    fn model_and_conversation_are_quoted_and_a_flag_like_model_refused() {
        let mut s = spec("x");
        s.model = Some("Gemini 3.5 Flash".into());
        s.resume_session = Some("0d4c-'x".into());
        assert_eq!(
            build(&s, Mode::Batch).command,
            format!(
                "{ENV} --dangerously-skip-permissions --model 'Gemini 3.5 Flash' {DIR} \
                 --output-format stream-json --print-timeout=2562047h \
                 --disable-slash-commands --conversation='0d4c-'\\''x' -p='x' </dev/null"
            )
        );
        s.model = Some("--sandbox".into());
        assert!(build_antigravity_launch_command(&s, Mode::Batch, "agy").is_err());
    }

    #[test]
    fn recognises_the_screens_peers_captured() {
        use crate::domain::adapter::screen_fixture as screen;
        use crate::domain::attention::{detect, is_busy};
        let rules = &ANTIGRAVITY.screen;
        for (fixture, expected) in [
            ("agy-login.txt", Some(Attention::AuthRequired)),
            ("agy-trust.txt", Some(Attention::TrustRequired)),
            ("agy-permission.txt", Some(Attention::PermissionPrompt)),
            ("agy-run-command.txt", Some(Attention::PermissionPrompt)),
            ("agy-idle.txt", Some(Attention::IdleAtPrompt)),
            ("agy-busy.txt", None),
        ] {
            assert_eq!(
                detect(rules, &screen(fixture), false),
                expected,
                "{fixture}"
            );
        }
        assert!(is_busy(rules, &screen("agy-busy.txt")));
        // A model that asks in its answer is not a dialog.
        let asking = screen("agy-idle.txt").replace(
            "Two files: a.txt and b.txt.",
            "Two files. Do you want to proceed? Run this command?",
        );
        assert_eq!(detect(rules, &asking, false), Some(Attention::IdleAtPrompt));
    }
}

//! jcode. jcode is not published on any package registry cuekit can reach, so this adapter
//! follows jcode v0.11.x's documented command line rather than a `--help` read here:
//! `jcode repl --no-update [--provider-profile P] [--model M]` (interactive; no prompt
//! argument, it reads its turns from stdin) and
//! `jcode run --no-update [--provider-profile P] [--model M] -- 'P'` (batch). It has no
//! permission-bypass flag. tests/fixtures/fake-jcode behaves as documented.

use std::time::Duration;

use super::{Adapter, AuthProbe, Capabilities, LaunchCommand, shell_word_for_bin};
use crate::domain::attention::ScreenRules;
use crate::domain::error::{Error, Result};
use crate::domain::launch::{PROMPT_VARIABLE, single_quote};
use crate::domain::spec::{Mode, TaskSpec};

pub(super) static JCODE: Adapter = Adapter {
    capabilities: Capabilities::pane_agent("jcode"),
    default_bin: "jcode",
    available_models: &[],
    faults: &super::faults::API_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    // Steering goes through the pane's terminal in line mode: Enter ends the line whenever it
    // comes, so the pauses only let the echo reach the screen.
    steer_enter_delay: Duration::from_millis(50),
    paste_enter_delay: Duration::from_millis(100),
    steer_pre_keys: &[],
    // No screens of the real REPL have been captured: no dialog or idle detection.
    screen: ScreenRules {
        dialogs: &[],
        busy: &[],
        ready: &[],
        input_prefixes: &[],
        login_hint: None,
    },
    build_launch: build_jcode_launch_command,
    runs_argv: false,
    // Printed by `cuekit adapters`, so it also carries the permission caveat.
    acp: None,
    sandbox: &JCODE_SANDBOX,
    own_sandbox_flag: None,
    approval_modes: &[],
    install_hint: "jcode v0.11.x is on no package registry: install it from its project and put it on PATH. \
                   jcode has no permission-bypass flag, so dangerously_skip_permissions has no effect",
    auth_probe: jcode_auth,
    resume_hint: None,
    auth_env: &[],
};

/// Where jcode records running REPLs, one file per session holding the REPL's PID.
const ACTIVE_PIDS: &str = "$HOME/.jcode/active_pids";

/// Builds the jcode command line for a task.
///
/// Batch: `jcode run --no-update [--provider-profile 'P'] [--model 'M'] -- 'PROMPT'` (the `--`
/// keeps a prompt starting with `-` a prompt).
///
/// Interactive: the REPL takes no prompt argument, so it reads a FIFO fed by a relay: first the
/// task's prompt file (as one line: the REPL takes a turn per line), then `cat` of the pane's
/// terminal, so steering typed into the pane reaches it line by line. The REPL runs in the
/// background to learn its PID; once it exits the relay is ended and only the
/// `~/.jcode/active_pids/*` markers holding that PID are removed (jcode leaves them behind and
/// would later restore them as crashed sessions). A cancel (SIGTERM) or a killed session
/// (SIGHUP) is passed on to the REPL and the cleanup still runs once it is gone. The terminal's
/// signal keys are off meanwhile: a Ctrl-C would otherwise kill the shared launch script before
/// it writes the exit code.
pub fn build_jcode_launch_command(spec: &TaskSpec, mode: Mode, bin: &str) -> Result<LaunchCommand> {
    let mut warnings = Vec::new();
    super::approval_mode(spec, &[], "jcode", &mut warnings);
    if let Some(bypass) = spec.dangerously_skip_permissions {
        warnings.push(format!(
            "jcode has no permission-bypass flag; dangerously_skip_permissions={bypass} has no effect"
        ));
    }
    let mut parts = vec![
        shell_word_for_bin(bin)?,
        match mode {
            Mode::Interactive => "repl",
            Mode::Batch => "run",
            Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
        }
        .to_string(),
        "--no-update".to_string(),
    ];
    if let Some(profile) = spec.provider_profile.as_deref() {
        if profile.is_empty() || profile.starts_with('-') {
            return Err(
                Error::invalid_input(format!("invalid provider profile '{profile}'")).with_hint(
                    "name one of jcode's provider profiles, e.g. --provider-profile work",
                ),
            );
        }
        parts.push(format!("--provider-profile {}", single_quote(profile)?));
    }
    if let Some(model) = spec.model.as_deref() {
        parts.push(super::model_arg(&JCODE, "--model", model, &mut warnings)?);
    }
    // Quoted even when it goes through the prompt file: a NUL is refused either way.
    let quoted = single_quote(&super::prompt_of(spec)?)?;
    let command = match mode {
        Mode::Batch => {
            parts.push("--".to_string());
            parts.push(quoted);
            parts.join(" ")
        }
        Mode::Interactive => interactive_script(&parts.join(" ")),
        Mode::Acp => unreachable!("{}", super::ACP_IS_BUILT_APART),
    };
    Ok(LaunchCommand {
        command,
        warnings,
        event_stream: false,
        agent_at: None,
    })
}

/// The REPL between its stdin relay and the marker cleanup (see the builder). `repl` is already
/// quoted. Runs inside launch.sh's subshell, so its descriptors and variables stay there. The
/// trap is set before anything starts: a cancel that lands while the REPL is being started
/// must still end it and leave the cleanup to run.
fn interactive_script(repl: &str) -> String {
    let prompt = PROMPT_VARIABLE;
    format!(
        "exec 3<&0\n\
         cuekit_repl= cuekit_stop=\n\
         trap 'cuekit_stop=1; [ -n \"$cuekit_repl\" ] && kill \"$cuekit_repl\" 2>/dev/null' HUP TERM\n\
         cuekit_in=\"${{{prompt}%/*}}/jcode-stdin\"\n\
         rm -f \"$cuekit_in\" && mkfifo -m 600 \"$cuekit_in\" || exit 1\n\
         stty -isig <&3 2>/dev/null\n\
         {{ tr '\\r\\n' '  ' < \"${prompt}\"; printf '\\n'; exec cat; }} <&3 > \"$cuekit_in\" &\n\
         cuekit_feed=$!\n\
         {repl} < \"$cuekit_in\" 3<&- &\n\
         cuekit_repl=$!\n\
         [ -z \"$cuekit_stop\" ] || kill \"$cuekit_repl\" 2>/dev/null\n\
         wait \"$cuekit_repl\"\n\
         cuekit_status=$?\n\
         while kill -0 \"$cuekit_repl\" 2>/dev/null; do wait \"$cuekit_repl\"; cuekit_status=$?; done\n\
         kill \"$cuekit_feed\" 2>/dev/null\n\
         rm -f \"$cuekit_in\"\n\
         stty isig <&3 2>/dev/null\n\
         for cuekit_marker in \"{ACTIVE_PIDS}\"/*; do\n\
         \x20 cuekit_pid=\n\
         \x20 [ -f \"$cuekit_marker\" ] && read -r cuekit_pid < \"$cuekit_marker\"\n\
         \x20 if [ \"$cuekit_pid\" = \"$cuekit_repl\" ] && ! kill -0 \"$cuekit_repl\" 2>/dev/null; then rm -f \"$cuekit_marker\"; fi\n\
         done\n\
         exit \"$cuekit_status\""
    )
}

/// jcode keeps its state in `~/.jcode`; its credentials live in provider profiles cuekit does
/// not read, so this says only whether jcode has been set up.
fn jcode_auth() -> AuthProbe {
    let dir = std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".jcode"));
    match dir.filter(|dir| dir.is_dir()) {
        Some(dir) => AuthProbe::Configured(format!(
            "{} exists (provider credentials are not checked)",
            dir.display()
        )),
        None => {
            AuthProbe::Missing("run `jcode repl` once to set up a provider profile".to_string())
        }
    }
}

/// Inside a sandbox: its settings read-only; its sessions and history kept.
static JCODE_SANDBOX: crate::domain::sandbox::Needs = crate::domain::sandbox::Needs {
    config_dirs: &[".jcode"],
    state: &[],
    private: &[],
    shared: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(objective: &str) -> TaskSpec {
        TaskSpec {
            agent_kind: "jcode".into(),
            objective: objective.into(),
            ..TaskSpec::default()
        }
    }

    fn build(spec: &TaskSpec, mode: Mode) -> LaunchCommand {
        build_jcode_launch_command(spec, mode, "jcode").unwrap()
    }

    /// The line of the interactive script that starts the REPL.
    fn repl_line(command: &str) -> &str {
        command
            .lines()
            .find(|line| line.contains(" repl "))
            .unwrap_or_else(|| panic!("no repl line in {command}"))
    }

    #[test]
    fn capabilities() {
        let caps = &JCODE.capabilities;
        assert_eq!(caps.agent_kind, "jcode");
        assert!(caps.supports_steering && caps.supports_attach && caps.supports_model_selection);
        assert_eq!(caps.default_mode, Mode::Interactive);
        assert_eq!(caps.supported_modes, &[Mode::Interactive, Mode::Batch]);
        assert!(JCODE.install_hint.contains("no permission-bypass flag"));
    }

    #[test]
    fn batch_shapes() {
        assert_eq!(
            build(&spec("fix it"), Mode::Batch).command,
            "jcode run --no-update -- 'fix it'"
        );
        let mut s = spec("fix it");
        s.model = Some("claude-sonnet-4".into());
        s.provider_profile = Some("work".into());
        let launch = build(&s, Mode::Batch);
        assert_eq!(
            launch.command,
            "jcode run --no-update --provider-profile 'work' --model 'claude-sonnet-4' -- 'fix it'"
        );
        assert!(launch.warnings.is_empty());
        assert!(!launch.event_stream);
    }

    #[test]
    fn batch_prompt_with_leading_dash_and_quotes_stays_one_word() {
        let launch = build(&spec("-v don't \"stop\" $HOME `x`"), Mode::Batch);
        assert_eq!(
            launch.command,
            r#"jcode run --no-update -- '-v don'\''t "stop" $HOME `x`'"#
        );
        let words = shlex::split(&launch.command).unwrap();
        assert_eq!(words.last().unwrap(), "-v don't \"stop\" $HOME `x`");
    }

    #[test]
    fn interactive_feeds_the_prompt_file_and_never_puts_the_prompt_on_the_command_line() {
        let mut s = spec("-secret don't");
        s.model = Some("m1".into());
        s.provider_profile = Some("my profile".into());
        let launch = build(&s, Mode::Interactive);
        assert!(!launch.command.contains("secret"), "{}", launch.command);
        assert_eq!(
            repl_line(&launch.command),
            "jcode repl --no-update --provider-profile 'my profile' --model 'm1' < \"$cuekit_in\" 3<&- &"
        );
        assert!(launch.command.contains("< \"$cuekit_prompt\""));
        assert!(launch.command.ends_with("exit \"$cuekit_status\""));
    }

    #[test]
    fn interactive_script_is_valid_sh() {
        let launch = build(&spec("x"), Mode::Interactive);
        let status = std::process::Command::new("sh")
            .args(["-n", "-c", &launch.command])
            .status()
            .unwrap();
        assert!(status.success(), "{}", launch.command);
    }

    #[test]
    fn marker_cleanup_removes_only_the_repls_own_dead_pid() {
        let command = build(&spec("x"), Mode::Interactive).command;
        assert!(command.contains("for cuekit_marker in \"$HOME/.jcode/active_pids\"/*; do"));
        assert!(command.contains(
            "if [ \"$cuekit_pid\" = \"$cuekit_repl\" ] && ! kill -0 \"$cuekit_repl\" 2>/dev/null; then rm -f \"$cuekit_marker\"; fi"
        ));
        // The cleanup runs after the REPL is waited for.
        assert!(command.find("wait \"$cuekit_repl\"") < command.find("for cuekit_marker"));
    }

    #[test]
    fn permission_options_have_no_effect_but_say_so() {
        let plain = build(&spec("x"), Mode::Batch);
        assert!(plain.warnings.is_empty());
        for bypass in [true, false] {
            let mut s = spec("x");
            s.dangerously_skip_permissions = Some(bypass);
            let launch = build(&s, Mode::Batch);
            assert_eq!(launch.command, plain.command);
            assert_eq!(launch.warnings.len(), 1);
            assert!(launch.warnings[0].contains("has no effect"));
        }
        let mut s = spec("x");
        s.approval_mode = Some("plan".into());
        assert!(build(&s, Mode::Batch).warnings[0].contains("no approval modes"));
    }

    #[test]
    fn bad_values_are_invalid_input() {
        for profile in ["", "-x"] {
            let mut s = spec("x");
            s.provider_profile = Some(profile.into());
            let err = build_jcode_launch_command(&s, Mode::Batch, "jcode").unwrap_err();
            assert_eq!(err.code, crate::domain::error::ErrorCode::InvalidInput);
        }
        let mut s = spec("x");
        s.model = Some("-m".into());
        assert!(build_jcode_launch_command(&s, Mode::Interactive, "jcode").is_err());
        for objective in ["  ", "a\0b"] {
            for mode in [Mode::Batch, Mode::Interactive] {
                let err = build_jcode_launch_command(&spec(objective), mode, "jcode").unwrap_err();
                assert_eq!(err.code, crate::domain::error::ErrorCode::InvalidInput);
            }
        }
    }

    #[test]
    fn custom_bin_is_quoted_when_needed() {
        assert_eq!(
            build_jcode_launch_command(&spec("x"), Mode::Batch, "/opt/my tools/jcode")
                .unwrap()
                .command,
            "'/opt/my tools/jcode' run --no-update -- 'x'"
        );
    }
}

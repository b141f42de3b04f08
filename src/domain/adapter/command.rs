//! Any program the user names: `cuekit submit --agent command -- ./script.sh arg`. No prompt is
//! rendered; the words are the program and its arguments. The way to use cuekit's runtime
//! (transcript, sentinel, steering, wait) with no AI agent at all.

use std::time::Duration;

use super::{Adapter, AuthProbe, Capabilities, LaunchCommand};
use crate::domain::attention::ScreenRules;
use crate::domain::error::{Error, Result};
use crate::domain::launch::single_quote;
use crate::domain::spec::{Mode, TaskSpec};

pub(super) static COMMAND: Adapter = Adapter {
    capabilities: Capabilities {
        supports_model_selection: false,
        ..Capabilities::pane_agent("command")
    },
    // The program is the first word of each task, not a fixed binary.
    default_bin: "",
    available_models: &[],
    faults: &super::faults::NO_FAULTS,
    exit_reasons: &[],
    interactive_unset_env: &[],
    steer_enter_delay: Duration::from_millis(50),
    paste_enter_delay: Duration::from_millis(100),
    steer_pre_keys: &[],
    screen: ScreenRules {
        dialogs: &[],
        busy: &[],
        ready: &[],
        input_prefixes: &[],
        login_hint: None,
    },
    build_launch: build_command_launch,
    runs_argv: true,
    acp: None,
    sandbox: &crate::domain::sandbox::NO_NEEDS,
    own_sandbox_flag: None,
    approval_modes: &[],
    install_hint: "no installation: the task names its own program",
    auth_probe: || AuthProbe::Configured("no credentials needed".to_string()),
    resume_hint: None,
    auth_env: &[],
};

/// Every word single-quoted; batch runs read nothing from the terminal.
pub fn build_command_launch(spec: &TaskSpec, mode: Mode, _bin: &str) -> Result<LaunchCommand> {
    if spec.argv.first().is_none_or(|program| program.is_empty()) {
        return Err(
            Error::invalid_input("the command agent needs a program to run")
                .with_hint("e.g. `cuekit submit --agent command -- ./script.sh arg`"),
        );
    }
    let mut warnings = Vec::new();
    if spec.model.is_some() {
        warnings.push("the command agent has no model; --model is ignored".to_string());
    }
    super::approval_mode(spec, &[], "command", &mut warnings);
    let mut words = spec
        .argv
        .iter()
        .map(|word| single_quote(word))
        .collect::<Result<Vec<_>>>()?;
    if mode == Mode::Batch {
        words.push("</dev/null".to_string());
    }
    Ok(LaunchCommand::from_words(words, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_is_quoted_word_by_word() {
        let spec = TaskSpec {
            agent_kind: "command".into(),
            argv: vec!["./run tests.sh".into(), "-v".into(), "it's".into()],
            ..TaskSpec::default()
        };
        assert_eq!(
            build_command_launch(&spec, Mode::Interactive, "")
                .unwrap()
                .command,
            r"'./run tests.sh' '-v' 'it'\''s'"
        );
        assert_eq!(
            build_command_launch(&spec, Mode::Batch, "")
                .unwrap()
                .command,
            r"'./run tests.sh' '-v' 'it'\''s' </dev/null"
        );
        let empty = TaskSpec {
            agent_kind: "command".into(),
            ..TaskSpec::default()
        };
        assert!(build_command_launch(&empty, Mode::Batch, "").is_err());
    }
}

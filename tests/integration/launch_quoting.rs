//! The launch command, run by the real /bin/sh, hands the agent exactly the argv intended,
//! whatever the prompt holds.

use std::process::Command;

use cuekit::domain::adapter::build_gemini_launch_command;
use cuekit::domain::spec::{Mode, TaskSpec};
use proptest::prelude::*;

/// Runs `command` with `gemini` defined as a function that prints its argv NUL-separated, then
/// its stdin (the launch script names the prompt file in `$cuekit_prompt`).
fn argv_seen_by_sh(command: &str, prompt_file: &std::path::Path) -> Vec<String> {
    let script = format!(
        "gemini() {{ for arg in \"$@\"; do printf '%s\\0' \"$arg\"; done; [ -t 0 ] || cat; }}\n\
         cuekit_prompt={}\n{command}\n",
        shlex::try_quote(&prompt_file.to_string_lossy()).unwrap()
    );
    let output = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut argv: Vec<String> = output
        .stdout
        .split(|b| *b == 0)
        .map(|arg| String::from_utf8(arg.to_vec()).unwrap())
        .collect();
    // After the last NUL: what the agent read on stdin, as one more "word".
    if argv.last().is_some_and(String::is_empty) {
        argv.pop();
    }
    argv
}

/// The prompt file as submit writes it.
fn prompt_file(prompt: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), prompt).unwrap();
    file
}

fn spec(objective: &str, model: Option<&str>) -> TaskSpec {
    TaskSpec {
        agent_kind: "gemini".into(),
        objective: objective.into(),
        model: model.map(String::from),
        ..TaskSpec::default()
    }
}

/// The argv the Gemini CLI must receive for a prompt, per mode, and (batch) the prompt on stdin.
fn expected(prompt: &str, mode: Mode, model: Option<&str>) -> Vec<String> {
    let mut argv = vec!["--skip-trust".to_string(), "-y".to_string()];
    if let Some(model) = model {
        argv.extend(["-m".to_string(), model.to_string()]);
    }
    if mode == Mode::Batch {
        argv.extend(["-o".to_string(), "stream-json".to_string()]);
    }
    match (mode, prompt.starts_with('-')) {
        (Mode::Batch, _) => argv.extend([
            "-p".to_string(),
            cuekit::domain::adapter::GEMINI_STDIN_PROMPT_NOTE.to_string(),
            prompt.to_string(),
        ]),
        (Mode::Interactive, false) => argv.push(prompt.to_string()),
        (Mode::Interactive, true) => argv.push(format!("--prompt-interactive={prompt}")),
        (Mode::Acp, _) => unreachable!("an ACP prompt goes over the protocol, not argv"),
    }
    argv
}

#[test]
fn tricky_prompts_arrive_intact() {
    for prompt in [
        "it's",
        "-hello world",
        "--prompt=x",
        "$(touch /tmp/cuekit-pwned) `id` $HOME ${X:-y}",
        "line one\nline two\n\ttabbed",
        "quotes ' \" \\ and ; && || | > < &",
        "unicode ✓ ünï 日本語 🚀",
        "*.rs ?x [ab]",
        "-",
    ] {
        for mode in [Mode::Interactive, Mode::Batch] {
            let launch = build_gemini_launch_command(
                &spec(prompt, Some("gemini-2.5-flash")),
                mode,
                "gemini",
            )
            .unwrap();
            let file = prompt_file(&cuekit::domain::spec::render_prompt(&spec(prompt, None)));
            assert_eq!(
                argv_seen_by_sh(&launch.command, file.path()),
                expected(
                    &cuekit::domain::spec::render_prompt(&spec(prompt, None)),
                    mode,
                    Some("gemini-2.5-flash")
                ),
                "{prompt:?} in {mode:?}"
            );
        }
    }
    assert!(!std::path::Path::new("/tmp/cuekit-pwned").exists());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_prompts_survive_sh_as_exact_argv(
        prompt in "[-]?[ -~\\n\\t'\"`$\\\\éß✓🚀]{1,40}",
        batch in any::<bool>(),
    ) {
        // Trailing whitespace is trimmed by prompt rendering; compare with what is rendered.
        let rendered = cuekit::domain::spec::render_prompt(&spec(&prompt, None));
        prop_assume!(!rendered.trim().is_empty());
        let mode = if batch { Mode::Batch } else { Mode::Interactive };
        let launch = build_gemini_launch_command(&spec(&prompt, None), mode, "gemini").unwrap();
        let file = prompt_file(&rendered);
        let want = expected(&rendered, mode, None);
        prop_assert_eq!(argv_seen_by_sh(&launch.command, file.path()), want.clone());
        // An independent POSIX-words parser agrees with the shell (batch: but for the
        // redirection, `<` and its file, where the shell reads the prompt instead).
        let words = shlex::split(&launch.command).expect("well-formed quoting");
        let argv_words = if batch { &words[1..words.len() - 2] } else { &words[1..] };
        prop_assert_eq!(argv_words, &want[..want.len() - usize::from(batch)]);
    }
}

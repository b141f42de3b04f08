//! POSIX shell quoting and the `launch.sh` every task runs: the agent command in a subshell,
//! then the exit-code sentinel. Pure text builders, shared by all adapters.

use std::path::Path;

use crate::domain::error::{Error, Result};

/// File name of the sentinel inside a task directory.
pub const EXIT_CODE_FILE: &str = "exit-code";
/// The transcript file's name; the pane's output is piped into it.
pub const TRANSCRIPT_FILE: &str = "transcript.txt";
/// Printed by `launch.sh` after the agent exits: an OSC sequence terminals ignore, as seen in
/// the raw transcript. The sentinel is written only once the marker is in the transcript, so a
/// parent that sees the exit code can read every byte the agent printed.
const END_MARKER_TEXT: &str = "cuekit:end";
const END_MARKER: &str = "\\033]9999;cuekit:end\\007";

/// The rendered prompt, for agents that read it from stdin; `launch.sh` names it in
/// [`PROMPT_VARIABLE`] so a launch command can say `< "$cuekit_prompt"`.
pub const PROMPT_FILE: &str = "prompt.txt";
pub const PROMPT_VARIABLE: &str = "cuekit_prompt";

/// The submitter's environment, read and deleted by `launch.sh` as its first act. It lies in
/// cuekit's data dir (`tasks/<id>.env.sh`), which every sandbox hides, never in a task folder.
pub const ENV_FILE: &str = "env.sh";

/// Variables that describe the submitting shell or terminal rather than the task's world.
const NOT_INHERITED: &[&str] = &[
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "IFS",
    "PS1",
    "PS2",
    "PS4",
    "ENV",
    "TMUX",
    "TMUX_PANE",
    // The tmux server by name or path: a child finds no way to its own pane in its
    // environment (a nested submit runs on its task's server, found in the registry).
    "CUEKIT_TMUX_SOCKET",
    // The pane's terminal is tmux's, whatever terminal the submitter sits at.
    "TERM",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "COLORTERM",
    "COLUMNS",
    "LINES",
];

/// Quotes `word` as one single-quoted POSIX shell word (`'it'\''s'`).
///
/// Always quotes, even plain words, so the launch command reads the same for every value
/// (the adapter contract spells `-m 'gemini-2.5-flash'`). A NUL byte cannot be passed in an
/// argv at all, so it is refused rather than silently truncated.
pub fn single_quote(word: &str) -> Result<String> {
    if word.contains('\0') {
        return Err(Error::invalid_input(
            "text contains a NUL byte, which cannot be passed to a program",
        )
        .with_hint("remove the NUL character from the prompt or value"));
    }
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('\'');
    for ch in word.chars() {
        if ch == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(ch);
        }
    }
    quoted.push('\'');
    Ok(quoted)
}

/// Quotes a path for the launch script. Paths come from the filesystem, so a NUL is impossible.
fn quote_path(path: &Path) -> Result<String> {
    single_quote(&path.to_string_lossy())
}

/// Renders the env file: the submitter's environment as `export NAME='value'` lines.
///
/// A tmux server keeps the environment it started with, so without this a child would see
/// whatever the first `cuekit` call had (a `GEMINI_API_KEY` exported later would be missing).
/// Passing variables with `new-session -e` would put secrets on tmux's argv, visible in `ps`;
/// an owner-only file that the pane deletes on start keeps them off it.
pub fn render_env_file(vars: impl IntoIterator<Item = (String, String)>) -> String {
    let mut file = String::new();
    for (name, value) in vars {
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name || NOT_INHERITED.contains(&name.as_str()) {
            continue;
        }
        if let Ok(quoted) = single_quote(&value) {
            file.push_str(&format!("export {name}={quoted}\n"));
        }
    }
    file
}

/// `launch.sh`'s exit status when its submit was undone before the task was recorded.
pub const GATE_CLOSED: i32 = 125;

/// Where the agent's exit status is kept when its stdout goes through the event filter (a
/// pipeline's status would be the filter's).
pub const AGENT_EXIT_FILE: &str = "agent-exit";

/// The files `launch.sh` watches before it starts the agent: the task's registry entry (the
/// submit recorded the task) and its pending entry (the submit is still under way).
#[derive(Debug, Clone, Copy)]
pub struct StartGate<'a> {
    pub registered: &'a Path,
    pub pending: &'a Path,
}

/// Variables of the tmux server's own environment that a pane keeps: its terminal. `TMUX` and
/// `TMUX_PANE` (the server's socket and the pane) go with the rest, for every task: a child
/// that had them could type into its own pane, respawn it or kill its session through tmux.
const PANE_VARIABLES: &str = "TERM";

/// Left in the task directory by `launch.sh` when `worktree.setup` failed (the agent then never
/// started): the sentinel alone cannot tell a setup's exit status from the agent's.
pub const SETUP_FAILED_FILE: &str = "setup-failed";

/// Renders `launch.sh` for a task.
///
/// The pane starts in the tmux server's environment, which is whatever the first cuekit call
/// had: the script clears it (but for the pane's `TERM`; `TMUX` and `TMUX_PANE` go too) and takes the
/// submitter's from the env file, so a task sees exactly its own submitter's environment.
/// Then it waits for the submit to record the task: an agent never runs without a record, and
/// a submit cut short starts nothing. The submit records the task, then drops its pending
/// entry: a gate that finds the pending entry gone looks for the record once more before it
/// closes (between its two looks the submit may have done both). The agent runs in a subshell so that an `exit N` inside
/// the command cannot skip the sentinel; the sentinel is written to a temp file and renamed so
/// a reader never sees a half-written code. The [`Runner`] says how the command runs (piped
/// through the event filter, or as the ACP client). With `setup`
/// (`worktree.setup`), that command runs first under `/bin/sh -c`, its output in the pane; if it
/// fails the agent is skipped, its status becomes the task's and [`SETUP_FAILED_FILE`] is
/// written. `env_file` is where the submitter's environment waits (see [`ENV_FILE`]).
#[allow(clippy::too_many_arguments)]
pub fn render_launch_script(
    task_id: &str,
    agent_command: &str,
    unset_env: &[&str],
    task_dir: &Path,
    env_file: &Path,
    runner: Runner,
    gate: StartGate,
    setup: Option<&str>,
) -> Result<String> {
    let sentinel = quote_path(&task_dir.join(EXIT_CODE_FILE))?;
    let sentinel_tmp = quote_path(&task_dir.join(format!("{EXIT_CODE_FILE}.tmp")))?;
    let env_file = quote_path(env_file)?;
    let prompt_file = quote_path(&task_dir.join(PROMPT_FILE))?;
    let (registered, pending) = (quote_path(gate.registered)?, quote_path(gate.pending)?);
    let mut script = format!(
        "#!/bin/sh\n# cuekit task {task_id}: generated at submit, kept as a record.\n\
         for cuekit_v in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do \
         case $cuekit_v in {PANE_VARIABLES}) ;; *) unset \"$cuekit_v\" 2>/dev/null ;; esac; done\n\
         if [ -f {env_file} ]; then . {env_file}; rm -f {env_file}; fi\n\
         while [ ! -e {registered} ]; do [ -e {pending} ] || [ -e {registered} ] || exit {GATE_CLOSED}; sleep 0.01; done\n\
         {PROMPT_VARIABLE}={prompt_file}\n"
    );
    if !unset_env.is_empty() {
        script.push_str(&format!("unset {}\n", unset_env.join(" ")));
    }
    let transcript = quote_path(&task_dir.join(TRANSCRIPT_FILE))?;
    if let Some(setup) = setup {
        script.push_str(&format!("if /bin/sh -c {}; then\n", single_quote(setup)?));
    }
    match runner {
        Runner::Plain => script.push_str(&format!("(\n{agent_command}\n)\ncuekit_code=$?\n")),
        // In the background, so its pid (which becomes its process group) is known here; its
        // stdin is the pane's terminal again (an asynchronous list's would be /dev/null). The
        // group is ended once the client exited, however it did: the agent never outlives it.
        Runner::Client => script.push_str(&format!(
            "exec 3<&0
             (exec {agent_command}) <&3 3<&- &
             cuekit_client=$!
             wait \"$cuekit_client\"
             cuekit_code=$?
             exec 3<&-
             kill -KILL -- \"-$cuekit_client\" 2>/dev/null
"
        )),
        Runner::Filtered(cuekit) => {
            let agent_exit = quote_path(&task_dir.join(AGENT_EXIT_FILE))?;
            let (cuekit, dir) = (quote_path(cuekit)?, quote_path(task_dir)?);
            // The agent's status comes back through a descriptor: on a full disk the file (for
            // `result.json`) cannot be written, and a lost status must not read as failure. The
            // file is never read back here: the child can write it, and what `launch.sh` exits
            // with is the status tmux keeps for the task.
            script.push_str(&format!(
                "exec 3>&1\n\
                 cuekit_code=$(exec 4>&1; {{ (\n{agent_command}\n) 3>&- 4>&-; cuekit_status=$?; \
                 printf '%s\\n' \"$cuekit_status\" > {agent_exit}; printf '%s\\n' \"$cuekit_status\" >&4; }} \
                 | {cuekit} __events {dir} >&3 4>&-)\n\
                 exec 3>&-\n\
                 [ -n \"$cuekit_code\" ] || cuekit_code=1\n"
            ));
        }
    }
    if setup.is_some() {
        let marker = quote_path(&task_dir.join(SETUP_FAILED_FILE))?;
        script.push_str(&format!(
            "else\ncuekit_code=$?\n: > {marker}\n\
             printf '\\ncuekit: worktree.setup failed with status %s; the agent was not started\\n' \"$cuekit_code\"\n\
             fi\n"
        ));
    }
    script.push_str(&format!(
        "printf '{END_MARKER}'\n\
         cuekit_wait=0\n\
         while [ $cuekit_wait -lt 300 ] && [ -f {transcript} ] && ! tail -c 64 {transcript} | grep -q '{END_MARKER_TEXT}'; do sleep 0.01; cuekit_wait=$((cuekit_wait + 1)); done\n\
         printf 'cuekit_exit=%s\\n' \"$cuekit_code\" > {sentinel_tmp} && mv -f {sentinel_tmp} {sentinel}\n\
         exit \"$cuekit_code\"\n"
    ));
    Ok(script)
}

/// How `launch.sh` runs the task's command.
#[derive(Debug, Clone, Copy)]
pub enum Runner<'a> {
    /// As it is, in a subshell.
    Plain,
    /// Its stdout piped through the event filter, `cuekit __events` (this cuekit binary).
    Filtered(&'a Path),
    /// The command is cuekit's ACP client: it leads a process group of its own, which the
    /// script ends once the client has exited.
    Client,
}

/// Reads a sentinel file's content (`cuekit_exit=<code>`).
pub fn parse_sentinel(content: &str) -> Option<i32> {
    content.trim().strip_prefix("cuekit_exit=")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_plain_words_and_single_quotes() {
        assert_eq!(
            single_quote("gemini-2.5-flash").unwrap(),
            "'gemini-2.5-flash'"
        );
        assert_eq!(single_quote("it's").unwrap(), r"'it'\''s'");
        assert_eq!(single_quote("").unwrap(), "''");
    }

    #[test]
    fn refuses_nul() {
        let err = single_quote("a\0b").unwrap_err();
        assert_eq!(err.code, crate::domain::error::ErrorCode::InvalidInput);
    }

    fn gate() -> StartGate<'static> {
        StartGate {
            registered: Path::new("/d/tasks/t_0"),
            pending: Path::new("/d/pending/t_0"),
        }
    }

    #[test]
    fn script_runs_agent_in_subshell_then_writes_sentinel_atomically() {
        let script = render_launch_script(
            "t_0",
            "gemini 'x'",
            &["CI"],
            Path::new("/tmp/a b"),
            Path::new("/d/tasks/t_0.env.sh"),
            Runner::Plain,
            gate(),
            None,
        )
        .unwrap();
        assert_eq!(
            script,
            "#!/bin/sh\n# cuekit task t_0: generated at submit, kept as a record.\n\
             for cuekit_v in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do \
             case $cuekit_v in TERM) ;; *) unset \"$cuekit_v\" 2>/dev/null ;; esac; done\n\
             if [ -f '/d/tasks/t_0.env.sh' ]; then . '/d/tasks/t_0.env.sh'; rm -f '/d/tasks/t_0.env.sh'; fi\n\
             while [ ! -e '/d/tasks/t_0' ]; do [ -e '/d/pending/t_0' ] || [ -e '/d/tasks/t_0' ] || exit 125; sleep 0.01; done\n\
             cuekit_prompt='/tmp/a b/prompt.txt'\n\
             unset CI\n(\ngemini 'x'\n)\ncuekit_code=$?\n\
             printf '\\033]9999;cuekit:end\\007'\n\
             cuekit_wait=0\n\
             while [ $cuekit_wait -lt 300 ] && [ -f '/tmp/a b/transcript.txt' ] && ! tail -c 64 '/tmp/a b/transcript.txt' | grep -q 'cuekit:end'; do sleep 0.01; cuekit_wait=$((cuekit_wait + 1)); done\n\
             printf 'cuekit_exit=%s\\n' \"$cuekit_code\" > '/tmp/a b/exit-code.tmp' && mv -f '/tmp/a b/exit-code.tmp' '/tmp/a b/exit-code'\n\
             exit \"$cuekit_code\"\n"
        );
    }

    #[test]
    fn an_event_stream_is_piped_through_the_filter_and_keeps_the_agents_status() {
        // Run for real: the filter is a stand-in that copies its input; the status file cannot
        // be written (a folder stands in its place, as on a full disk).
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("task");
        std::fs::create_dir_all(task.join(AGENT_EXIT_FILE)).unwrap();
        std::fs::write(task.join(TRANSCRIPT_FILE), END_MARKER_TEXT).unwrap();
        let registered = dir.path().join("registered");
        std::fs::write(&registered, "").unwrap();
        // The pane's environment comes from the env file (the script clears the server's).
        let path = std::env::var("PATH").unwrap_or_default();
        std::fs::write(
            task.join(ENV_FILE),
            render_env_file([("PATH".into(), path)]),
        )
        .unwrap();
        let filter = dir.path().join("filter");
        std::fs::write(&filter, "#!/bin/sh\nexec cat\n").unwrap();
        std::fs::set_permissions(&filter, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let script = render_launch_script(
            "t_0",
            "echo from-the-agent; exit 7",
            &[],
            &task,
            &task.join(ENV_FILE),
            Runner::Filtered(&filter),
            StartGate {
                registered: &registered,
                pending: &registered,
            },
            None,
        )
        .unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7), "{script}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("from-the-agent"));
        assert_eq!(
            std::fs::read_to_string(task.join(EXIT_CODE_FILE)).unwrap(),
            "cuekit_exit=7\n"
        );
    }

    #[test]
    fn a_setup_command_runs_first_and_its_failure_skips_the_agent() {
        let script = render_launch_script(
            "t_0",
            "agent",
            &[],
            Path::new("/d"),
            Path::new("/d/env.sh"),
            Runner::Plain,
            gate(),
            Some("npm ci && echo 'ok'"),
        )
        .unwrap();
        assert!(
            script.contains(
                "if /bin/sh -c 'npm ci && echo '\\''ok'\\'''; then\n(\nagent\n)\ncuekit_code=$?\n\
                 else\ncuekit_code=$?\n: > '/d/setup-failed'\n"
            ),
            "{script}"
        );
    }

    #[test]
    fn env_file_exports_quoted_values_and_skips_shell_state() {
        let vars = [
            ("GEMINI_API_KEY", "k'ey"),
            ("PWD", "/elsewhere"),
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("BAD-NAME", "x"),
            ("1X", "x"),
            ("MULTI", "a\nb"),
        ];
        let file = render_env_file(vars.map(|(n, v)| (n.to_string(), v.to_string())));
        assert_eq!(
            file,
            "export GEMINI_API_KEY='k'\\''ey'\nexport MULTI='a\nb'\n"
        );
    }

    #[test]
    fn parses_sentinel() {
        assert_eq!(parse_sentinel("cuekit_exit=41\n"), Some(41));
        assert_eq!(parse_sentinel("garbage"), None);
    }
}

//! A task's sandbox (`--sandbox`): the agent runs inside bubblewrap, seeing the machine
//! read-only, HOME hidden, its own pid namespace and no unix socket of the outside, and writing
//! only its work dir, a private `/tmp` and its own state. Pure: from a [`Plan`] (what the task
//! may see and write, found on disk by `ops::sandbox`) to bubblewrap's argv and the wrapped
//! launch command. Nothing else knows about bubblewrap.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::launch::single_quote;

/// How a task is isolated, weakest first: a policy a project file or an MCP argument may only
/// raise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// The agent runs with the user's rights.
    #[default]
    None,
    /// The agent's own sandbox flag (Gemini `-s`, agy `--sandbox`).
    Agent,
    /// bubblewrap around the agent.
    Bwrap,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::None => "none",
            SandboxMode::Agent => "agent",
            SandboxMode::Bwrap => "bwrap",
        }
    }
}

/// Whether a sandboxed agent has a network, open first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    #[default]
    On,
    Off,
}

/// A task's sandbox as decided at submit, kept in the registry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub mode: SandboxMode,
    #[serde(default)]
    pub network: Network,
    /// Paths of the user's (their file's `sandbox.read`) shown read-only besides the work dir.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<PathBuf>,
    /// Paths of the user's (`sandbox.write`) the agent may write besides its work dir.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
}

/// What an agent needs of HOME, declared per adapter: where its settings live, and what of
/// them it writes.
#[derive(Debug)]
pub struct Needs {
    /// Its settings directories, relative to HOME. Each is shown entry by entry, read-only,
    /// over a private writable directory: the agent cannot change its settings, MCP servers,
    /// hooks or extensions (which would run unsandboxed the next time the user starts it), and
    /// a file it creates there vanishes with the sandbox.
    pub config_dirs: &'static [&'static str],
    /// Of those, the entries it writes and must keep (sessions, so a retry can resume):
    /// writable, created when missing. Relative to HOME.
    pub state: &'static [&'static str],
    /// Entries it rewrites by renaming a new copy over them (a rename onto a read-only mount
    /// fails): left out, so the agent writes a private one. Relative to HOME.
    pub private: &'static [&'static str],
}

/// An agent that declares nothing: HOME is a private, empty directory.
pub const NO_NEEDS: Needs = Needs {
    config_dirs: &[],
    state: &[],
    private: &[],
};

/// One mount of the sandbox, in the order given (a later one covers an earlier one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    ReadOnly(PathBuf),
    Writable(PathBuf),
    /// An empty private directory, writable, gone with the sandbox.
    Private(PathBuf),
    /// A unix socket (or any file) of the outside covered by an empty file.
    Masked(PathBuf),
}

/// Directories hidden by a private empty one before anything is shown again: HOME, the
/// temporary directories (and the unix sockets in them: tmux's, the ssh agent's), `/run`
/// (the session bus, docker's socket, cuekit's control sockets).
pub fn hidden_roots(home: &Path) -> Vec<PathBuf> {
    vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/run"),
        home.to_path_buf(),
    ]
}

/// Everything one sandbox is, found by `ops::sandbox`.
#[derive(Debug, Clone)]
pub struct Plan {
    pub home: PathBuf,
    /// After the hidden roots, in order.
    pub mounts: Vec<Mount>,
    pub network: Network,
    /// Where the agent starts.
    pub chdir: PathBuf,
    /// Variables set inside (the report drop, the marker).
    pub setenv: Vec<(String, String)>,
    /// A terminal session of its own: for agents that need no terminal (batch, ACP), so no
    /// keystroke can be pushed into the pane's input (TIOCSTI).
    pub new_session: bool,
}

/// bubblewrap's arguments that tell whether it can make a sandbox's namespaces here: what a
/// `--sandbox` submit and `doctor` run once (`bwrap PROBE`).
pub const PROBE: &[&str] = &[
    "--die-with-parent",
    "--unshare-pid",
    "--unshare-ipc",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--",
    "/bin/true",
];

/// Variables unset inside: the ways to the outside's sockets.
pub const UNSET: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "DBUS_SESSION_BUS_ADDRESS",
    "TMUX",
    "TMUX_PANE",
    "CUEKIT_TMUX_SOCKET",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
];

/// Set inside every sandbox, so `cuekit report` knows to drop its report rather than look for
/// the pane it cannot see.
pub const REPORT_DROP_VARIABLE: &str = "CUEKIT_REPORT_DROP";

/// The bubblewrap words before the command (`bwrap … --`).
pub fn bwrap_words(bwrap: &str, plan: &Plan) -> Vec<String> {
    let mut words: Vec<String> = [
        bwrap,
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    .map(String::from)
    .to_vec();
    if plan.network == Network::Off {
        words.push("--unshare-net".into());
    }
    if plan.new_session {
        words.push("--new-session".into());
    }
    let path = |p: &Path| p.to_string_lossy().into_owned();
    words.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"].map(String::from));
    for root in hidden_roots(&plan.home) {
        words.extend(["--tmpfs".to_string(), path(&root)]);
    }
    for mount in &plan.mounts {
        match mount {
            Mount::ReadOnly(p) => words.extend(["--ro-bind".into(), path(p), path(p)]),
            Mount::Writable(p) => words.extend(["--bind".into(), path(p), path(p)]),
            Mount::Private(p) => words.extend(["--tmpfs".into(), path(p)]),
            Mount::Masked(p) => words.extend(["--ro-bind".into(), "/dev/null".into(), path(p)]),
        }
    }
    for name in UNSET {
        words.extend(["--unsetenv".to_string(), name.to_string()]);
    }
    for (name, value) in &plan.setenv {
        words.extend(["--setenv".to_string(), name.clone(), value.clone()]);
    }
    words.extend(["--chdir".to_string(), path(&plan.chdir)]);
    words
}

/// File name, in the task directory, of bubblewrap's status (`--json-status-fd`): it gets the
/// agent's exit code once the agent ran (bubblewrap writes `child-pid` already before it sets
/// up the mounts), so an ending without one is the sandbox's failure.
pub const STATUS_FILE: &str = "sandbox-status";

/// Whether bubblewrap's status says the agent ran in the sandbox to its end.
pub fn came_up(status: &str) -> bool {
    status.contains("\"exit-code\"")
}

/// A shell launch command (interactive, batch) run inside the sandbox: `bwrap … -- /bin/sh -c
/// 'COMMAND'`, its status to [`STATUS_FILE`] in `task_dir`. The prompt's variable is exported
/// so the inner shell reads it.
pub fn wrap_shell(command: &str, words: &[String], task_dir: &Path) -> Result<String> {
    let status = single_quote(&task_dir.join(STATUS_FILE).to_string_lossy())?;
    let mut wrapped = format!("export {}; ", crate::launch::PROMPT_VARIABLE);
    for word in words {
        wrapped += &single_quote(word)?;
        wrapped.push(' ');
    }
    wrapped += &format!(
        "--json-status-fd 9 -- /bin/sh -c {} 9>{status}",
        single_quote(command)?
    );
    Ok(wrapped)
}

/// An ACP launch (`cuekit __acp … -- AGENT …`) with bubblewrap around the agent, not the
/// client: the words go in at `agent_at`, where the agent's program starts.
pub fn wrap_agent_words(command: &str, agent_at: usize, words: &[String]) -> Result<String> {
    let (client, agent) = command.split_at(agent_at);
    let mut wrapped = client.to_string();
    for word in words {
        wrapped += &single_quote(word)?;
        wrapped.push(' ');
    }
    wrapped += "-- ";
    wrapped += agent;
    Ok(wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            home: PathBuf::from("/home/u"),
            mounts: vec![
                Mount::ReadOnly("/home/u/.gemini/settings.json".into()),
                Mount::Writable("/home/u/src/p".into()),
                Mount::ReadOnly("/home/u/src/p/.cuekit".into()),
                Mount::Masked("/var/run/docker.sock".into()),
            ],
            network: Network::Off,
            chdir: PathBuf::from("/home/u/src/p"),
            setenv: vec![(REPORT_DROP_VARIABLE.into(), "/d".into())],
            new_session: true,
        }
    }

    #[test]
    fn the_machine_is_read_only_and_the_hidden_roots_come_before_what_is_shown() {
        let words = bwrap_words("bwrap", &plan());
        let at = |needle: &[&str]| {
            words
                .windows(needle.len())
                .position(|w| w == needle)
                .unwrap_or_else(|| panic!("{needle:?} not in {words:?}"))
        };
        assert!(at(&["--ro-bind", "/", "/"]) < at(&["--tmpfs", "/home/u"]));
        assert!(at(&["--tmpfs", "/home/u"]) < at(&["--bind", "/home/u/src/p", "/home/u/src/p"]));
        // The project's .cuekit (records, exit codes) is read-only over the writable work dir.
        assert!(
            at(&["--bind", "/home/u/src/p", "/home/u/src/p"])
                < at(&[
                    "--ro-bind",
                    "/home/u/src/p/.cuekit",
                    "/home/u/src/p/.cuekit"
                ])
        );
        at(&["--ro-bind", "/dev/null", "/var/run/docker.sock"]);
        at(&["--unshare-net"]);
        at(&["--unshare-pid"]);
        at(&["--die-with-parent"]);
        at(&["--new-session"]);
        at(&["--unsetenv", "SSH_AUTH_SOCK"]);
        at(&["--unsetenv", "TMUX"]);
        at(&["--setenv", REPORT_DROP_VARIABLE, "/d"]);
        let mut open = plan();
        open.network = Network::On;
        open.new_session = false;
        let words = bwrap_words("bwrap", &open);
        assert!(
            !words
                .iter()
                .any(|w| w == "--unshare-net" || w == "--new-session")
        );
    }

    #[test]
    fn a_shell_command_runs_quoted_inside() {
        let words = vec!["bwrap".to_string(), "--chdir".into(), "/w/it's".into()];
        let wrapped = wrap_shell(
            "'gemini' -p \"$(cat \"$cuekit_prompt\")\"",
            &words,
            Path::new("/t"),
        )
        .unwrap();
        assert_eq!(
            wrapped,
            "export cuekit_prompt; 'bwrap' '--chdir' '/w/it'\\''s' --json-status-fd 9 -- /bin/sh -c ''\\''gemini'\\'' -p \"$(cat \"$cuekit_prompt\")\"' 9>'/t/sandbox-status'"
        );
    }

    #[test]
    fn an_acp_launch_wraps_the_agent_not_the_client() {
        let command = "'cuekit' __acp --prompt-file \"$cuekit_prompt\" -- 'gemini' --acp";
        let at = command.find("'gemini'").unwrap();
        let wrapped =
            wrap_agent_words(command, at, &["bwrap".into(), "--unshare-pid".into()]).unwrap();
        assert_eq!(
            wrapped,
            "'cuekit' __acp --prompt-file \"$cuekit_prompt\" -- 'bwrap' '--unshare-pid' -- 'gemini' --acp"
        );
    }

    #[test]
    fn a_status_without_the_agents_exit_code_is_a_sandbox_that_never_came_up() {
        assert!(came_up("{ \"child-pid\": 12 }\n{ \"exit-code\": 1 }\n"));
        assert!(!came_up(""));
        // A mount that failed: bubblewrap named its child, which never ran the agent.
        assert!(!came_up("{ \"child-pid\": 12, \"mnt-namespace\": 4 }\n"));
    }

    #[test]
    fn modes_order_by_strictness() {
        assert!(SandboxMode::None < SandboxMode::Agent && SandboxMode::Agent < SandboxMode::Bwrap);
        assert!(Network::On < Network::Off);
    }
}

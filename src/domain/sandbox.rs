//! A task's sandbox (`--sandbox`): the agent runs inside bubblewrap, seeing the machine
//! read-only, HOME hidden, its own pid namespace and no unix socket of the outside, and writing
//! only its work dir, a private `/tmp` and its own state. Pure: from a [`Plan`] (what the task
//! may see and write, found on disk by `ops::sandbox`) to bubblewrap's argv and the wrapped
//! launch command. Nothing else knows about bubblewrap.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domain::error::Result;
use crate::domain::launch::single_quote;
use crate::domain::sandbox_user::{Opener, RunAs, cap_words, drop_words, perms_words};

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
    /// writable, from a folder of the task's own (`store::state_dir`), never the user's, which
    /// holds every project's memory and sessions that the user's own runs read. Relative to HOME.
    pub state: &'static [&'static str],
    /// Entries it rewrites by renaming a new copy over them (a rename onto a read-only mount
    /// fails): left out, so the agent writes a private one. Relative to HOME.
    pub private: &'static [&'static str],
    /// Files of the user's state the agent needs in its own (its login): shown read-only over
    /// the task's state. Relative to HOME.
    pub shared: &'static [&'static str],
}

/// An agent that declares nothing: HOME is a private, empty directory.
pub const NO_NEEDS: Needs = Needs {
    config_dirs: &[],
    state: &[],
    private: &[],
    shared: &[],
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
    /// A directory of cuekit's (`from`) shown writable in place of another (`to`): an agent's
    /// state kept per task, never the user's own.
    Bound {
        from: PathBuf,
        to: PathBuf,
    },
}

/// Directories hidden by a private empty one before anything is shown again: HOME, the
/// temporary directories (and the unix sockets in them: tmux's, the ssh agent's), `/run`
/// (the session bus, docker's socket, cuekit's control sockets), then the `private` ones:
/// cuekit's own data and settings and the user's XDG folders (config, data, state, cache,
/// runtime), which the XDG variables may put anywhere.
pub fn hidden_roots(home: &Path, private: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/run"),
        home.to_path_buf(),
    ];
    // Also those under HOME: a folder shown again later (a `PATH` folder, the agent's
    // settings) must not bring them back, and a folder above one is never shown.
    for dir in private {
        if !roots.contains(dir) {
            roots.push(dir.clone());
        }
    }
    roots
}

/// Whether a variable holds a secret, as its name says (read as Codex's default exclusions
/// read names, by the words between its underscores) or its value shows (a URL with a
/// password in it): such a variable of the submitter's is left out of a sandboxed task's
/// environment unless the agent takes its credentials from it. `GIT_AUTHOR_NAME` and `PWD`
/// say nothing secret; `NPM_CONFIG__AUTH`, `PGPASSWORD`, `MYSQL_PWD`, `GITHUB_PAT` do.
pub fn looks_secret(name: &str, value: &str) -> bool {
    const INSIDE: &[&str] = &[
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "COOKIE",
        "JWT",
    ];
    const ENDINGS: &[&str] = &["KEY", "KEYS", "AUTH", "PRIVATE", "SESSION"];
    // Whole words of a name of several (`MYSQL_PWD`, not `PWD`; `DB_PASS`, not `COMPASS`).
    const WORDS: &[&str] = &["PAT", "PASS", "PWD", "DSN"];
    const NAMES: &[&str] = &["XAUTHORITY", "SSHPASS"];
    const PREFIXES: &[&str] = &["AWS_", "AZURE_", "GCP_", "GOOGLE_APPLICATION_"];
    let name = name.to_ascii_uppercase();
    let several = name.contains('_');
    NAMES.contains(&name.as_str())
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || name.split('_').any(|word| {
            INSIDE.iter().any(|inside| word.contains(inside))
                || ENDINGS.iter().any(|ending| word.ends_with(ending))
                || (several && WORDS.contains(&word))
        })
        || holds_url_password(value)
}

/// Whether a value holds a URL with a password in it (`postgres://user:pass@host/db`).
fn holds_url_password(value: &str) -> bool {
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
        authority
            .rsplit_once('@')
            .is_some_and(|(user, _)| user.contains(':'))
    })
}

/// Everything one sandbox is, found by `ops::sandbox`.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The directories hidden first ([`hidden_roots`]).
    pub hidden: Vec<PathBuf>,
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
    /// cuekit's own program, when bubblewrap runs under its scope (`cuekit __scope -- bwrap
    /// …`): no connection to an abstract unix socket of the machine's (an X server, a session
    /// bus), which a sandbox that keeps the network would otherwise reach.
    pub scope: Option<PathBuf>,
    /// The user-mode stack that gives a sandbox with the network a namespace of its own
    /// (`domain::sandbox_net`); `None` where there is none: the sandbox then shares the
    /// machine's network.
    pub stack: Option<crate::domain::sandbox_net::Stack>,
    /// The unprivileged identity the child takes when cuekit runs as root
    /// (`domain::sandbox_user`); `None`: it runs as the user who runs cuekit.
    pub run_as: Option<RunAs>,
}

/// The hidden command that applies the scope ([`Plan::scope`]) and runs the rest of its words.
pub const SCOPE_COMMAND: &str = "__scope";

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
    // `--cap-drop ALL`: bubblewrap run by root keeps every capability otherwise, and a child
    // with CAP_SYS_ADMIN unmounts what hides HOME and remounts `/` writable. A child that
    // drops to another uid keeps only what the drop needs, until it drops.
    let stack = plan.stack.as_ref().filter(|_| plan.network == Network::On);
    let mut words: Vec<String> = stack
        .map(crate::domain::sandbox_net::supervisor_words)
        .unwrap_or_default();
    // A namespace of its own has its own abstract sockets: the scope is for a shared network.
    if let Some(cuekit) = plan.scope.as_ref().filter(|_| stack.is_none()) {
        words.extend([
            cuekit.to_string_lossy().into_owned(),
            SCOPE_COMMAND.to_string(),
            "--".to_string(),
        ]);
    }
    words.extend([bwrap, "--die-with-parent"].map(String::from));
    words.extend(cap_words(plan.run_as.as_ref()));
    words.extend(
        [
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        .map(String::from),
    );
    if plan.network == Network::Off {
        words.push("--unshare-net".into());
    }
    if plan.new_session {
        words.push("--new-session".into());
    }
    let path = |p: &Path| p.to_string_lossy().into_owned();
    words.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"].map(String::from));
    // A private directory is the child's to write, and the folders that lead to what it is
    // shown passable: open to it when it is not their owner (`domain::sandbox_user`).
    let perms = perms_words(plan.run_as.as_ref());
    let mut opener = plan.run_as.as_ref().map(|_| Opener::default());
    let mut open = |dest: &Path, private: bool| {
        opener
            .as_mut()
            .map(|opener| opener.before(dest, private))
            .unwrap_or_default()
    };
    for root in &plan.hidden {
        words.extend(open(root, true));
        words.extend(perms.iter().cloned());
        words.extend(["--tmpfs".to_string(), path(root)]);
    }
    for mount in &plan.mounts {
        let (dest, private) = match mount {
            Mount::ReadOnly(p) | Mount::Writable(p) | Mount::Masked(p) => (p, false),
            Mount::Private(p) => (p, true),
            Mount::Bound { to, .. } => (to, false),
        };
        words.extend(open(dest, private));
        match mount {
            Mount::ReadOnly(p) => words.extend(["--ro-bind".into(), path(p), path(p)]),
            Mount::Writable(p) => words.extend(["--bind".into(), path(p), path(p)]),
            Mount::Private(p) => {
                words.extend(perms.iter().cloned());
                words.extend(["--tmpfs".into(), path(p)]);
            }
            Mount::Masked(p) => words.extend(["--ro-bind".into(), "/dev/null".into(), path(p)]),
            Mount::Bound { from, to } => words.extend(["--bind".into(), path(from), path(to)]),
        }
    }
    // After the mounts: the resolver is shown over a file a hidden root (`/run`) may hold.
    if let Some(stack) = stack {
        if let Some((_, shown_at)) = &stack.resolv {
            words.extend(open(shown_at, false));
        }
        words.extend(crate::domain::sandbox_net::bwrap_net_words(stack));
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

/// bubblewrap's arguments without the covers (`--ro-bind /dev/null PATH`) of paths no longer
/// `there` when it starts: a socket removed between the plan and the start has nothing left to
/// cover, and bubblewrap would fail making its mount point on the read-only machine. Only the
/// words before the command's `--` are looked at.
pub fn without_gone_covers(
    args: &[std::ffi::OsString],
    there: impl Fn(&Path) -> bool,
) -> Vec<std::ffi::OsString> {
    let mut kept = Vec::with_capacity(args.len());
    let mut at = 0;
    while at < args.len() {
        if args[at] == "--" {
            kept.extend_from_slice(&args[at..]);
            break;
        }
        let cover = args[at] == "--ro-bind"
            && args.get(at + 1).is_some_and(|from| from == "/dev/null")
            && args.get(at + 2).is_some_and(|to| !there(Path::new(to)));
        if cover {
            at += 3;
            continue;
        }
        kept.push(args[at].clone());
        at += 1;
    }
    kept
}

/// The words after bubblewrap's `--`, before the command: the drop to the plan's unprivileged
/// identity (`setpriv … --`), or none.
pub fn inner_words(plan: &Plan) -> Vec<String> {
    drop_words(plan.run_as.as_ref())
}

/// The command a fetch from a task repository runs as its upload side (`git fetch
/// --upload-pack=…`): `git upload-pack` inside bubblewrap, which sees the machine read-only with
/// HOME, `/tmp`, `/var/tmp` and `/run` hidden, and shows again only the task's git dir and the
/// user's objects its alternates borrow, read-only, with no network. A `commondir`, an alternate
/// or a link the child wrote in its git dir then leads only where the child itself could read:
/// never to another repository of the user's. `run_as`: the git dir's owner, when that is the
/// sandbox's uid and cuekit runs as root (upload-pack reads it as the child could, and git's
/// ownership check passes). git appends the repository's path.
pub fn upload_pack_command(
    bwrap: &str,
    hidden: &[PathBuf],
    git_dir: &Path,
    objects: &Path,
    run_as: Option<&RunAs>,
) -> Result<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut words: Vec<String> = vec![bwrap.to_string(), "--die-with-parent".to_string()];
    words.extend(cap_words(run_as));
    // Every namespace; but the user namespace a root's bubblewrap would make maps root alone,
    // and the drop to another uid then fails.
    let unshare: &[&str] = match run_as {
        None => &["--unshare-all"],
        Some(_) => &[
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ],
    };
    words.extend(unshare.iter().map(|w| w.to_string()));
    words.extend(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"].map(String::from));
    let mut opener = Opener::default();
    let mut open = |dest: &Path, private: bool| match run_as {
        Some(_) => opener.before(dest, private),
        None => Vec::new(),
    };
    for root in hidden {
        words.extend(open(root, true));
        words.extend(["--tmpfs".to_string(), path(root)]);
    }
    for shown in [git_dir, objects] {
        words.extend(open(shown, false));
        words.extend(["--ro-bind".to_string(), path(shown), path(shown)]);
    }
    words.push("--".to_string());
    words.extend(drop_words(run_as));
    words.extend(["git", "upload-pack"].map(String::from));
    let quoted: Result<Vec<String>> = words.iter().map(|w| single_quote(w)).collect();
    Ok(quoted?.join(" "))
}

/// File name, in the task directory, of bubblewrap's status (`--json-status-fd`): it gets the
/// agent's exit code once the agent ran (bubblewrap writes `child-pid` already before it sets
/// up the mounts), so an ending without one is the sandbox's failure.
pub const STATUS_FILE: &str = "sandbox-status";

/// Whether bubblewrap's status says the agent ran in the sandbox to its end.
pub fn came_up(status: &str) -> bool {
    status.contains("\"exit-code\"")
}

/// A shell launch command (interactive, batch) run inside the sandbox: `bwrap … -- [INNER…]
/// /bin/sh -c 'COMMAND'`, its status to [`STATUS_FILE`] in `task_dir`. The prompt's variable
/// is exported so the inner shell reads it. With `seccomp` (a file holding
/// [`keystroke_filter`]) the agent runs under that filter: an interactive agent keeps the
/// pane's terminal, and must not push keystrokes into it. `inner`: [`inner_words`].
pub fn wrap_shell(
    command: &str,
    words: &[String],
    inner: &[String],
    task_dir: &Path,
    seccomp: Option<&Path>,
) -> Result<String> {
    let status = task_dir.join(STATUS_FILE);
    Ok(
        format!("export {}; ", crate::domain::launch::PROMPT_VARIABLE)
            + &shell_line(command, words, inner, Some(&status), seccomp)?,
    )
}

/// A plain shell command run inside the sandbox (`worktree.setup`): `bwrap … -- [INNER…]
/// /bin/sh -c 'COMMAND'`, under the keystroke filter when there is one. Its exit status is the
/// command's.
pub fn wrap_command(
    command: &str,
    words: &[String],
    inner: &[String],
    seccomp: Option<&Path>,
) -> Result<String> {
    shell_line(command, words, inner, None, seccomp)
}

/// `bwrap WORDS… [--seccomp 8] [--json-status-fd 9] -- [INNER…] /bin/sh -c 'COMMAND'
/// [9>STATUS] [8<FILTER]`, every word quoted.
fn shell_line(
    command: &str,
    words: &[String],
    inner: &[String],
    status: Option<&Path>,
    seccomp: Option<&Path>,
) -> Result<String> {
    let quote_path = |path: &Path| single_quote(&path.to_string_lossy());
    let mut line = String::new();
    for word in words {
        line += &single_quote(word)?;
        line.push(' ');
    }
    if seccomp.is_some() {
        line += "--seccomp 8 ";
    }
    if status.is_some() {
        line += "--json-status-fd 9 ";
    }
    line += "-- ";
    for word in inner {
        line += &single_quote(word)?;
        line.push(' ');
    }
    line += &format!("/bin/sh -c {}", single_quote(command)?);
    if let Some(status) = status {
        line += &format!(" 9>{}", quote_path(status)?);
    }
    if let Some(filter) = seccomp {
        line += &format!(" 8<{}", quote_path(filter)?);
    }
    Ok(line)
}

/// A classic BPF program for bubblewrap's `--seccomp`: `ioctl` with `TIOCSTI` (push a byte
/// into the terminal's input) or `TIOCLINUX` fails with `EPERM`, as Flatpak does; so do the
/// kernel keyring's calls (`add_key`, `request_key`, `keyctl`), as Flatpak and Docker refuse
/// them: bubblewrap makes no session keyring of its own, and the user's (a Kerberos ticket in
/// the persistent keyring linked into it) would be the child's to read; and so does any system
/// call of another ABI (x32, i386), which could reach the same calls by another number.
/// Everything else is allowed. `None` on an architecture it is not written for.
pub fn keystroke_filter() -> Option<Vec<u8>> {
    // (AUDIT_ARCH_*, __NR_ioctl, __NR_add_key, __NR_request_key, __NR_keyctl)
    let (arch, ioctl, add_key, request_key, keyctl): (u32, u32, u32, u32, u32) =
        if cfg!(target_arch = "x86_64") {
            (0xC000_003E, 16, 248, 249, 250)
        } else if cfg!(target_arch = "aarch64") {
            (0xC000_00B7, 29, 217, 218, 219)
        } else {
            return None;
        };
    const LOAD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    const ALLOW: u32 = 0x7fff_0000;
    const DENY: u32 = 0x0005_0000 | 1; // SECCOMP_RET_ERRNO | EPERM
    const TIOCSTI: u32 = 0x5412;
    const TIOCLINUX: u32 = 0x541C;
    // seccomp_data: nr at 0, arch at 4, args[1]'s low half at 24 (the command is an int).
    // A jump's offsets count from the next instruction: DENY is the last (13), ALLOW 12.
    let program: [(u16, u8, u8, u32); 14] = [
        (LOAD, 0, 0, 4),
        (JEQ, 1, 0, arch),
        (RET, 0, 0, DENY),
        (LOAD, 0, 0, 0),
        (JGE, 8, 0, 0x4000_0000), // the x32 ABI's numbers
        (JEQ, 7, 0, add_key),
        (JEQ, 6, 0, request_key),
        (JEQ, 5, 0, keyctl),
        (JEQ, 0, 3, ioctl),
        (LOAD, 0, 0, 24),
        (JEQ, 2, 0, TIOCSTI),
        (JEQ, 1, 0, TIOCLINUX),
        (RET, 0, 0, ALLOW),
        (RET, 0, 0, DENY),
    ];
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for (code, jt, jf, k) in program {
        bytes.extend(code.to_ne_bytes());
        bytes.extend([jt, jf]);
        bytes.extend(k.to_ne_bytes());
    }
    Some(bytes)
}

/// The name a repository a sandboxed child planted (`.git`, or a git dir's `HEAD`) is moved
/// aside to, once the task `tag` ended: one git never reads as a repository
/// (`.git.cuekit-quarantine-<id>`), `-N` added for the Nth taken.
pub fn quarantine_name(name: &str, tag: &str, n: usize) -> String {
    match n {
        0 | 1 => format!("{name}.cuekit-quarantine-{tag}"),
        n => format!("{name}.cuekit-quarantine-{tag}-{n}"),
    }
}

/// How every note on what a sandboxed child left begins (a task's warnings; `result` shows
/// them too).
pub const LEFT_NOTE: &str = "after the sandbox: ";

/// What a task's status says of a repository its sandboxed child left in a folder of yours,
/// moved aside at its end.
pub fn quarantine_note(from: &Path, to: &Path) -> String {
    format!(
        "{LEFT_NOTE}the child left a git repository at {}: moved aside to {} (git does not read \
         it there); look at it before you use it, and run no git inside it",
        from.display(),
        to.display()
    )
}

/// What a task's status says of the set-ID programs its sandboxed child left: `count` files,
/// the first of them `first`.
pub fn stripped_note(count: usize, first: &Path) -> String {
    format!(
        "{LEFT_NOTE}the child left {count} set-user-ID or set-group-ID file(s) in a folder of \
         yours ({} first): their set-ID bits were removed",
        first.display()
    )
}

/// What a task's status says when a folder held more entries than cuekit looks at after a
/// sandboxed task ends.
pub fn tidy_cut_short_note(folder: &Path, limit: usize) -> String {
    format!(
        "{LEFT_NOTE}{} holds more than {limit} entries: cuekit looked at that many for a \
         repository or a set-ID file the child left, not at the rest",
        folder.display()
    )
}

/// An ACP launch (`cuekit __acp … -- AGENT …`) with bubblewrap around the agent, not the
/// client: the words go in at `agent_at`, where the agent's program starts, `inner`
/// ([`inner_words`]) after bubblewrap's `--`. With `seccomp` (a file holding
/// [`keystroke_filter`]) the agent runs under that filter as a shell agent does: the pane's
/// shell opens the file as descriptor 8 for the client, whose agent (bubblewrap) inherits it
/// and reads it once (`--seccomp 8`). The command must be a simple command, as the launch
/// builders make it.
pub fn wrap_agent_words(
    command: &str,
    agent_at: usize,
    words: &[String],
    inner: &[String],
    seccomp: Option<&Path>,
) -> Result<String> {
    let (client, agent) = command.split_at(agent_at);
    let mut wrapped = client.to_string();
    for word in words {
        wrapped += &single_quote(word)?;
        wrapped.push(' ');
    }
    if seccomp.is_some() {
        wrapped += "--seccomp 8 ";
    }
    wrapped += "-- ";
    for word in inner {
        wrapped += &single_quote(word)?;
        wrapped.push(' ');
    }
    wrapped += agent;
    if let Some(filter) = seccomp {
        wrapped += &format!(" 8<{}", single_quote(&filter.to_string_lossy())?);
    }
    Ok(wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            hidden: hidden_roots(Path::new("/home/u"), &[]),
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
            scope: None,
            stack: None,
            run_as: None,
        }
    }

    #[test]
    fn cuekits_own_directories_are_hidden_wherever_the_xdg_variables_put_them() {
        let roots = hidden_roots(
            Path::new("/home/u"),
            &[
                PathBuf::from("/home/u/.local/share/cuekit"),
                PathBuf::from("/data/xdg/cuekit"),
                PathBuf::from("/run/user/1000"),
            ],
        );
        assert!(
            roots.contains(&PathBuf::from("/data/xdg/cuekit")),
            "{roots:?}"
        );
        // Under HOME too: a folder shown again later must not bring it back.
        assert!(roots.contains(&PathBuf::from("/home/u/.local/share/cuekit")));
        let mut plan = plan();
        plan.hidden = roots;
        let words = bwrap_words("bwrap", &plan);
        let tmpfs = words
            .windows(2)
            .position(|w| w == ["--tmpfs", "/data/xdg/cuekit"]);
        let work = words.iter().position(|w| w == "/home/u/src/p");
        assert!(tmpfs.is_some() && tmpfs < work, "{words:?}");
    }

    #[test]
    fn under_a_scope_bubblewrap_is_run_by_cuekits_scope_command() {
        let mut plan = plan();
        plan.scope = Some(PathBuf::from("/usr/bin/cuekit"));
        let words = bwrap_words("/usr/bin/bwrap", &plan);
        assert_eq!(
            words[..4],
            ["/usr/bin/cuekit", SCOPE_COMMAND, "--", "/usr/bin/bwrap"]
        );
        assert_eq!(bwrap_words("bwrap", &super::tests::plan())[0], "bwrap");
    }

    #[test]
    fn an_agents_state_is_bound_from_the_tasks_own_folder() {
        let mut plan = plan();
        plan.mounts.push(Mount::Bound {
            from: "/d/state/t_1/0".into(),
            to: "/home/u/.gemini/tmp".into(),
        });
        let words = bwrap_words("bwrap", &plan);
        assert!(
            words
                .windows(3)
                .any(|w| w == ["--bind", "/d/state/t_1/0", "/home/u/.gemini/tmp"]),
            "{words:?}"
        );
    }

    #[test]
    fn names_that_say_secret_are_told_from_the_rest() {
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "ANTHROPIC_API_KEY",
            "aws_region",
            "PGPASSWORD",
            "XAUTHORITY",
            "NPM_CONFIG__AUTH",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "OPENAI_APIKEY",
            "GH_AUTH",
            "GITHUB_PAT",
            "MYSQL_PWD",
            "DB_PASS",
            "SSHPASS",
            "CI_JOB_JWT",
            "SENTRY_DSN",
        ] {
            assert!(looks_secret(name, "x"), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "LANG",
            "TERM",
            "CUEKIT_TEST_CANNED",
            "EDITOR",
            "GIT_AUTHOR_NAME",
            "GIT_COMMITTER_EMAIL",
            "KEYBOARD_LAYOUT",
            "COMPASS_DIR",
        ] {
            assert!(!looks_secret(name, "x"), "{name}");
        }
        assert!(looks_secret(
            "DATABASE_URL",
            "postgres://app:hunter2@db:5432/app"
        ));
        assert!(!looks_secret("DATABASE_URL", "postgres://db:5432/app"));
        assert!(!looks_secret("HOMEPAGE", "https://example.com/a@b"));
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
        at(&["--cap-drop", "ALL"]);
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
    fn a_child_of_roots_runs_dropped_to_the_sandboxs_uid_in_directories_open_to_it() {
        let mut plan = plan();
        plan.mounts.push(Mount::Private("/home/u/.gemini".into()));
        plan.run_as = Some(RunAs::unprivileged("/usr/bin/setpriv".into()));
        let words = bwrap_words("bwrap", &plan);
        let at = |needle: &[&str]| words.windows(needle.len()).position(|w| w == needle);
        assert!(at(&["--cap-add", "CAP_SETUID"]).is_some(), "{words:?}");
        // Every private directory it gets is open to it; nothing else changes.
        for dir in ["/tmp", "/home/u", "/run", "/home/u/.gemini"] {
            assert!(
                at(&["--perms", "1777", "--tmpfs", dir]).is_some(),
                "{dir}: {words:?}"
            );
        }
        let inner = inner_words(&plan);
        let line = wrap_command("id -u", &words, &inner, None).unwrap();
        assert!(
            line.contains(
                "-- '/usr/bin/setpriv' '--reuid=65534' '--regid=65534' '--clear-groups' \
                 '--inh-caps=-all' '--bounding-set=-all' '--no-new-privs' '--' /bin/sh -c 'id -u'"
            ),
            "{line}"
        );
        let acp = wrap_agent_words("c -- 'gemini'", 5, &words, &inner, None).unwrap();
        assert!(acp.ends_with("'--no-new-privs' '--' 'gemini'"), "{acp}");
        // Run as the user, nothing of it.
        let own = bwrap_words("bwrap", &super::tests::plan());
        assert!(!own.iter().any(|w| w == "--perms" || w == "--cap-add"));
        assert!(inner_words(&super::tests::plan()).is_empty());
    }

    #[test]
    fn a_shell_command_runs_quoted_inside() {
        let words = vec!["bwrap".to_string(), "--chdir".into(), "/w/it's".into()];
        let wrapped = wrap_shell(
            "'gemini' -p \"$(cat \"$cuekit_prompt\")\"",
            &words,
            &[],
            Path::new("/t"),
            None,
        )
        .unwrap();
        assert_eq!(
            wrapped,
            "export cuekit_prompt; 'bwrap' '--chdir' '/w/it'\\''s' --json-status-fd 9 -- /bin/sh -c ''\\''gemini'\\'' -p \"$(cat \"$cuekit_prompt\")\"' 9>'/t/sandbox-status'"
        );
        let filtered =
            wrap_shell("x", &words, &[], Path::new("/t"), Some(Path::new("/d/f'1"))).unwrap();
        assert!(
            filtered.ends_with("--seccomp 8 --json-status-fd 9 -- /bin/sh -c 'x' 9>'/t/sandbox-status' 8<'/d/f'\\''1'"),
            "{filtered}"
        );
    }

    #[test]
    fn a_setup_command_runs_quoted_inside() {
        let words = vec!["bwrap".to_string(), "--chdir".into(), "/w".into()];
        assert_eq!(
            wrap_command("npm ci && echo 'ok'", &words, &[], Some(Path::new("/d/f"))).unwrap(),
            "'bwrap' '--chdir' '/w' --seccomp 8 -- /bin/sh -c 'npm ci && echo '\\''ok'\\''' 8<'/d/f'"
        );
    }

    /// Runs the filter as the kernel would, on one system call.
    fn verdict(program: &[u8], nr: u32, arch: u32, cmd: u64) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        data[24..32].copy_from_slice(&cmd.to_ne_bytes());
        let word = |at: usize| u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let ins = &program[pc * 8..pc * 8 + 8];
            let code = u16::from_ne_bytes([ins[0], ins[1]]);
            let (jt, jf) = (ins[2] as usize, ins[3] as usize);
            let k = u32::from_ne_bytes(ins[4..8].try_into().unwrap());
            pc += 1;
            match code {
                0x20 => acc = word(k as usize),
                0x15 => pc += if acc == k { jt } else { jf },
                0x35 => pc += if acc >= k { jt } else { jf },
                0x06 => return k,
                other => panic!("unknown instruction {other:#x}"),
            }
        }
    }

    #[test]
    fn the_keystroke_filter_refuses_tiocsti_and_tioclinux_and_nothing_else() {
        let Some(program) = keystroke_filter() else {
            return;
        };
        let (arch, ioctl) = if cfg!(target_arch = "x86_64") {
            (0xC000_003E, 16)
        } else {
            (0xC000_00B7, 29)
        };
        let eperm = 0x0005_0001;
        assert_eq!(verdict(&program, ioctl, arch, 0x5412), eperm);
        assert_eq!(verdict(&program, ioctl, arch, 0x5412 | (1 << 32)), eperm);
        assert_eq!(verdict(&program, ioctl, arch, 0x541C), eperm);
        assert_eq!(verdict(&program, ioctl, arch, 0x5413), 0x7fff_0000); // TIOCGWINSZ
        assert_eq!(verdict(&program, 0, arch, 0x5412), 0x7fff_0000); // read(), not ioctl
        assert_eq!(verdict(&program, 0x4000_0000 + 514, arch, 0x5412), eperm);
        assert_eq!(verdict(&program, 54, 0x4000_0003, 0x5412), eperm); // i386
        // The kernel keyring's calls: add_key, request_key, keyctl.
        let keyring: [u32; 3] = if cfg!(target_arch = "x86_64") {
            [248, 249, 250]
        } else {
            [217, 218, 219]
        };
        for call in keyring {
            assert_eq!(verdict(&program, call, arch, 0), eperm, "{call}");
        }
        assert_eq!(verdict(&program, 251, arch, 0), 0x7fff_0000);
    }

    #[test]
    fn a_cover_of_a_path_gone_by_the_start_is_left_out() {
        let words: Vec<std::ffi::OsString> = [
            "--ro-bind",
            "/dev/null",
            "/gone.sock",
            "--ro-bind",
            "/dev/null",
            "/here.sock",
            "--ro-bind",
            "/a",
            "/a",
            "--",
            "--ro-bind",
            "/dev/null",
            "/gone.sock",
        ]
        .map(Into::into)
        .to_vec();
        let kept = without_gone_covers(&words, |path| path != Path::new("/gone.sock"));
        assert_eq!(
            kept,
            [
                "--ro-bind",
                "/dev/null",
                "/here.sock",
                "--ro-bind",
                "/a",
                "/a",
                "--",
                "--ro-bind",
                "/dev/null",
                "/gone.sock",
            ]
            .map(std::ffi::OsString::from)
            .to_vec()
        );
    }

    #[test]
    fn an_acp_launch_wraps_the_agent_not_the_client() {
        let command = "'cuekit' __acp --prompt-file \"$cuekit_prompt\" -- 'gemini' --acp";
        let at = command.find("'gemini'").unwrap();
        let words = ["bwrap".to_string(), "--unshare-pid".into()];
        let wrapped = wrap_agent_words(command, at, &words, &[], None).unwrap();
        assert_eq!(
            wrapped,
            "'cuekit' __acp --prompt-file \"$cuekit_prompt\" -- 'bwrap' '--unshare-pid' -- 'gemini' --acp"
        );
        // Under the sandbox's filter, as a shell agent is: bubblewrap reads it from the
        // descriptor the pane's shell opens for the client.
        let filtered =
            wrap_agent_words(command, at, &words, &[], Some(Path::new("/d/f'1"))).unwrap();
        assert_eq!(
            filtered,
            "'cuekit' __acp --prompt-file \"$cuekit_prompt\" -- 'bwrap' '--unshare-pid' --seccomp 8 -- 'gemini' --acp 8<'/d/f'\\''1'"
        );
    }

    #[test]
    fn a_fetchs_upload_side_sees_only_the_task_repository_and_the_borrowed_objects() {
        let command = upload_pack_command(
            "bwrap",
            &hidden_roots(Path::new("/home/u"), &[]),
            Path::new("/home/u/.local/share/cuekit/repos/t_1.git"),
            Path::new("/home/u/src/p/.git/objects"),
            None,
        )
        .unwrap();
        let words = shlex_words(&command);
        let at = |w: &str| words.iter().position(|x| x == w).unwrap();
        assert!(words.contains(&"--unshare-all".to_string()));
        assert!(at("/home/u") < at("/home/u/.local/share/cuekit/repos/t_1.git"));
        assert!(command.ends_with("'--' 'git' 'upload-pack'"), "{command}");
        assert!(
            !command.contains("'--bind'"),
            "nothing is writable: {command}"
        );
        // Root reads a repository of the sandbox's uid as that uid.
        let dropped = upload_pack_command(
            "bwrap",
            &[],
            Path::new("/r/t_1.git"),
            Path::new("/p/.git/objects"),
            Some(&RunAs::unprivileged("/usr/bin/setpriv".into())),
        )
        .unwrap();
        assert!(
            dropped.ends_with("'--no-new-privs' '--' 'git' 'upload-pack'"),
            "{dropped}"
        );
        assert!(dropped.contains("'--cap-add' 'CAP_SETUID'"), "{dropped}");
        assert!(!dropped.contains("--unshare-all"), "{dropped}");
        assert!(dropped.contains("'--unshare-net'"), "{dropped}");
    }

    /// The words of a command of single-quoted words (as [`single_quote`] makes them).
    fn shlex_words(command: &str) -> Vec<String> {
        command
            .split("' '")
            .map(|w| w.trim_matches('\'').to_string())
            .collect()
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

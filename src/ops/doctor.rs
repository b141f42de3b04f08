//! `cuekit doctor`: what is missing before anything runs, one line per check with the next
//! step for each problem. Nothing here touches the network, writes credentials or waits long
//! on a hung binary; `--fix` only creates directories and adds the `.gitignore` entry.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::domain::adapter::{ADAPTERS, Adapter, AuthProbe, VERSION_TIMEOUT};
use crate::effects::config::Config;
use crate::effects::store;
use crate::effects::tmux::Socket;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// What `--fix` did about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
}

impl Check {
    pub fn new(name: impl Into<String>, level: Level, message: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            level,
            message: message.into(),
            next_step: None,
            fixed: None,
        }
    }

    fn next(mut self, step: impl Into<String>) -> Check {
        self.next_step = Some(step.into());
        self
    }
}

/// Oldest tmux cuekit supports: `new-session -e`, `-f` filters, `pane_dead_status`.
const MIN_TMUX: (u32, u32) = (3, 2);
/// `sun_path` holds 108 bytes on Linux (104 on macOS), terminator included.
const MAX_SOCKET_PATH: usize = 103;

pub fn doctor(cwd: &Path, fix: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let config = match Config::load(cwd) {
        Ok(config) => {
            let files: Vec<String> = config.files().iter().map(|f| f.to_string()).collect();
            let message = if files.is_empty() {
                "no config file (built-in defaults)".to_string()
            } else {
                format!("parses: {}", files.join(", "))
            };
            checks.push(Check::new("config", Level::Ok, message));
            if let Some(check) = trust_check(&config) {
                checks.push(check);
            }
            if config
                .notify()
                .value
                .contains(&crate::effects::config::NotifyChannel::Desktop)
            {
                checks.push(match crate::effects::notify::session_bus() {
                    Ok(()) => Check::new(
                        "desktop notifications",
                        Level::Ok,
                        "D-Bus session bus reachable",
                    ),
                    Err(why) => Check::new("desktop notifications", Level::Warn, why)
                        .next("run cuekit inside a desktop session, or drop `desktop` from notify"),
                });
            }
            checks.push(sandbox_check(&config));
            checks.push(keystroke_check());
            config
        }
        Err(err) => {
            checks.push(
                Check::new("config", Level::Fail, err.message)
                    .next("fix the file; nothing can be submitted until it parses"),
            );
            Config::default()
        }
    };
    let socket = Socket(config.socket().value);
    checks.extend(tmux_checks(&socket));
    if let Ok(socket) = socket.resolve() {
        checks.push(orphan_check(&socket, fix));
    }
    checks.extend(agent_checks(&config));
    checks.extend(queue_check());
    checks.extend(environment_checks());
    checks.extend(storage_checks(cwd, fix));
    checks.push(git_check());
    checks.extend(worktree_check(cwd, &config, fix));
    checks
}

/// What waits in the queue, and whether the scheduler serves it (after a reboot the next
/// cuekit call starts it; `doctor` is one).
fn queue_check() -> Option<Check> {
    let summary = crate::ops::queue_summary();
    if summary.waiting == 0 {
        return None;
    }
    let limits = summary.waiting - summary.for_dependencies - summary.for_backoff;
    let message = format!(
        "{} task(s) wait: {} for a dependency, {} for a retry's backoff, {} for a slot under the limits; scheduler {}",
        summary.waiting,
        summary.for_dependencies,
        summary.for_backoff,
        limits,
        if summary.scheduler_running {
            "running"
        } else {
            "not running"
        }
    );
    Some(if summary.scheduler_running {
        Check::new("queue", Level::Ok, message)
    } else {
        Check::new("queue", Level::Warn, message).next(
            "run `cuekit list --all` (any cuekit call that looks at tasks starts the scheduler)",
        )
    })
}

/// Oldest git `--worktree` tasks work with: `merge-tree --write-tree` finds conflicts without
/// touching a work tree.
const MIN_GIT: (u32, u32) = (2, 38);
/// The git that reads an untrusted task repository safely (docs/guides/sandbox.md).
const SAFE_GIT: (u32, u32, u32) = (2, 45, 1);

/// `git version 2.45.1` as (2, 45, 1); a missing part is 0.
fn patch_level(text: &str) -> (u32, u32, u32) {
    let start = text
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(text.len());
    let mut parts = text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// Whether this kernel lets a process push keystrokes into its terminal (TIOCSTI): an
/// unsandboxed interactive child could answer its own agent's approval dialog. Sandboxed
/// children run under cuekit's seccomp filter either way.
fn keystroke_check() -> Check {
    let name = "terminal keystrokes";
    match std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti") {
        Ok(value) if value.trim() == "0" => Check::new(
            name,
            Level::Ok,
            "this kernel refuses TIOCSTI (dev.tty.legacy_tiocsti=0)",
        ),
        _ => Check::new(
            name,
            Level::Warn,
            "this kernel lets a process push keystrokes into its terminal (TIOCSTI): an \
             unsandboxed interactive child can type into its own pane, approval dialogs included \
             (sandboxed children are stopped by cuekit's seccomp filter)",
        )
        .next("sysctl -w dev.tty.legacy_tiocsti=0 (Linux 6.2+), or run interactive children with --sandbox"),
    }
}

/// Whether `--sandbox` can make its namespaces here, as the submit itself would find out: a
/// failure where the config sandboxes every task is one, elsewhere a warning.
fn sandbox_check(config: &Config) -> Check {
    let configured = config.sandbox().mode == crate::domain::sandbox::SandboxMode::Bwrap;
    match crate::ops::probe_sandbox() {
        Ok(bwrap) => Check::new(
            "sandbox",
            Level::Ok,
            format!(
                "{} makes its namespaces here (--sandbox works)",
                bwrap.display()
            ),
        ),
        Err(err) => {
            let level = if configured { Level::Fail } else { Level::Warn };
            let check = Check::new("sandbox", level, err.message);
            match err.hint {
                Some(hint) => check.next(hint),
                None => check,
            }
        }
    }
}

fn git_check() -> Check {
    let version = std::process::Command::new("git")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    match version {
        None => Check::new("git", Level::Warn, "git is not installed")
            .next("install git to run tasks in their own worktrees (--worktree)"),
        Some(text) => match parse_version(&text) {
            Some(found) if found >= MIN_GIT && patch_level(&text) >= SAFE_GIT => {
                Check::new("git", Level::Ok, text)
            }
            Some(found) if found >= MIN_GIT => Check::new(
                "git",
                Level::Warn,
                format!(
                    "{text}: reading a sandboxed task's work safely needs git 2.45.1 or newer \
                     (the fetch fixes of CVE-2024-32004 and its kin; GIT_ATTR_SOURCE, 2.40, keeps \
                     the child's .gitattributes from choosing one of your filters)"
                ),
            )
            .next(
                "upgrade git; a distribution's backport of those fixes (Debian 12's 2.39.5) \
                 covers the fetch, not the attributes",
            ),
            _ => Check::new(
                "git",
                Level::Warn,
                format!("{text}: --worktree needs git 2.38 or newer"),
            )
            .next("upgrade git to run tasks in their own worktrees"),
        },
    }
}

/// Worktrees on cuekit's branches that no task record knows; `--fix` removes only those the
/// cleanup rules let go (clean, merged into the checkout's HEAD, nothing running inside).
fn worktree_check(cwd: &Path, config: &Config, fix: bool) -> Option<Check> {
    use crate::effects::git::{cleanup, worktrees};
    let root = crate::effects::git::toplevel(cwd)?;
    let name = "task worktrees";
    let listed = match worktrees::list(&root) {
        Ok(listed) => listed,
        Err(err) => return Some(Check::new(name, Level::Warn, err.message)),
    };
    // Known: every worktree the registry gave a task, and (keeping more is the safe side)
    // every one a record names, so `--fix` never removes a worktree something still claims.
    let placements: Vec<store::Placement> = store::registered_ids()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|id| store::placement(&id).ok()?)
        .collect();
    let registered = placements
        .iter()
        .filter_map(|p| Some(p.facts.as_ref()?.worktree.as_ref()?.path.clone()));
    let known: Vec<PathBuf> = placements
        .iter()
        .map(|placement| placement.task_dir.clone())
        .chain(
            store::project_tasks_root(cwd)
                .and_then(|tasks| std::fs::read_dir(tasks).ok())
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path()),
        )
        .filter_map(|dir: PathBuf| store::load(&dir).ok()?.worktree.map(|w| w.path))
        .chain(registered)
        .collect();
    // The user's prefix (or the built-in), never a project file's: what `--fix` removes is
    // decided by the user's own settings.
    let prefix = config.user_branch_prefix();
    let orphans = worktrees::orphans(&listed, &prefix, &known);
    if orphans.is_empty() {
        return Some(Check::new(
            name,
            Level::Ok,
            "every cuekit worktree belongs to a task",
        ));
    }
    let head = crate::effects::git::Git::new(&root)
        .line(["rev-parse", "HEAD"])
        .unwrap_or_default();
    let common_dir = crate::effects::git::Git::new(&root)
        .line(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join(".git"));
    // cuekit's index of an orphan lives in the data dir while it is looked at.
    let scratch = store::data_dir().map(|dir| dir.join("doctor"));
    if let Some(dir) = &scratch {
        let _ = store::create_private_dir(dir);
    }
    let mut lines = Vec::new();
    let mut fixed = Vec::new();
    for orphan in orphans {
        let branch = orphan.branch.clone().unwrap_or_default();
        let placed = store::WorktreePlacement {
            repo_root: root.clone(),
            path: orphan.path.clone(),
            branch: branch.clone(),
            base_ref: head.clone(),
            base_full_ref: None,
            base_commit: head.clone(),
            common_dir: common_dir.clone(),
            git_dir: None,
            tip_ref: None,
        };
        let target = cleanup::Target {
            task: crate::effects::git::checkout::Checkout {
                placed: &placed,
                scratch: scratch.as_deref().unwrap_or(&root),
            },
            merged: None,
        };
        let outcome = if fix {
            cleanup::remove(&target, false).map(|c| match c {
                cleanup::Cleanup::Removed { .. } => Vec::new(),
                cleanup::Cleanup::Kept { reasons, .. } => reasons,
            })
        } else {
            Ok(cleanup::inspect(&target).keep)
        };
        let described = format!("{} ({branch})", orphan.path.display());
        match outcome {
            Ok(reasons) if reasons.is_empty() && fix => fixed.push(described),
            Ok(reasons) if reasons.is_empty() => lines.push(format!("{described}: safe to remove")),
            Ok(reasons) => {
                let why: Vec<String> = reasons.iter().map(ToString::to_string).collect();
                lines.push(format!("{described}: kept, {}", why.join("; ")));
            }
            Err(err) => lines.push(format!("{described}: kept, {}", err.message)),
        }
    }
    let mut check = if lines.is_empty() {
        Check::new(name, Level::Ok, "no orphaned cuekit worktree left")
    } else {
        Check::new(
            name,
            Level::Warn,
            format!("worktrees no task knows about: {}", lines.join("; ")),
        )
        .next("`cuekit doctor --fix` removes the safe ones; look into the kept ones, then `git worktree remove`")
    };
    if !fixed.is_empty() {
        check.fixed = Some(format!("removed {}", fixed.join(", ")));
    }
    Some(check)
}

fn tmux_checks(socket: &Socket) -> Vec<Check> {
    let Some(path) = crate::effects::which::find_on_path("tmux") else {
        return vec![
            Check::new("tmux", Level::Fail, "tmux is not installed")
                .next("install tmux 3.2 or newer, e.g. `apt-get install tmux`"),
        ];
    };
    let version = Command::new(&path)
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut checks = vec![match parse_version(&version) {
        Some(found) if found >= MIN_TMUX => Check::new(
            "tmux",
            Level::Ok,
            format!("{version} at {}", path.display()),
        ),
        Some(_) => Check::new("tmux", Level::Fail, format!("{version} is older than 3.2"))
            .next("install tmux 3.2 or newer"),
        None => Check::new(
            "tmux",
            Level::Warn,
            format!(
                "cannot tell the version of {} ({version:?})",
                path.display()
            ),
        ),
    }];
    let socket_path = socket_path(socket);
    let length = socket_path.as_os_str().len();
    checks.push(if length > MAX_SOCKET_PATH {
        Check::new(
            "tmux socket",
            Level::Fail,
            format!(
                "{} is {length} bytes, over the {MAX_SOCKET_PATH}-byte limit",
                socket_path.display()
            ),
        )
        .next("use a shorter CUEKIT_TMUX_SOCKET or TMUX_TMPDIR")
    } else {
        let [flag, name] = socket.args();
        let listed = Command::new(&path)
            .arg(flag)
            .arg(name)
            .args(["list-sessions", "-F", "#{session_name}"])
            .output();
        match listed {
            Ok(out) if out.status.success() => {
                let sessions = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter(|s| s.starts_with("cuekit-task-"))
                    .count();
                Check::new(
                    "tmux server",
                    Level::Ok,
                    format!(
                        "{} reachable, {sessions} task session(s)",
                        socket_path.display()
                    ),
                )
            }
            Ok(out) => {
                let stderr = String::from_utf8_lossy(&out.stderr);
                if stderr.contains("no server running") || stderr.contains("error connecting") {
                    Check::new(
                        "tmux server",
                        Level::Ok,
                        format!(
                            "{} not running yet (the first task starts it)",
                            socket_path.display()
                        ),
                    )
                } else {
                    Check::new(
                        "tmux server",
                        Level::Fail,
                        format!("{}: {}", socket_path.display(), stderr.trim()),
                    )
                    .next("remove a stale socket file, or set CUEKIT_TMUX_SOCKET to another name")
                }
            }
            Err(err) => Check::new(
                "tmux server",
                Level::Fail,
                format!("cannot run tmux: {err}"),
            ),
        }
    });
    checks
}

/// `tmux 3.3a` → (3, 3); `tmux next-3.5` → (3, 5).
/// `major.minor` from a `--version` line (tmux's or git's).
fn parse_version(text: &str) -> Option<(u32, u32)> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let mut parts = text[start..].split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn socket_path(socket: &Socket) -> PathBuf {
    socket.path()
}

/// Whether the project file's code-running keys apply. Nothing the file names is run here
/// unless it is trusted (the agent checks use only trusted binaries).
fn trust_check(config: &Config) -> Option<Check> {
    let (path, state) = config.project_trust()?;
    let ignored = config.ignored();
    let needs_trust: Vec<&str> = ignored
        .iter()
        .filter(|w| w.needs_trust())
        .map(|w| w.key.as_str())
        .collect();
    let others: Vec<String> = ignored
        .iter()
        .filter(|w| !w.needs_trust())
        .map(|w| format!("{} ({})", w.key, w.class.as_str()))
        .collect();
    if ignored.is_empty() {
        return Some(Check::new(
            "config trust",
            Level::Ok,
            format!("{}: {}", path.display(), state.as_str()),
        ));
    }
    let mut said = Vec::new();
    if !needs_trust.is_empty() {
        said.push(format!(
            "its keys that run code or place files are not used ({}); submits that need them are refused",
            needs_trust.join(", ")
        ));
    }
    if !others.is_empty() {
        said.push(format!(
            "keys a project file may not set, or only stricter, are ignored: {}",
            others.join(", ")
        ));
    }
    let next = if needs_trust.is_empty() {
        "move user-only keys to ~/.config/cuekit/config.yaml; a project may only tighten a policy"
            .to_string()
    } else {
        format!(
            "read it; if you trust it, run `cuekit trust {}`",
            path.display()
        )
    };
    Some(
        Check::new(
            "config trust",
            Level::Warn,
            format!(
                "{} is {}: {}",
                path.display(),
                state.as_str(),
                said.join("; ")
            ),
        )
        .next(next),
    )
}

/// Sessions of cuekit's server that no task owns: left by a submit that was killed before it
/// recorded its task (pending submits are undone by every cuekit call; this finds the rest).
fn orphan_check(socket: &Socket, fix: bool) -> Check {
    let listed = crate::effects::tmux::Tmux::new(socket.clone())
        .run(&crate::effects::tmux::args::list_sessions());
    let Ok(sessions) = listed else {
        return Check::new("orphan sessions", Level::Ok, "no tmux server running");
    };
    let orphans: Vec<&str> = sessions
        .lines()
        .filter(|name| {
            name.strip_prefix("cuekit-task-").is_some_and(|id| {
                store::is_task_id(id)
                    && matches!(store::placement(id), Ok(None))
                    && !store::pending_submits()
                        .iter()
                        .any(|pending| pending.placement.id == id)
            })
        })
        .collect();
    if orphans.is_empty() {
        return Check::new(
            "orphan sessions",
            Level::Ok,
            "every task session has its task",
        );
    }
    if fix {
        // Only sessions this registry started (their owner mark names its data directory):
        // another data directory's tasks on the same server, and a session made by hand under
        // a task's name, are not ours to end.
        let ours = own_sessions(socket);
        let (ended, kept): (Vec<&str>, Vec<&str>) = orphans
            .iter()
            .partition(|session| ours.iter().any(|own| own == *session));
        for session in &ended {
            let _ = crate::effects::tmux::Tmux::new(socket.clone())
                .run(&crate::effects::tmux::args::kill_session(session));
        }
        let mut said = format!(
            "ended {} session(s) no task owns: {}",
            ended.len(),
            ended.join(", ")
        );
        if !kept.is_empty() {
            said.push_str(&format!(
                "; left {} not started by this registry ({}): {}",
                kept.len(),
                store::data_dir().unwrap_or_default().display(),
                kept.join(", ")
            ));
        }
        return Check::new("orphan sessions", Level::Ok, said);
    }
    Check::new(
        "orphan sessions",
        Level::Warn,
        format!(
            "{} session(s) no task owns: {}",
            orphans.len(),
            orphans.join(", ")
        ),
    )
    .next("`cuekit doctor --fix` ends them")
}

/// The sessions of `socket` whose owner mark names this registry's data directory.
fn own_sessions(socket: &Socket) -> Vec<String> {
    let Some(mine) = store::data_dir() else {
        return Vec::new();
    };
    let mine = mine.to_string_lossy().into_owned();
    crate::effects::tmux::Tmux::new(socket.clone())
        .run(&crate::effects::tmux::args::list_sessions_with_owner())
        .map(|listed| {
            listed
                .lines()
                .filter_map(|line| line.split_once('\t'))
                .filter(|(_, owner)| *owner == mine)
                .map(|(name, _)| name.to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Each agent's binary and version (probed in parallel, each under a timeout) and its auth.
fn agent_checks(config: &Config) -> Vec<Check> {
    let default_agent = config.agent().value;
    let probes: Vec<_> = ADAPTERS
        .iter()
        .filter(|adapter| !adapter.runs_argv)
        .map(|adapter| {
            let bin = config
                .bin(adapter.kind())
                .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
            let path = crate::effects::which::find_on_path(&bin);
            let version = path
                .clone()
                .map(|path| std::thread::spawn(move || probe_version(&path)));
            (adapter, bin, path, version)
        })
        .collect();
    let mut checks = Vec::new();
    for (adapter, bin, path, version) in probes {
        let name = format!("{} binary", adapter.kind());
        let Some(path) = path else {
            let level = if adapter.kind() == default_agent {
                Level::Fail
            } else {
                Level::Warn
            };
            checks.push(
                Check::new(name, level, format!("'{bin}' is not on PATH")).next(format!(
                    "to install: {} (or set adapters.{}.bin)",
                    adapter.install_hint,
                    adapter.kind()
                )),
            );
            continue;
        };
        let version = version.map_or(Err("was not run".to_string()), |probe| {
            probe.join().unwrap_or(Err("crashed".into()))
        });
        checks.push(match version {
            Ok(version) => Check::new(name, Level::Ok, format!("{version} at {}", path.display())),
            Err(problem) => Check::new(
                name,
                Level::Warn,
                format!("{} is installed but `--version` {problem}", path.display()),
            )
            .next("run it by hand to see what it waits for"),
        });
        checks.push(auth_check(adapter));
    }
    checks
}

fn auth_check(adapter: &Adapter) -> Check {
    let name = format!("{} auth", adapter.kind());
    match (adapter.auth_probe)() {
        AuthProbe::Configured(how) => Check::new(name, Level::Ok, how),
        AuthProbe::Missing(hint) => Check::new(name, Level::Warn, "no credentials found; batch tasks will fail and interactive ones wait on a login screen").next(hint),
        AuthProbe::NotServed { how, hint } => Check::new(name, Level::Warn, how).next(hint),
    }
}

/// `<bin> --version`, killed (with its process group) if it does not answer in time.
fn probe_version(path: &Path) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|err| format!("cannot run: {err}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
                let version = out.lines().next().unwrap_or("").trim().to_string();
                return if status.success() && !version.is_empty() {
                    Ok(version)
                } else {
                    Err(format!("failed ({status})"))
                };
            }
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!(
                    "did not answer within {}s",
                    VERSION_TIMEOUT.as_secs()
                ));
            }
        }
    }
}

fn environment_checks() -> Vec<Check> {
    let mut checks = Vec::new();
    for name in ["CI", "GITHUB_ACTIONS"] {
        if let Ok(value) = std::env::var(name) {
            checks.push(Check::new(format!("environment {name}"), Level::Warn, format!("{name}={value}: the Gemini CLI runs a positional prompt headless when it is set; cuekit unsets it for interactive tasks, other tools you start may not")));
        }
    }
    for (name, agent) in [
        ("GEMINI_CLI", "the Gemini CLI"),
        ("CLAUDECODE", "Claude Code"),
        ("CODEX_SANDBOX", "Codex"),
        ("OPENCODE", "opencode"),
    ] {
        if std::env::var_os(name).is_some() {
            checks.push(Check::new(format!("environment {name}"), Level::Warn, format!("running inside {agent} ({name} is set): children inherit its environment and sandbox"))
                .next("if a child misbehaves, submit from a plain shell"));
        }
    }
    if checks.is_empty() {
        checks.push(Check::new(
            "environment",
            Level::Ok,
            "no variables that change how children run",
        ));
    }
    checks
}

fn storage_checks(cwd: &Path, fix: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(registry) = store::registry_dir() {
        checks.push(writable_dir("task registry", &registry, fix));
    }
    let tasks = store::project_tasks_root(cwd).unwrap_or_else(|| cwd.join(store::TASKS_SUBDIR));
    checks.push(writable_dir("task directory", &tasks, fix));
    let broken: Vec<String> = std::fs::read_dir(&tasks)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| dir.join(store::RECORD_FILE).is_file())
        .filter_map(|dir| store::load(&dir).err().map(|err| err.message))
        .collect();
    checks.push(if broken.is_empty() {
        Check::new("task records", Level::Ok, "every task.json parses")
    } else {
        Check::new("task records", Level::Fail, broken.join("; "))
            .next("move the damaged task directory aside; other tasks are unaffected")
    });
    checks.push(gitignore_check(cwd, fix));
    checks
}

fn writable_dir(name: &str, dir: &Path, fix: bool) -> Check {
    if !dir.exists() {
        if fix {
            return match std::fs::create_dir_all(dir) {
                Ok(()) => Check {
                    fixed: Some(format!("created {}", dir.display())),
                    ..Check::new(name, Level::Ok, format!("{} created", dir.display()))
                },
                Err(err) => Check::new(
                    name,
                    Level::Fail,
                    format!("cannot create {}: {err}", dir.display()),
                ),
            };
        }
        return Check::new(
            name,
            Level::Ok,
            format!(
                "{} does not exist yet (created on first submit)",
                dir.display()
            ),
        );
    }
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    match std::fs::write(&probe, b"") {
        Ok(()) => {
            let _ = std::fs::remove_file(&probe);
            Check::new(name, Level::Ok, format!("{} is writable", dir.display()))
        }
        Err(err) => Check::new(
            name,
            Level::Fail,
            format!("{} is not writable: {err}", dir.display()),
        )
        .next("fix its ownership or permissions"),
    }
}

/// In a git work tree, `.cuekit/` (transcripts, prompts) should not be committed.
fn gitignore_check(cwd: &Path, fix: bool) -> Check {
    let Some(root) = cwd.ancestors().find(|dir| dir.join(".git").exists()) else {
        return Check::new("gitignore", Level::Ok, "not in a git repository");
    };
    let path = root.join(".gitignore");
    let text = match crate::effects::project::Root::new(root)
        .and_then(|root| root.read_text(Path::new(".gitignore")))
    {
        Ok(text) => text.unwrap_or_default(),
        Err(err) => {
            return Check::new("gitignore", Level::Warn, err.message)
                .next("make .gitignore a regular file of the project's");
        }
    };
    if ignores_cuekit(&text) {
        return Check::new(
            "gitignore",
            Level::Ok,
            format!("{} ignores .cuekit/", path.display()),
        );
    }
    if fix {
        return match add_gitignore_entry(root) {
            Ok(()) => Check {
                fixed: Some(format!("added .cuekit/ to {}", path.display())),
                ..Check::new(
                    "gitignore",
                    Level::Ok,
                    format!("{} ignores .cuekit/", path.display()),
                )
            },
            Err(err) => Check::new("gitignore", Level::Fail, err.message),
        };
    }
    Check::new(
        "gitignore",
        Level::Warn,
        format!(
            "{} does not ignore .cuekit/ (task transcripts and prompts)",
            path.display()
        ),
    )
    .next("run `cuekit doctor --fix` or `cuekit init`")
}

pub fn ignores_cuekit(gitignore: &str) -> bool {
    gitignore
        .lines()
        .map(str::trim)
        .any(|line| matches!(line, ".cuekit" | ".cuekit/" | "/.cuekit" | "/.cuekit/"))
}

/// Appends `.cuekit/` to `<dir>/.gitignore`, creating it if needed; a no-op when present. The
/// file is the repository's: read and written through [`crate::effects::project`], never through a link.
pub fn add_gitignore_entry(dir: &Path) -> crate::domain::error::Result<()> {
    let root = crate::effects::project::Root::new(dir)?;
    let file = Path::new(".gitignore");
    let existing = root.read_text(file)?.unwrap_or_default();
    if ignores_cuekit(&existing) {
        return Ok(());
    }
    let separator = if existing.is_empty() || existing.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    root.append(file, format!("{separator}.cuekit/\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmux_versions() {
        assert_eq!(parse_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_version("tmux next-3.5"), Some((3, 5)));
        assert_eq!(parse_version("tmux 2.9"), Some((2, 9)));
        assert!(parse_version("tmux 3.10") > Some(MIN_TMUX));
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn gitignore_entry_is_added_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target").unwrap();
        add_gitignore_entry(dir.path()).unwrap();
        add_gitignore_entry(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".gitignore")).unwrap(),
            "target\n.cuekit/\n"
        );
        assert!(ignores_cuekit("/.cuekit\n"));
        assert!(!ignores_cuekit(".cuekit.yaml\n"));
    }
}

//! What every benchmark shares: a sandbox — the tests' harness (tests/harness/: a temp HOME, a
//! project directory, a bin/ first on PATH and a private tmux server, so a run touches nothing of
//! the user's and leaves nothing running) seen the way the benchmarks use it — and the helpers
//! that turn timings into the printed figures.
#![allow(dead_code)]

#[path = "../../tests/harness/mod.rs"]
pub mod harness;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::Harness;

/// Variables of the caller's environment a benchmark's cuekit must not see: being inside
/// tmux or inside a cuekit task changes where tasks go.
pub const UNSET: [&str; 2] = ["TMUX", "CUEKIT_TASK_ID"];

pub struct Sandbox {
    /// The harness: its drop ends the sandbox's scheduler and monitors, the panes' processes
    /// and the tmux server.
    pub harness: Harness,
    /// The temp directory, canonical (tmux and cuekit report canonical paths).
    pub root: PathBuf,
    /// `root/project`: where cuekit runs.
    pub project: PathBuf,
    /// The private tmux server's socket name (`tmux -L`).
    pub socket: String,
}

impl Sandbox {
    /// `dirs` are the sub-directories a benchmark needs besides project, home and bin (`_name`
    /// named its temp directory and socket; the harness makes both unique).
    pub fn new(_name: &str, dirs: &[&str]) -> Sandbox {
        let harness = Harness::new();
        let root = harness.root().canonicalize().unwrap();
        for sub in dirs {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        Sandbox {
            project: harness.project.clone(),
            socket: harness.socket.clone(),
            root,
            harness,
        }
    }

    /// Writes an executable script at `relative` under the root.
    pub fn executable(&self, relative: &str, content: &str) {
        harness::write_executable(&self.root.join(relative), content);
    }

    /// The environment cuekit runs with (besides [`UNSET`]): the harness's.
    pub fn env(&self) -> Vec<(String, OsString)> {
        self.harness
            .cuekit()
            .get_envs()
            .filter_map(|(name, value)| Some((name.to_string_lossy().into_owned(), value?.into())))
            .collect()
    }

    /// `cuekit args` in the project, with the sandbox's environment and no stdin.
    pub fn cuekit(&self, args: &[&str]) -> Command {
        let mut command = self.harness.cuekit();
        command.args(args);
        for name in UNSET {
            command.env_remove(name);
        }
        command
    }

    /// `cuekit args`, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        stdout_of(self.cuekit(args))
    }

    /// `cuekit --json args`, parsed, whatever its exit status.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.cuekit(&all).output().unwrap();
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "{args:?}: {err}: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
    }

    /// `tmux args` on the sandbox's server.
    pub fn tmux_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]).args(args);
        command
    }

    /// `tmux args` on the sandbox's server; its stdout (empty if it failed).
    pub fn tmux(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.harness.tmux(args).stdout).into_owned()
    }
}
/// Runs `command`, which must succeed; its stdout.
pub fn stdout_of(mut command: Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

pub fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("{name} not on PATH"))
}

/// Runs a command to completion, which must succeed; returns its wall time.
pub fn measure(mut command: Command) -> Duration {
    // Output is not read: a full pipe would stall the command being measured.
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let start = Instant::now();
    let status = command.status().unwrap();
    let elapsed = start.elapsed();
    assert!(status.success(), "command failed: {command:?}");
    elapsed
}

pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

pub fn ms(duration: Duration) -> String {
    format!("{:.1} ms", millis(duration))
}

/// CPU seconds of `pid` from /proc: its own (utime + stime), and those of the children it
/// reaped (cutime + cstime).
pub fn cpu_seconds(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|err| panic!("process {pid} is gone: {err}"));
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<u64> = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    // After the name: state is index 0, so utime/stime/cutime/cstime are 11..=14.
    let own = (fields[11] + fields[12]) as f64 / tick;
    let reaped = (fields[13] + fields[14]) as f64 / tick;
    (own, reaped)
}

/// The share of one core (in %) `pid` used over `window`: its own, and with the processes it
/// ran and reaped (its tmux calls).
pub fn cpu_share(pid: u32, window: Duration) -> (f64, f64) {
    let (own_before, reaped_before) = cpu_seconds(pid);
    std::thread::sleep(window);
    let (own_after, reaped_after) = cpu_seconds(pid);
    let share = |seconds: f64| 100.0 * seconds / window.as_secs_f64();
    (
        share(own_after - own_before),
        share(own_after - own_before + reaped_after - reaped_before),
    )
}

/// A live process's peak resident set (`VmHWM` in /proc), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|err| panic!("process {pid} is gone: {err}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// A repository at `project` on `main` with `files` committed files spread over `folders`
/// folders, like a mid-sized project, and `.cuekit/` ignored.
pub fn committed_repo(project: &Path, files: usize, folders: usize) {
    harness::git::init_repo(project);
    for i in 0..files {
        let dir = project.join(format!("src/m{}", i % folders));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("// file {i}\n{}", "fn x() {}\n".repeat(20)),
        )
        .unwrap();
    }
    std::fs::write(project.join(".gitignore"), ".cuekit/\n").unwrap();
    harness::git::commit_all(project, "init");
}

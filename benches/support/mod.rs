//! What every benchmark shares: a sandbox (a temp HOME, a project directory, a bin/ first on
//! PATH and a private tmux server, so a run touches nothing of the user's and leaves nothing
//! running), and the helpers that turn timings into the printed figures.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Variables of the caller's environment a benchmark's cuekit must not see: being inside
/// tmux or inside a cuekit task changes where tasks go.
pub const UNSET: [&str; 2] = ["TMUX", "CUEKIT_TASK_ID"];

pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// The temp directory, canonical (tmux and cuekit report canonical paths).
    pub root: PathBuf,
    /// `root/project`: where cuekit runs.
    pub project: PathBuf,
    /// The private tmux server's socket name (`tmux -L`).
    pub socket: String,
}

impl Sandbox {
    /// `name` keeps this benchmark's temp directory and tmux socket apart from another's;
    /// `dirs` are the sub-directories it needs besides project, home and bin.
    pub fn new(name: &str, dirs: &[&str]) -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix(&format!("cuekit-bench-{name}-"))
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["project", "home", "bin"].iter().chain(dirs) {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        Sandbox {
            project: root.join("project"),
            socket: format!("ck-bench-{name}-{}", std::process::id()),
            root,
            _dir: dir,
        }
    }

    /// Writes an executable script at `relative` under the root.
    pub fn executable(&self, relative: &str, content: &str) {
        let path = self.root.join(relative);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The environment cuekit runs with (besides [`UNSET`]).
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        let home = self.root.join("home");
        let path = format!(
            "{}:{}",
            self.root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        vec![
            ("PATH", path.into()),
            ("XDG_DATA_HOME", home.join(".local/share").into()),
            ("XDG_CONFIG_HOME", home.join(".config").into()),
            ("HOME", home.into()),
            ("CUEKIT_TMUX_SOCKET", self.socket.clone().into()),
        ]
    }

    /// `cuekit args` in the project, with the sandbox's environment and no stdin.
    pub fn cuekit(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cuekit"));
        command
            .args(args)
            .current_dir(&self.project)
            .envs(self.env())
            .stdin(Stdio::null());
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
        self.tmux_command(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Sandbox {
    /// `kill-server` alone would leave the panes' processes running; the sandbox's scheduler
    /// and monitors go first, or a queued task would start on a server made anew.
    fn drop(&mut self) {
        let home = format!("HOME={}", self.root.join("home").display());
        let background: BTreeSet<u32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let read =
                    |name: &str| std::fs::read(format!("/proc/{pid}/{name}")).unwrap_or_default();
                let words = |bytes: Vec<u8>| -> Vec<Vec<u8>> {
                    bytes.split(|b| *b == 0).map(<[u8]>::to_vec).collect()
                };
                words(read("environ")).iter().any(|w| w == home.as_bytes())
                    && words(read("cmdline"))
                        .iter()
                        .any(|w| w == b"__scheduler" || w == b"__monitor")
            })
            .collect();
        cuekit::process::terminate(background, Duration::from_millis(200));
        let pids: BTreeSet<u32> = self
            .tmux(&["list-panes", "-a", "-F", "#{pane_pid}"])
            .lines()
            .filter_map(|pid| pid.parse().ok())
            .collect();
        cuekit::process::terminate(pids, Duration::from_millis(200));
        let _ = self.tmux(&["kill-server"]);
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

/// Runs git in `dir`, which must succeed.
pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository at `project` on `main` with `files` committed files spread over `folders`
/// folders, like a mid-sized project, and `.cuekit/` ignored.
pub fn committed_repo(project: &Path, files: usize, folders: usize) {
    git(project, &["init", "-q", "-b", "main"]);
    git(project, &["config", "user.name", "Bench"]);
    git(project, &["config", "user.email", "bench@example.com"]);
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
    git(project, &["add", "-A"]);
    git(project, &["commit", "-qm", "init"]);
}

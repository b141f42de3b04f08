//! Prints the figures behind fan-out; asserts nothing about time. Run with
//! `cargo bench --bench fanout`. Real tmux on a private socket, `--agent command` children.
//!
//! - report: what `cuekit report` costs the child (one `list-panes`, a `/proc` walk, a locked
//!   record update), and how long after a report `cuekit wait --until report` returns;
//! - team: `list`, `status` and `result` with `--team` over 20 members among 100 tasks.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

struct Bench {
    _dir: tempfile::TempDir,
    root: PathBuf,
    socket: String,
}

impl Bench {
    fn new() -> Bench {
        let dir = tempfile::Builder::new()
            .prefix("cuekit-bench-fanout-")
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["project", "home", "bin"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cuekit"), root.join("bin/cuekit")).unwrap();
        Bench {
            socket: format!("ck-bench-fanout-{}", std::process::id()),
            root,
            _dir: dir,
        }
    }

    fn cuekit(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cuekit"));
        command
            .args(args)
            .current_dir(self.root.join("project"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    self.root.join("bin").display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("HOME", self.root.join("home"))
            .env("XDG_DATA_HOME", self.root.join("home/.local/share"))
            .env("XDG_CONFIG_HOME", self.root.join("home/.config"))
            .env("CUEKIT_TMUX_SOCKET", &self.socket)
            .env_remove("TMUX")
            .env_remove("CUEKIT_TASK_ID")
            .stdin(Stdio::null());
        command
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
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

    fn submit(&self, args: &[&str]) -> String {
        let mut all = vec!["submit", "--agent", "command", "--mode", "batch"];
        all.extend_from_slice(args);
        self.json(&all)["id"].as_str().unwrap().to_string()
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let panes = Command::new("tmux")
            .args(["-L", &self.socket, "list-panes", "-a", "-F", "#{pane_pid}"])
            .output();
        let pids = panes
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for pid in pids.lines().filter_map(|pid| pid.parse().ok()) {
            cuekit::process::terminate_tree(pid, Duration::from_millis(200));
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn summary(label: &str, mut values: Vec<Duration>) {
    values.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{label:<44} median {:>7.1} ms   max {:>7.1} ms   (n={})",
        ms(values[values.len() / 2]),
        ms(*values.last().unwrap()),
        values.len()
    );
}

fn timed(command: &mut Command) -> Duration {
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let start = Instant::now();
    assert!(command.status().unwrap().success(), "{command:?}");
    start.elapsed()
}

const REPORTS: usize = 20;

fn report_round_trip(bench: &Bench) {
    // The child times each of its own reports (ns) and spaces them out, so every wait below
    // starts before the report it returns on.
    let durations = bench.root.join("report-ns");
    let script = format!(
        "i=0; while [ $i -lt {REPORTS} ]; do sleep 0.3; s=$(date +%s%N); \
         cuekit report --progress step $i; e=$(date +%s%N); echo $((e - s)) >> '{}'; \
         i=$((i + 1)); done; sleep 600",
        durations.display()
    );
    let id = bench.submit(&["--", "sh", "-c", &script]);
    let mut latencies = Vec::new();
    while latencies.len() < REPORTS {
        let waited = bench.json(&["wait", &id, "--until", "report", "--timeout", "10s"]);
        let returned = SystemTime::now();
        let at = waited["tasks"][0]["last_report"]["at"].as_str().unwrap();
        let at = humantime::parse_rfc3339(at).unwrap();
        latencies.push(returned.duration_since(at).unwrap_or_default());
    }
    let own: Vec<Duration> = std::fs::read_to_string(&durations)
        .unwrap()
        .lines()
        .map(|ns| Duration::from_nanos(ns.parse().unwrap()))
        .collect();
    summary("cuekit report (as the child sees it)", own);
    summary("report -> wait --until report returns", latencies);
}

fn team_operations(bench: &Bench) {
    for n in 0..100 {
        let team = if n % 5 == 0 { "bench-team" } else { "" };
        let mut args = vec![];
        if !team.is_empty() {
            args.extend(["--team", team]);
        }
        args.extend(["--", "sleep", "600"]);
        bench.submit(&args);
    }
    for (label, args) in [
        (
            "list --team (20 of 100 tasks)",
            vec!["list", "--team", "bench-team"],
        ),
        (
            "status --team (20 of 100 tasks)",
            vec!["status", "--team", "bench-team"],
        ),
        (
            "result --team (20 of 100 tasks)",
            vec!["result", "--team", "bench-team"],
        ),
        (
            "list --all (100 tasks, for comparison)",
            vec!["list", "--all"],
        ),
    ] {
        let runs: Vec<Duration> = (0..10).map(|_| timed(&mut bench.cuekit(&args))).collect();
        summary(label, runs);
    }
}

fn main() {
    // `cargo bench` passes --bench; nothing to filter.
    let bench = Bench::new();
    report_round_trip(&bench);
    team_operations(&bench);
}

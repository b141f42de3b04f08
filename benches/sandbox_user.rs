//! Prints what running a sandboxed child of root's as the sandbox's uid (65534, dropped to by
//! `setpriv` inside bubblewrap; `domain::sandbox_user`) adds to a sandboxed submit:
//! - each start: bubblewrap's `true` as root, plain (`--cap-drop ALL`) against the same with
//!   the drop (`--cap-add` SETUID/SETGID/SETPCAP, `setpriv … -- true`);
//! - once per task, at its creation: the hand-over of its checkout and git dir to that uid
//!   (`effects::owner::hand_over_tree`), on trees of 1,000 and 10,000 files;
//! - end to end: `submit --sandbox --worktree` in a repository of 1,000 files, and the time from
//!   it to the child's first output (the drop and the hand-over included).
//!
//! Asserts nothing about time. Run as root (what it measures happens only for root) with
//! `cargo bench --bench figures -- sandbox_user`: real tmux, bubblewrap, setpriv, git.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::harness::git::{commit_all, init_repo};
use crate::support::harness::sh_task;
use crate::support::{Sandbox, measure, median, ms};

const RUNS: usize = 30;

fn bwrap(dropped: bool) -> Command {
    let mut command = Command::new("bwrap");
    command.args(["--die-with-parent", "--cap-drop", "ALL"]);
    if dropped {
        for cap in ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"] {
            command.args(["--cap-add", cap]);
        }
    }
    command.args([
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "1777",
        "--tmpfs",
        "/tmp",
        "--",
    ]);
    if dropped {
        command.args(cuekit::domain::sandbox_user::drop_words(Some(
            &cuekit::domain::sandbox_user::RunAs::unprivileged(PathBuf::from("/usr/bin/setpriv")),
        )));
    }
    command.arg("/bin/true");
    command
}

fn a_tree(root: &Path, files: usize) {
    for at in 0..files {
        let dir = root.join(format!("d{}", at / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{at}.txt")), format!("{at}\n")).unwrap();
    }
}

fn hand_over(files: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        a_tree(dir.path(), files);
        let started = Instant::now();
        cuekit::effects::owner::hand_over_tree(dir.path()).unwrap();
        times.push(started.elapsed());
    }
    median(times)
}

fn end_to_end(bench: &Sandbox) -> (Duration, Duration) {
    init_repo(&bench.project);
    a_tree(&bench.project, 1000);
    commit_all(&bench.project, "a thousand files");
    let (mut submits, mut firsts) = (Vec::new(), Vec::new());
    for run in 0..10 {
        let marker = format!("RUN{run}");
        let script = format!("echo {marker}-UP $(id -u)");
        let mut args = vec!["--json", "submit", "--sandbox", "--worktree"];
        args.extend(sh_task(&script, &["--mode", "batch"]));
        let started = Instant::now();
        let output = bench.cuekit(&args).output().unwrap();
        submits.push(started.elapsed());
        let view: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
        let transcript = PathBuf::from(view["transcript"].as_str().expect("a transcript"));
        loop {
            let text = std::fs::read_to_string(&transcript).unwrap_or_default();
            if text.contains(&format!("{marker}-UP")) {
                firsts.push(started.elapsed());
                assert!(
                    text.contains(&format!("{marker}-UP 65534")),
                    "not the sandbox's uid: {text}"
                );
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "no output");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    (median(submits), median(firsts))
}

pub fn main() {
    assert!(
        cuekit::effects::owner::is_root(),
        "run this benchmark as root: the drop happens only for root"
    );
    println!("sandbox user (root's sandboxed child as uid 65534), medians");
    let plain = median((0..RUNS).map(|_| measure(bwrap(false))).collect());
    let dropped = median((0..RUNS).map(|_| measure(bwrap(true))).collect());
    println!(
        "  bwrap true, plain:        {}\n  bwrap true, dropped:      {}  (+{:.1} ms a start)",
        ms(plain),
        ms(dropped),
        (dropped.as_secs_f64() - plain.as_secs_f64()) * 1000.0
    );
    for files in [1000, 10_000] {
        println!(
            "  hand-over of {files:>6} files: {}  (once, at the task's creation)",
            ms(hand_over(files))
        );
    }
    let bench = Sandbox::new("sandbox-user", &[]);
    let (submit, first) = end_to_end(&bench);
    println!(
        "  submit --sandbox --worktree (1,000 files): {}; to the child's first output: {}",
        ms(submit),
        ms(first)
    );
}

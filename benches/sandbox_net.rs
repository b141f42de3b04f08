//! Prints what a sandbox's network namespace of its own (bubblewrap `--unshare-net`, slirp4netns
//! attached by `cuekit __net`) adds, against a sandbox that shares the machine's network (the
//! same submit with no slirp4netns on PATH): to `submit --sandbox`, to the time from `submit` to
//! the child's first output, and to the child's first outbound connection (to a listener on an
//! address of this machine that is not loopback, timed inside the child); and bubblewrap's probe
//! `true` alone and under the supervisor. Target: at most 30 ms added to each. Asserts nothing
//! about time. Run with `cargo bench --bench figures -- sandbox_net`: real tmux, bubblewrap, slirp4netns.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::harness::net::{listen, outside_address};
use crate::support::harness::sh_task;
use crate::support::{Sandbox, measure, median, ms};

const RUNS: usize = 15;

/// One submit: its time, the time to the child's first output, and the connection's time as
/// the child measured it.
struct Run {
    submit: Duration,
    first_output: Duration,
    connect: Duration,
}

fn run(bench: &Sandbox, path: &str, target: (&str, u16), marker: &str) -> Run {
    let script = format!(
        "echo {marker}-UP; python3 -c \"import socket, time; t = time.perf_counter(); \
         socket.create_connection(('{}', {}), 5).close(); \
         print('{marker}-CONNECT %.3f' % ((time.perf_counter() - t) * 1000))\"; sleep 600",
        target.0, target.1
    );
    let mut args = vec!["--json", "submit", "--sandbox"];
    args.extend(sh_task(&script, &["--mode", "batch"]));
    let started = Instant::now();
    let output = bench.cuekit(&args).env("PATH", path).output().unwrap();
    let submit = started.elapsed();
    let view: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
    let transcript = PathBuf::from(view["transcript"].as_str().expect("a transcript"));
    let mut first_output = None;
    loop {
        let text =
            String::from_utf8_lossy(&std::fs::read(&transcript).unwrap_or_default()).into_owned();
        if first_output.is_none() && text.contains(&format!("{marker}-UP")) {
            first_output = Some(started.elapsed());
        }
        let said = format!("{marker}-CONNECT ");
        if let Some(at) = text.find(&said) {
            let figure: f64 = text[at + said.len()..]
                .split_whitespace()
                .next()
                .and_then(|word| word.parse().ok())
                .unwrap_or_else(|| panic!("no figure in {text}"));
            return Run {
                submit,
                first_output: first_output.unwrap_or_else(|| started.elapsed()),
                connect: Duration::from_secs_f64(figure / 1000.0),
            };
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no connection from {view}: {text}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A folder of links to every program on PATH but slirp4netns: cuekit run with it finds no
/// stack, and its sandboxes share the machine's network.
fn path_without_slirp(bench: &Sandbox) -> String {
    let folder = bench.root.join("noslirp");
    std::fs::create_dir_all(&folder).unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if name != "slirp4netns" && !folder.join(&name).exists() {
                let _ = std::os::unix::fs::symlink(entry.path(), folder.join(&name));
            }
        }
    }
    format!("{}:{}", bench.harness.bin.display(), folder.display())
}

pub fn main() {
    // Fails loudly without them: scripts/test installs both.
    let bwrap = crate::support::which("bwrap");
    let slirp = crate::support::which("slirp4netns");
    let bench = Sandbox::new("sandbox-net", &[]);
    let outside = outside_address();
    let port = listen(outside).expect("a listener on this machine's outside address");
    let host = outside.to_string();
    let own_path = format!(
        "{}:{}",
        bench.harness.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shared_path = path_without_slirp(&bench);
    let (mut shared, mut own) = (Vec::new(), Vec::new());
    // Interleaved, so a slow moment of the machine hits both alike.
    for i in 0..RUNS {
        shared.push(run(
            &bench,
            &shared_path,
            (&host, port),
            &format!("SHARED{i}"),
        ));
        own.push(run(&bench, &own_path, (&host, port), &format!("OWN{i}")));
    }
    let column = |runs: &[Run], pick: fn(&Run) -> Duration| median(runs.iter().map(pick).collect());
    let line = |what: &str, pick: fn(&Run) -> Duration| {
        let (a, b) = (column(&shared, pick), column(&own, pick));
        println!(
            "  {what:<32} {:>9} {:>9} ({}{})",
            ms(a),
            ms(b),
            if b >= a { "+" } else { "-" },
            ms(b.abs_diff(a))
        );
    };
    println!("a sandbox's own network (slirp4netns), median of {RUNS}; target ≤ 30 ms added:");
    println!("  {:<32} {:>9} {:>9}", "", "shared", "own");
    line("submit --sandbox", |r| r.submit);
    line("submit → first output", |r| r.first_output);
    line("first outbound connection", |r| r.connect);
    let probe = |under: bool| {
        median(
            (0..RUNS)
                .map(|_| measure(probe_command(&bwrap, under.then_some(slirp.as_path()))))
                .collect(),
        )
    };
    let (alone, supervised) = (probe(false), probe(true));
    println!(
        "  {:<32} {:>9} {:>9} (+{})",
        "`true` in bubblewrap's probe",
        ms(alone),
        ms(supervised),
        ms(supervised.saturating_sub(alone))
    );
}

/// bubblewrap's probe running `true`, alone or in a namespace of its own with slirp4netns
/// attached by the supervisor.
fn probe_command(bwrap: &Path, slirp: Option<&Path>) -> Command {
    let Some(slirp) = slirp else {
        let mut command = Command::new(bwrap);
        command.args(cuekit::domain::sandbox::PROBE);
        return command;
    };
    let stack = cuekit::domain::sandbox_net::Stack {
        cuekit: PathBuf::from(env!("CARGO_BIN_EXE_cuekit")),
        slirp: slirp.to_path_buf(),
        resolv: None,
        // SAFETY: geteuid reads this process's credentials.
        confined: unsafe { libc::geteuid() } == 0,
    };
    let words = cuekit::domain::sandbox_net::probe_words(&bwrap.to_string_lossy(), &stack);
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]);
    command
}

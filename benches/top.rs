//! Prints what `cuekit top` costs with 300 running tasks; asserts nothing about time. Run with
//! `cargo bench --bench figures -- top` (release build). Real tmux on a private socket; the tasks are
//! `--agent command` children that print a line and sleep, so the figures are cuekit's and
//! tmux's.
//!
//! - idle CPU: `top`'s own utime + stime from /proc over 10 s, and with the tmux processes it
//!   ran and reaped (cutime + cstime), as a share of one core (budget: 2%);
//! - keystroke → screen: from `send-keys j` to the selection mark having moved in
//!   `capture-pane` (budget: 50 ms; the figure includes spawning tmux twice per sample);
//! - first screen: from starting `top` to all 300 rows counted in its header;
//! - peak RSS of the `top` process after all of the above (target: 10 MiB).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::harness::sh_task;
use crate::support::{Sandbox, UNSET, cpu_share, millis, peak_rss_kib};

const TASKS: usize = 300;

struct Bench {
    sandbox: Sandbox,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            sandbox: Sandbox::new("top", &[]),
        }
    }

    fn submit(&self, n: usize) {
        let marker = format!("echo child-{n}; exec sleep 3600");
        let status = self
            .sandbox
            .cuekit(&[&["submit"][..], &sh_task(&marker, &[])].concat())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn tmux(&self, args: &[&str]) -> String {
        self.sandbox.tmux(args)
    }

    /// `cuekit top` in a 200×50 pane, as a person outside tmux runs it.
    fn start_top(&self) {
        let quote = |value: &str| cuekit::domain::launch::single_quote(value).unwrap();
        let mut script = format!("unset TMUX_PANE {}\n", UNSET.join(" "));
        for (name, value) in self.sandbox.env() {
            script.push_str(&format!(
                "export {name}={}\n",
                quote(&value.to_string_lossy())
            ));
        }
        script.push_str(&format!(
            "cd {}\nexec {} top\n",
            quote(&self.sandbox.project.to_string_lossy()),
            quote(env!("CARGO_BIN_EXE_cuekit"))
        ));
        let path = self.sandbox.root.join("top.sh");
        std::fs::write(&path, script).unwrap();
        self.tmux(&[
            "new-session",
            "-d",
            "-s",
            "top",
            "-x",
            "200",
            "-y",
            "50",
            "/bin/sh",
            &path.to_string_lossy(),
        ]);
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "=top:"])
    }

    fn wait_screen(&self, condition: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let shown = self.screen();
            if condition(&shown) {
                return shown;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "top never got there:\n{shown}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

fn selected_line(screen: &str) -> Option<String> {
    screen
        .lines()
        .find(|line| line.starts_with('▶'))
        .map(str::to_string)
}

fn top_pid(bench: &Bench) -> u32 {
    bench
        .tmux(&["list-panes", "-t", "=top:", "-F", "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap()
}

pub fn main() {
    let bench = Bench::new();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let bench = &bench;
            scope.spawn(move || {
                for n in (worker..TASKS).step_by(4) {
                    bench.submit(n);
                }
            });
        }
    });
    println!(
        "top: {TASKS} running tasks submitted in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    bench.start_top();
    let running = format!("{TASKS} running");
    bench.wait_screen(|s| s.contains(&running));
    println!(
        "top: first screen with all {TASKS} rows after {} ms",
        started.elapsed().as_millis()
    );

    // Let start-up settle, then measure a quiet stretch: only the 1 s refreshes run.
    std::thread::sleep(Duration::from_secs(2));
    let pid = top_pid(&bench);
    let (own, with_tmux) = cpu_share(pid, Duration::from_secs(10));
    println!(
        "top: idle CPU with {TASKS} running tasks: {own:.2}% of one core (cuekit top), {with_tmux:.2}% with the tmux calls it ran (budget 2%)"
    );

    let mut samples: Vec<Duration> = Vec::new();
    for i in 0..30 {
        let before = selected_line(&bench.screen());
        let key = if i % 2 == 0 { "j" } else { "k" };
        let sent = Instant::now();
        bench.tmux(&["send-keys", "-t", "=top:", key]);
        bench.wait_screen(|s| selected_line(s) != before);
        samples.push(sent.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
    samples.sort();
    println!(
        "top: keystroke → screen over {} keys: median {:.1} ms, p90 {:.1} ms, max {:.1} ms (budget 50 ms; includes two tmux spawns per sample)",
        samples.len(),
        millis(samples[samples.len() / 2]),
        millis(samples[samples.len() * 9 / 10]),
        millis(*samples.last().unwrap())
    );
    println!(
        "top: peak RSS with {TASKS} running tasks, after the keys: {} kB (target <= 10240)",
        peak_rss_kib(pid)
    );
    bench.tmux(&["send-keys", "-t", "=top:", "q"]);
}

//! Prints what the bounded runner (`effects::bounded`, issue 41) costs against a bare
//! `Command::output()`: the same program run both ways, one after the other, many times —
//! `/bin/true`, and `/bin/sh -c 'printf …'` printing 64 KiB. The runner adds a thread that waits
//! for the program's end without reaping it, a reader thread a stream, and a `killpg` before the
//! reap. Target: at most 1 ms more a run. Asserts nothing about time. Run with
//! `cargo bench --bench figures -- runner` (release build).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuekit::effects::bounded::Bounded;

const RUNS: usize = 300;

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

/// The median of `RUNS` calls of `run`, after a few to warm up.
fn timed(mut run: impl FnMut()) -> Duration {
    for _ in 0..10 {
        run();
    }
    median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                run();
                start.elapsed()
            })
            .collect(),
    )
}

fn compare(what: &str, program: &str, args: &[&str]) {
    let bare = timed(|| {
        let out = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
    });
    let bounded = timed(|| {
        let ran = Bounded::new(program, Duration::from_secs(30))
            .args(args)
            .run()
            .unwrap();
        assert!(ran.success());
    });
    let extra = bounded.saturating_sub(bare);
    println!(
        "{what}: Command::output() {} · Bounded::run() {} · the runner's cost {} a run \
         (target ≤ 1 ms; median of {RUNS})",
        ms(bare),
        ms(bounded),
        ms(extra)
    );
}

pub fn main() {
    compare("/bin/true", "/bin/true", &[]);
    compare(
        "64 KiB on stdout",
        "/bin/sh",
        &["-c", "head -c 65536 /dev/zero"],
    );
}

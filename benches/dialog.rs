//! An interactive child's permission dialog answered from outside, with the real Gemini CLI
//! offline (canned model replies) in real tmux, printed as figures:
//!
//! - approve -> dialog closed: the whole `cuekit approve` command against a real dialog, until
//!   the screen shows it closed (its receipt); target <= 300 ms;
//! - key -> closed: the part of it from the digit typed to the screen without the dialog (the
//!   approval's `dialog.closed_after_ms`), which is the agent's own drawing.
//!
//! Needs the Gemini CLI: `CUEKIT_TEST_GEMINI`, else `.tools/node_modules/.bin/gemini` (what
//! `scripts/test` installs). Without one it says so and measures nothing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::harness::{Harness, MODEL, canned_shell_call, canned_text};
use crate::support::{median, ms};

const DIALOGS: usize = 5;

pub fn main() {
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/node_modules/.bin/gemini");
    if std::env::var_os("CUEKIT_TEST_GEMINI").is_none() && !installed.is_file() {
        println!(
            "dialog: skipped: no Gemini CLI (set CUEKIT_TEST_GEMINI, or run scripts/test once to install it)"
        );
        return;
    }
    let h = Harness::new().with_real_gemini(&[
        canned_shell_call("echo hi > f.txt"),
        canned_text("Done: wrote f.txt."),
    ]);
    let ids: Vec<String> = (0..DIALOGS)
        .map(|n| {
            let dir = h.project.join(format!("t{n}"));
            std::fs::create_dir_all(&dir).unwrap();
            let dir = dir.to_string_lossy().into_owned();
            h.submit(&[
                "--cwd",
                &dir,
                "--model",
                MODEL,
                "--no-skip-permissions",
                "--sandbox=none",
                "Write hi to f.txt",
            ])
        })
        .collect();
    let mut walls = Vec::new();
    let mut closes = Vec::new();
    for id in &ids {
        let (waited, code) =
            h.json(&["wait", id, "--until", "input-required", "--timeout", "120s"]);
        assert_eq!(code, 0, "{waited}");
        assert_eq!(
            waited["tasks"][0]["reason"], "permission_prompt",
            "{waited}"
        );
        let started = Instant::now();
        let (approval, code) = h.json(&["approve", id, "--allow"]);
        walls.push(started.elapsed());
        assert_eq!(code, 0, "{approval}");
        let closed = approval["dialog"]["closed_after_ms"].as_u64().unwrap();
        closes.push(Duration::from_millis(closed));
    }
    println!(
        "dialog approve -> dialog closed (the whole command): median {}, max {} over {DIALOGS} (target <= 300 ms)",
        ms(median(walls.clone())),
        ms(*walls.iter().max().unwrap())
    );
    println!(
        "dialog key -> closed (the agent redrawing): median {}, max {} over {DIALOGS}",
        ms(median(closes.clone())),
        ms(*closes.iter().max().unwrap())
    );
    for id in &ids {
        let _ = h.cuekit().args(["cancel", "--grace", "0s", id]).output();
    }
}

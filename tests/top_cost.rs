//! What one dashboard refresh costs in tmux calls at 300 running tasks: a `tmux` shim on PATH
//! logs every invocation, and the refresh (`ops::board`, as `cuekit top` calls it) runs in
//! this process. The budget is two calls whatever the number of tasks; screens that did not
//! change since the last refresh cost none.
//!
//! A binary of its own, outside tests/integration: the refresh runs in this process, which
//! sets its own HOME, PATH, XDG_DATA_HOME and tmux socket for it (`std::env::set_var`), and
//! would change them under every other test of a shared process.

#[path = "harness/mod.rs"]
mod harness;

use std::path::Path;

use harness::Harness;

const TASKS: usize = 300;

fn calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_refresh_with_a_preview_costs_at_most_two_tmux_calls_at_300_tasks() {
    let h = Harness::new();
    let mut ids: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|worker| {
                let h = &h;
                scope.spawn(move || {
                    (worker..TASKS - 1)
                        .step_by(6)
                        .map(|n| {
                            let marker = format!("echo child-{n}; exec sleep 600");
                            h.submit(&["--agent", "command", "--", "sh", "-c", &marker])
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let batch = h.submit_batch_sh("echo batch-child; exec sleep 600");
    ids.push(batch.clone());
    let interactive = ids[0].clone();

    // The shim goes first on this process's PATH, before anything here looks tmux up.
    let (shim_dir, log) = h.tmux_shim("$*");
    let path = format!("{}:{}", shim_dir.display(), std::env::var("PATH").unwrap());
    // SAFETY: this file's only test sets these before it starts any thread that reads them.
    unsafe {
        std::env::set_var("PATH", path);
        std::env::set_var("CUEKIT_TMUX_SOCKET", &h.socket);
        std::env::set_var("HOME", &h.home);
        std::env::set_var("XDG_DATA_HOME", h.home.join(".local/share"));
    }

    let mut screens = cuekit::ops::ScreenCache::default();
    let mut refresh = |selected: &str| {
        let before = calls(&log).len();
        let board =
            cuekit::ops::board(false, &h.project, Some(selected), 20, &mut screens).unwrap();
        let made = calls(&log)[before..].to_vec();
        println!("refresh previewing {selected}: {} tmux calls", made.len());
        assert_eq!(board.rows.len(), TASKS);
        assert!(
            board
                .rows
                .iter()
                .all(|row| row.view.status == cuekit::domain::status::Status::Running),
            "every task is running"
        );
        let preview = board.preview.expect("the selected task is previewed");
        assert_eq!(preview.task_id, selected);
        assert!(preview.live, "a running task shows its live screen");
        (made, preview.lines)
    };
    for (selected, marker) in [
        (&interactive, "child-0"),
        (&batch, "batch-child"),
        (&interactive, "child-0"),
    ] {
        let (made, lines) = refresh(selected);
        assert!(made.len() <= 2, "{} calls: {made:#?}", made.len());
        assert!(lines.iter().any(|line| line.contains(marker)), "{lines:?}");
    }

    // Screens whose window printed nothing since they were captured are not captured again:
    // once every capture is a second older than the last output, a refresh is one call.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    refresh(&interactive);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (made, lines) = refresh(&interactive);
    assert_eq!(made.len(), 1, "only the pane listing: {made:#?}");
    assert!(
        lines.iter().any(|line| line.contains("child-0")),
        "{lines:?}"
    );
    // A pane that prints is captured again, and its new screen shows.
    let (pane, _) = h.pane(&interactive);
    assert!(
        h.tmux(&["send-keys", "-t", &pane, "-l", "typed-later"])
            .status
            .success()
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (made, lines) = refresh(&interactive);
    assert_eq!(made.len(), 2, "{made:#?}");
    assert!(
        lines.iter().any(|line| line.contains("typed-later")),
        "{lines:?}"
    );
}

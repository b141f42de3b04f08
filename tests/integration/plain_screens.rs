//! `cuekit list` and `cuekit top` as a person sees them: run in a real tmux client at 80×24
//! and 120×40, captured, and compared with snapshots (tests/integration/snapshots/). The
//! tasks cover what a person meets: a permission dialog, a finished turn, a running task, a
//! failed and a completed one. Ids, ages and the temporary folder are steadied first.

use std::path::Path;

use crate::harness::{Harness, install_executable, limits};

/// A `gemini` that draws a captured screen of the real CLI and waits: its permission dialog
/// when the prompt says so, else its prompt after a finished turn.
pub(crate) fn screen_drawing_gemini(h: &Harness) {
    let screens = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens");
    let script = h.bin.join("gemini-screens");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *permission*) cat '{0}/gemini-permission.txt' ;;\n  \
             *) cat '{0}/gemini-idle.txt' ;;\nesac\nexec sleep 600\n",
            screens.display()
        ),
    )
    .unwrap();
    install_executable(&script, &h.bin.join("gemini"));
}

/// Five tasks in five states; their ids, in the order a person should see them.
fn five_tasks(h: &Harness) -> Vec<String> {
    screen_drawing_gemini(h);
    let asks = h.submit(&["Write f.txt: needs a permission to run a shell command"]);
    let idle = h.submit(&["Review the parser and say what is missing"]);
    let running = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    let failed = h.submit(&["--agent", "command", "--", "sh", "-c", "exit 3"]);
    h.wait_until(&failed, "the failure", limits::TASK, || {
        h.status(&failed)["status"] == "failed"
    });
    let done = h.submit(&["--agent", "command", "--", "true"]);
    h.wait_until(&done, "the completion", limits::TASK, || {
        h.status(&done)["status"] == "completed"
    });
    for (id, reason) in [(&asks, "permission_prompt"), (&idle, "idle_at_prompt")] {
        h.wait_until(id, reason, limits::AGENT, || {
            h.status(id)["reason"] == reason
        });
    }
    vec![asks, idle, running, failed, done]
}

/// The screen with what changes from run to run replaced: ids by `t_task<N>` (same width),
/// ages by `Ns` padded to the width they had, the temporary folder by a fixed word.
fn steady(h: &Harness, shown: &str, ids: &[String]) -> String {
    let mut text = shown.to_string();
    for (n, id) in ids.iter().enumerate() {
        text = text.replace(id.as_str(), &format!("t_task{n:0>8}"));
    }
    let root = h.project.parent().unwrap().display().to_string();
    text = text.replace(&root, "/TMP");
    text.lines()
        .map(steady_ages)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// `12s   ` → `Ns    `: a number with a unit, and the spaces after it, keep their width.
fn steady_ages(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while !rest.is_empty() {
        let word_end = rest.find(' ').unwrap_or(rest.len());
        let (word, after) = rest.split_at(word_end);
        let digits = word.chars().take_while(char::is_ascii_digit).count();
        let is_age = digits > 0
            && word.len() == digits + 1
            && matches!(word.as_bytes()[digits], b's' | b'm' | b'h' | b'd');
        if is_age {
            let spaces = after.len() - after.trim_start_matches(' ').len();
            let width = word.len() + spaces;
            out.push_str(&format!("{:<width$}", "Ns"));
            rest = &after[spaces..];
            if spaces == 0 {
                continue;
            }
        } else {
            out.push_str(word);
            let spaces = after.len() - after.trim_start_matches(' ').len();
            out.push_str(&after[..spaces]);
            rest = &after[spaces..];
        }
    }
    out
}

/// The screen once two captures a refresh apart agree (ages steadied): a capture may fall in
/// the middle of a redraw.
fn settled(h: &Harness, session: &str, ids: &[String]) -> String {
    let mut last = String::new();
    loop {
        let shown = h.wait_pane(session, "a screen", |_| true);
        if steady(h, &shown, ids) == steady(h, &last, ids) {
            return shown;
        }
        last = shown;
        std::thread::sleep(std::time::Duration::from_millis(400));
    }
}

#[test]
fn list_at_80_and_120_columns_leads_with_what_needs_you_and_never_wraps() {
    let h = Harness::new().with_fake_gemini();
    let ids = five_tasks(&h);
    for (width, height) in [(80u16, 24u16), (120, 40)] {
        let session = format!("list{width}");
        h.in_terminal(&session, "list", (width, height), false);
        let shown = h.wait_pane(&session, "the listing", |s| s.contains("exited with 0"));
        let rows: Vec<&str> = shown.lines().filter(|l| l.starts_with("t_")).collect();
        let order: Vec<String> = rows
            .iter()
            .map(|row| row.split_whitespace().next().unwrap().to_string())
            .collect();
        assert_eq!(
            order, ids,
            "needs-you first, then running, failed, completed:\n{shown}"
        );
        assert!(
            shown.contains("asks to run `echo hi > f.txt`"),
            "the question:\n{shown}"
        );
        assert!(shown.contains("finished its turn"), "{shown}");
        for internal in [
            "input_required",
            "idle_at_prompt",
            "nonzero_exit",
            "permission_prompt",
        ] {
            assert!(!shown.contains(internal), "{internal} shown:\n{shown}");
        }
        insta::assert_snapshot!(format!("list_{width}x{height}"), steady(&h, &shown, &ids));
    }
}

#[test]
fn top_at_80_and_120_columns_puts_the_permission_first_and_shows_what_it_asks() {
    let h = Harness::new().with_fake_gemini();
    let ids = five_tasks(&h);
    for (width, height) in [(80u16, 24u16), (120, 40)] {
        let session = format!("top{width}");
        h.in_terminal(&session, "top --refresh 300ms", (width, height), false);
        h.wait_pane(&session, "every task and the question", |s| {
            ids.iter().all(|id| s.contains(id.as_str())) && s.contains("it asks: ")
        });
        let shown = settled(&h, &session, &ids);
        let first = shown
            .lines()
            .find(|l| ids.iter().any(|id| l.contains(id.as_str())))
            .unwrap();
        assert!(
            first.contains(&ids[0]),
            "the permission row leads:\n{shown}"
        );
        assert!(shown.contains("p answer"), "{shown}");
        for line in shown.lines() {
            assert!(line.chars().count() <= width as usize, "{line}");
        }
        insta::assert_snapshot!(format!("top_{width}x{height}"), steady(&h, &shown, &ids));
        assert!(
            h.tmux(&["send-keys", "-t", &format!("={session}:"), "q"])
                .status
                .success()
        );
        h.wait_pane(&session, "top gone", |s| s.contains("exited with 0"));
    }
}

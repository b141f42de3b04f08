//! An interactive child's permission dialog answered from outside (`cuekit approve`): the real
//! Gemini CLI 0.61 offline, its real dialog in real tmux. The answer is the option's digit,
//! typed only while the screen still shows the same dialog; a receipt only when it closes.
//! (`top` and the web page answer through the same operation: tests in top.rs and web.rs.)

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::{Harness, MODEL, canned_shell_call, canned_text, limits, poll};

/// The placeholder of Gemini's empty input line: gone once anything is typed into it.
const EMPTY_INPUT: &str = "Type your message";

/// A real Gemini task that asks to run `echo hi > f.txt` and waits on its permission dialog.
pub(crate) fn on_its_dialog() -> (Harness, String) {
    let h = Harness::new().with_real_gemini(&[
        canned_shell_call("echo hi > f.txt"),
        canned_text("Done: wrote f.txt."),
    ]);
    let id = h.submit(&[
        "--model",
        MODEL,
        "--no-skip-permissions",
        "--sandbox=none",
        "Write hi to f.txt",
    ]);
    let waited = h.wait_input_required(&id, limits::AGENT);
    assert_eq!(waited["reason"], "permission_prompt", "{}", h.screen(&id));
    (h, id)
}

#[test]
fn an_interactive_dialog_is_allowed_from_the_cli_by_its_digit_once() {
    let (h, id) = on_its_dialog();
    // What it asks is a request with the dialog's own options.
    let status = h.status(&id);
    let request = &status["request"];
    assert!(
        request["tool"]["id"]
            .as_str()
            .is_some_and(|tool| tool.starts_with("screen-")),
        "{status}"
    );
    let names: Vec<&str> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Allow once",
            "Allow for this session",
            "No, suggest changes (esc)"
        ],
        "{status}"
    );
    assert!(
        status["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains(&format!("cuekit approve {id}"))),
        "{status}"
    );
    assert!(!h.project.join("f.txt").exists());
    let (approval, code) = h.json(&["approve", &id]);
    assert_eq!(code, 0, "{approval}\n{}", h.screen(&id));
    assert_eq!(approval["option"]["name"], "Allow once", "{approval}");
    assert_eq!(approval["option"]["kind"], "allow_once", "{approval}");
    assert_eq!(approval["dialog"]["key"], "1", "{approval}");
    assert!(
        approval["dialog"]["asked"]
            .as_str()
            .unwrap()
            .starts_with("Allow execution of [Shell]? (Shell echo hi > f.txt)"),
        "{approval}"
    );
    // The turn goes on: the tool runs and the child answers.
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert!(h.project.join("f.txt").exists());
    assert!(h.ok(&["logs", &id]).contains("Done: wrote f.txt."));
    // Nothing is left to answer: a second approve types nothing into the prompt.
    let output = h.run(&["approve", &id]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("waits on no permission dialog"), "{stderr}");
    assert!(h.screen(&id).contains(EMPTY_INPUT), "{}", h.screen(&id));
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert_eq!(events.matches("\"cuekit_approve\"").count(), 1, "{events}");
}

#[test]
fn an_interactive_dialog_is_rejected_from_the_cli_and_the_tool_never_runs() {
    let (h, id) = on_its_dialog();
    let answer = h.ok(&["approve", &id, "--reject"]);
    assert!(
        answer.contains("No, suggest changes (esc) (reject_once)")
            && answer.contains("typed 3 into its dialog; the dialog closed after"),
        "{answer}"
    );
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert_eq!(h.status(&id)["reason"], "idle_at_prompt");
    assert!(!h.project.join("f.txt").exists(), "a rejected tool ran");
}

/// An `approve` killed after its key went and before the dialog was seen to close (the
/// receipt's wait): the tool runs, and what was typed is on record all the same.
#[test]
fn an_approve_killed_after_its_key_leaves_the_key_on_record() {
    let (h, id) = on_its_dialog();
    let mut approver = h.cuekit().args(["approve", &id]).spawn().unwrap();
    let events = h.task_dir(&id).join("events.jsonl");
    let typed = || {
        std::fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .find(|line| line.contains("\"cuekit_approve_typed\""))
            .map(str::to_string)
    };
    assert!(
        poll(limits::TASK, || typed().is_some()),
        "the key never went on record"
    );
    let _ = approver.kill();
    let _ = approver.wait();
    let line: serde_json::Value = serde_json::from_str(&typed().unwrap()).unwrap();
    assert_eq!(line["key"], "1", "{line}");
    assert!(
        line["asked"]
            .as_str()
            .unwrap()
            .starts_with("Allow execution of [Shell]?"),
        "{line}"
    );
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert!(h.project.join("f.txt").exists());
}

/// Whether process `pid` holds `path` open.
fn holds_open(pid: u32, path: &Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
}

/// The dialog closes on its own (the person at the terminal pressed Esc) after `approve` read
/// it and before its key: the screen read again just before the key shows no dialog, so
/// nothing is typed into the prompt, and `approve` says why.
/// A `gemini` stand-in showing Gemini's own permission dialog (captured from 0.61.0) that, each
/// time the first path returned appears, redraws it in two writes 400 ms apart: its top half
/// first (no option drawn yet: no dialog a screen rule knows; [`half_drawn`] made once it is
/// written), then all of it. The first key typed closes the dialog and goes to the second
/// path. The real CLI's redraws cannot be had on demand.
fn redrawing_dialog_gemini(h: &Harness) -> (PathBuf, PathBuf) {
    let dialog =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens/gemini-permission.txt");
    let mark = h.project.with_file_name("redraw-now");
    let typed = h.project.with_file_name("key-typed");
    let half = half_drawn(&mark);
    let (dialog, redraw, key) = (dialog.display(), mark.display(), typed.display());
    let half = half.display();
    let script = format!(
        r#"#!/bin/sh
draw() {{ printf '\033[H\033[2J'; cat '{dialog}'; }}
draw
while true; do
  if [ -e '{redraw}' ]; then
    rm -f '{redraw}'; printf '\033[H\033[2J'; head -n 20 '{dialog}'; : > '{half}'; sleep 0.4; draw
  fi
  sleep 0.05
done &
stty -icanon -echo min 1
key=$(dd bs=1 count=1 2>/dev/null)
kill $!
printf '\033[H\033[2J'; echo "answered"; printf '%s' "$key" > '{key}'
exec sleep 600
"#
    );
    crate::harness::write_executable(&h.bin.join("gemini"), &script);
    (mark, typed)
}

/// A task of that stand-in waiting on its dialog: the harness, the task, the file that starts a
/// redraw and the file the key typed goes to.
pub(crate) fn on_a_redrawing_dialog() -> (Harness, String, PathBuf, PathBuf) {
    let h = Harness::new();
    let (mark, typed) = redrawing_dialog_gemini(&h);
    let id = h.submit(&["--no-skip-permissions", "--sandbox=none", "x"]);
    h.wait_input_required(&id, limits::TASK);
    (h, id, mark, typed)
}

/// The file the stand-in makes once a redraw's first half is written.
fn half_drawn(mark: &Path) -> PathBuf {
    mark.with_file_name("redraw-half-drawn")
}

/// Starts a redraw of the stand-in's dialog; returns once its first half is written. (Not
/// once a capture shows it: on a loaded machine a capture could come after the 400 ms
/// it shows, and the redraw was then never seen.)
pub(crate) fn redraw_begun(h: &Harness, id: &str, mark: &Path) {
    let half = half_drawn(mark);
    let _ = std::fs::remove_file(&half);
    std::fs::write(mark, "").unwrap();
    assert!(
        poll(limits::TASK, || half.exists()),
        "the redraw never began: {}",
        h.screen(id)
    );
}

/// `cuekit approve` while the child redraws its dialog (captured with its options not drawn
/// yet: no dialog seen) answers it: the screen is looked at again before "no permission
/// dialog". Twice in loaded full runs the real CLI's redraw was caught so (by the web's Allow,
/// which goes through the same operation).
#[test]
fn approve_while_the_dialog_is_redrawn_answers_it() {
    let (h, id, mark, typed) = on_a_redrawing_dialog();
    redraw_begun(&h, &id, &mark);
    let (approved, code) = h.json(&["approve", &id, "--allow"]);
    assert_eq!(code, 0, "{approved}\n{}", h.screen(&id));
    assert_eq!(std::fs::read_to_string(&typed).unwrap(), "1");
}

#[test]
fn a_dialog_that_closes_on_its_own_before_the_key_is_not_answered() {
    let (h, id) = on_its_dialog();
    // Hold the task's steer lock: `approve` reads the dialog, then waits for it to type.
    let lock_path = h.task_dir(&id).join("steer.lock");
    let lock = crate::harness::held_lock(&lock_path);
    std::fs::set_permissions(&lock_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let approver = h
        .cuekit()
        .args(["approve", &id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        poll(limits::TASK, || holds_open(approver.id(), &lock_path)),
        "approve never reached the lock"
    );
    let (pane, _) = h.pane(&id);
    assert!(
        h.tmux(&["send-keys", "-t", &pane, "Escape"])
            .status
            .success()
    );
    // Closed for good: the prompt is back and two looks 300 ms apart agree (a look taken while
    // the CLI redraws can miss a dialog that is still open; `approve` would then rightly answer
    // it, and the test once failed so under load).
    let closed =
        |screen: &str| !screen.contains("Allow execution of") && screen.contains(EMPTY_INPUT);
    h.wait_until(&id, "the dialog closed by Esc", limits::TASK, || {
        closed(&h.screen(&id)) && {
            std::thread::sleep(Duration::from_millis(300));
            closed(&h.screen(&id))
        }
    });
    drop(lock);
    let output = approver.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("closed or changed before the key was sent: nothing was typed"),
        "{stderr}"
    );
    // Give a stray key time to be drawn, then look: the prompt is as Esc left it.
    std::thread::sleep(Duration::from_millis(500));
    let screen = h.screen(&id);
    assert!(
        screen.contains(EMPTY_INPUT),
        "a key reached the prompt:\n{screen}"
    );
    assert!(!h.project.join("f.txt").exists());
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(!events.contains("cuekit_approve"), "{events}");
}

/// A child never answers its own dialog: `cuekit approve` of its own task from inside its pane
/// is refused as inside the task (30) before anything is read or typed.
#[test]
fn a_child_cannot_answer_its_own_dialog() {
    let h = Harness::new();
    let probe = "cuekit approve $CUEKIT_TASK_ID --allow >/dev/null 2>&1; \
                 echo approve-exit=$? > probe.txt; sleep 600";
    let id = h.submit(&crate::harness::sh_task(probe, &[]));
    assert!(
        poll(limits::TASK, || h.project.join("probe.txt").exists()),
        "the probe never ran:\n{}",
        h.screen(&id)
    );
    let probe = std::fs::read_to_string(h.project.join("probe.txt")).unwrap();
    assert_eq!(probe, "approve-exit=30\n");
}

/// Two approvers at once (the CLI and a phone, say): the dialog is answered once, the other is
/// told it closed, and no second digit reaches the prompt.
#[test]
fn two_approvers_at_once_answer_the_dialog_once() {
    let (h, id) = on_its_dialog();
    let approver = || {
        h.cuekit()
            .args(["approve", &id])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (approver(), approver());
    let outputs = [
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    ];
    let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
    let said: Vec<String> = outputs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    assert!(
        codes.contains(&Some(0)) && codes.contains(&Some(5)),
        "{codes:?} {said:?}"
    );
    let refused = &said[codes.iter().position(|c| *c == Some(5)).unwrap()];
    assert!(
        refused.contains("closed or changed before the key was sent")
            || refused.contains("waits on no permission dialog"),
        "{refused}"
    );
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert!(h.project.join("f.txt").exists());
    let screen = h.screen(&id);
    assert!(
        screen.contains(EMPTY_INPUT),
        "a key reached the prompt:\n{screen}"
    );
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert_eq!(events.matches("\"cuekit_approve\"").count(), 1, "{events}");
}

//! The command line's one rule for words: a flag is a flag wherever it stands, a word that
//! starts with `-` and is no flag is a usage error (exit 2), and text that starts with `-`
//! goes after `--`. And input that cannot be a task (not UTF-8) is refused with
//! `invalid_input` before anything is recorded.

use crate::harness::limits;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::{Output, Stdio};

use crate::harness::Harness;
use crate::harness::git::git;
use serde_json::{Value, json};

#[track_caller]
fn nothing_recorded(h: &Harness) {
    assert_eq!(h.json(&["list", "--all"]), (json!([]), 0));
}

/// `cuekit --json ARGS` with `input` on stdin.
fn json_with_stdin(h: &Harness, args: &[&str], input: &[u8]) -> (Value, i32) {
    let mut child = h
        .cuekit()
        .arg("--json")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    (
        serde_json::from_slice(&output.stdout).unwrap(),
        output.status.code().unwrap(),
    )
}

#[test]
fn a_flag_after_the_objective_is_a_flag() {
    let h = Harness::new();
    let (dry, code) = h.json(&[
        "submit",
        "--dry-run",
        "fix",
        "the",
        "bug",
        "--agent",
        "command",
    ]);
    assert_eq!(code, 0, "{dry}");
    assert_eq!(dry["launch_command"], "'fix' 'the' 'bug'");
    // `--json` last, as people type it.
    let output = h.run(&["submit", "--dry-run", "x", "--json"]);
    let dry: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(dry["agent_kind"], "gemini");

    // The audit's case: `--worktree` after the words puts the task in its worktree.
    git(&h.project, &["init", "-q", "-b", "main"]);
    git(&h.project, &["config", "user.name", "Test"]);
    git(&h.project, &["config", "user.email", "test@example.com"]);
    std::fs::write(h.project.join(".gitignore"), ".cuekit/\n").unwrap();
    git(&h.project, &["add", "-A"]);
    git(&h.project, &["commit", "-qm", "init"]);
    let id = h.submit(&[
        "--agent",
        "command",
        "--mode",
        "batch",
        "true",
        "--worktree",
    ]);
    let (_, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0);
    let status = h.status(&id);
    assert_eq!(status["branch"], format!("cuekit/{id}"), "{status}");
    assert_eq!(status["exit_code"], 0);
}

#[test]
fn a_word_starting_with_a_dash_that_is_no_flag_is_a_usage_error() {
    let h = Harness::new();
    let cases: [&[&str]; 7] = [
        &["submit", "--worktre", "x"],
        &["submit", "x", "--worktre"],
        &["submit", "fix", "-v", "now"],
        &["submit", "--agent", "command", "sh", "-c", "true"],
        &["steer", "t_0123456789ab", "msg", "--frob"],
        &["steer", "t_0123456789ab", "-x"],
        &["report", "--done", "all", "--frob"],
    ];
    for args in cases {
        let (error, code) = h.json(args);
        assert_eq!(
            (error["error"]["code"].as_str(), code),
            (Some("usage"), 2),
            "{args:?}: {error}"
        );
        let hint = error["error"]["hint"].as_str().unwrap();
        assert!(hint.contains("goes after `--`"), "{args:?}: {hint}");
        // On the text face, clap's complaint and the same hint.
        let output = h.run(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("unexpected argument"), "{stderr}");
        assert!(
            stderr.contains("hint: a flag counts wherever it stands"),
            "{stderr}"
        );
    }
    nothing_recorded(&h);
}

#[test]
fn text_starting_with_a_dash_goes_after_a_double_dash() {
    let h = Harness::new();
    let (dry, code) = h.json(&["submit", "--dry-run", "--", "-fix", "this"]);
    assert_eq!(code, 0, "{dry}");
    assert_eq!(
        dry["launch_command"],
        "gemini --skip-trust -y --prompt-interactive='-fix this'"
    );
    // The command agent gets every word after the first `--` as given, dashes and all.
    let id = h.submit(&[
        "--agent", "command", "--mode", "batch", "--", "printf", "%s|", "-a", "--", "--json", "-",
    ]);
    let (_, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0);
    assert!(
        h.ok(&["logs", &id]).contains("-a|--|--json|-|"),
        "{}",
        h.transcript(&id)
    );
    // A lone `-` still reads stdin.
    let (dry, code) = json_with_stdin(&h, &["submit", "--dry-run", "-"], b"-from stdin\n");
    assert_eq!(code, 0, "{dry}");
    assert!(
        dry["launch_command"]
            .as_str()
            .unwrap()
            .contains("-from stdin"),
        "{dry}"
    );
}

/// A directory `bad\xff` (not UTF-8) in the project.
fn not_utf8_dir(h: &Harness) -> PathBuf {
    let dir = h.project.join(std::ffi::OsStr::from_bytes(b"bad\xff"));
    std::fs::create_dir(&dir).unwrap();
    dir
}

#[test]
fn a_working_directory_that_is_not_utf8_is_refused_not_a_panic() {
    let h = Harness::new();
    let dir = not_utf8_dir(&h);
    let submit = [
        "--json", "submit", "--agent", "command", "--mode", "batch", "--", "true",
    ];
    let inside = h.cuekit().current_dir(&dir).args(submit).output().unwrap();
    let given = h
        .cuekit()
        .args(&submit[..2])
        .arg("--cwd")
        .arg(&dir)
        .args(&submit[2..])
        .output()
        .unwrap();
    for output in [inside, given] {
        assert_eq!(output.status.code(), Some(3), "{output:?}");
        let error: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(error["error"]["code"], "invalid_input");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is not UTF-8"),
            "{error}"
        );
    }
    // Looking is fine there.
    let listed: Output = h.cuekit().current_dir(&dir).arg("list").output().unwrap();
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    nothing_recorded(&h);
}

#[test]
fn an_objective_message_or_spec_that_is_not_utf8_is_invalid_input() {
    let h = Harness::new().with_fake_gemini();
    let bad = b"fix \xff it\n";
    let file = h.root().join("bad.txt");
    std::fs::write(&file, bad).unwrap();
    let file = file.to_str().unwrap();
    let running = h.submit(&["hello"]);
    h.wait_until(&running, "the prompt", limits::SHORT, || {
        h.screen(&running).contains("Type your message")
    });
    let from_file: [&[&str]; 3] = [
        &["submit", "--file", file],
        &["steer", &running, "--file", file],
        &["team", "submit", "crew", "--spec", file],
    ];
    let mut refusals: Vec<(Value, i32)> = from_file.iter().map(|args| h.json(args)).collect();
    refusals.push(json_with_stdin(&h, &["submit", "-"], bad));
    refusals.push(json_with_stdin(&h, &["steer", &running, "-"], bad));
    for (error, code) in refusals {
        assert_eq!(
            (error["error"]["code"].as_str(), code),
            (Some("invalid_input"), 3),
            "{error}"
        );
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("not UTF-8"), "{message}");
    }
    // Only the running task, and no steer reached it.
    let (tasks, _) = h.json(&["list", "--all"]);
    assert_eq!(tasks.as_array().unwrap().len(), 1, "{tasks}");
    let events =
        std::fs::read_to_string(h.task_dir(&running).join("events.jsonl")).unwrap_or_default();
    assert!(!events.contains("\"type\":\"steer\""), "{events}");
}

/// A file the user names for a text (`--file`, a team's `--spec`) is read only when it is a
/// regular file, up to a limit: a FIFO or a device (`/dev/zero`, which grew a submit to 9 GB)
/// is refused at once with a stable code, and so is a text past 4 MiB, from a file or stdin.
#[test]
fn a_named_file_is_a_bounded_regular_file_never_a_fifo_or_device() {
    let h = Harness::new();
    let fifo = h.root().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let big = h.root().join("big.txt");
    std::fs::write(&big, vec![b'a'; 4 * 1024 * 1024 + 1]).unwrap();
    let (fifo, big) = (fifo.to_str().unwrap(), big.to_str().unwrap());
    let refused: [(&[&str], &str, i32); 6] = [
        (&["submit", "--file", "/dev/zero"], "invalid_input", 3),
        (&["submit", "--file", fifo], "invalid_input", 3),
        (
            &["steer", "t_000000000001", "--file", fifo],
            "invalid_input",
            3,
        ),
        (&["submit", "--file", big], "invalid_input", 3),
        (
            &["team", "submit", "crew", "--spec", fifo],
            "unsafe_project_data",
            29,
        ),
        (
            &["team", "submit", "crew", "--spec", "/dev/zero"],
            "unsafe_project_data",
            29,
        ),
    ];
    for (args, expected, status) in refused {
        let output = h.bounded(args, crate::harness::HANG_GUARD);
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        crate::harness::assert_refused(&answer, output.status.code().unwrap(), expected, status);
    }
    // Stdin without end is cut at the limit too.
    let mut endless = h
        .cuekit()
        .args(["--json", "submit", "-"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let ended = crate::harness::poll(crate::harness::HANG_GUARD, || {
        endless.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = endless.kill();
    }
    assert!(ended, "submit - read /dev/zero without end");
    let output = endless.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    crate::harness::assert_refused(&answer, output.status.code().unwrap(), "invalid_input", 3);
    nothing_recorded(&h);
}

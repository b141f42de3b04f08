//! What people expect of a clap tool: completion (task ids from the registry), a man page,
//! colour only where it belongs, relative ages, `wait`'s live line on a terminal only, and
//! `submit --attach`.

use crate::harness::Harness;
use crate::harness::limits;
use crate::harness::sh_task;

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn completion_scripts_call_back_for_task_ids() {
    let h = Harness::new();
    let id = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = h.ok(&["completions", shell]);
        assert!(script.contains("COMPLETE"), "{shell}: {script}");
        assert!(
            script.contains(env!("CARGO_BIN_EXE_cuekit")),
            "{shell}: {script}"
        );
    }
    // What the registered script runs at <Tab> after `cuekit steer t_`.
    let offered = h
        .cuekit()
        .env("COMPLETE", "fish")
        .args(["--", "cuekit", "steer", "t_"])
        .output()
        .unwrap();
    let offered = stdout_of(&offered);
    assert!(
        offered
            .lines()
            .any(|line| line.starts_with(&format!("{id}\tsh -c sleep 600"))),
        "{offered}"
    );
    let bad = h.run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn man_pages_for_cuekit_and_each_subcommand() {
    let h = Harness::new();
    let page = h.ok(&["man"]);
    assert!(page.contains(".TH cuekit 1"), "{page}");
    assert!(page.contains("submit"), "{page}");
    let top = h.ok(&["man", "top"]);
    assert!(top.contains(".TH cuekit-top 1"), "{top}");
    assert!(top.contains("\\-\\-refresh"), "{top}");
    let unknown = h.run(&["man", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn colour_only_when_asked_or_on_a_terminal_and_ages_read_relative() {
    let h = Harness::new();
    let id = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    let piped = h.ok(&["list"]);
    assert!(!piped.contains('\x1b'), "{piped:?}");
    let line = piped.lines().find(|l| l.contains(&id)).unwrap();
    // Its age in the largest whole unit (`12s`), the column headed AGE.
    let aged = |word: &str| {
        word.strip_suffix('s')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    assert!(line.split_whitespace().any(aged), "{line}");
    let forced = h.ok(&["--color", "always", "list"]);
    assert!(forced.contains("\x1b[36mrunning\x1b[0m"), "{forced:?}");
    let never = h
        .cuekit()
        .args(["--color", "never", "list"])
        .output()
        .unwrap();
    assert!(!stdout_of(&never).contains('\x1b'));
    // JSON keeps RFC 3339 and no colour, whatever the flag.
    let (list, _) = h.json(&["--color", "always", "list"]);
    let created = list[0]["created_at"].as_str().unwrap();
    assert!(humantime::parse_rfc3339_weak(created).is_ok(), "{created}");
    assert!(!list.to_string().contains('\x1b'));
}

#[test]
fn wait_shows_a_live_line_on_a_terminal_that_goes_when_it_returns() {
    let h = Harness::new();
    let id = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 3"]);
    h.in_terminal("waiter", &format!("wait {id}"), (120, 30), false);
    h.wait_pane("waiter", "the live line", |s| {
        s.contains("waiting ") && s.contains("1 running, 0 ended")
    });
    let shown = h.wait_pane("waiter", "the wait's end", |s| s.contains("exited with 0"));
    assert!(!shown.contains("waiting "), "{shown}");
    assert!(shown.contains(&format!("{id}  completed")), "{shown}");
    // Piped, there is no live line at all.
    let piped = h.run(&["wait", &id]);
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("waiting"));
}

#[test]
fn submit_attach_lands_in_the_child_and_needs_a_terminal() {
    let h = Harness::new();
    h.in_terminal(
        "person",
        "submit --attach --agent command -- sh -c 'echo attached-child; sleep 600'",
        (120, 30),
        false,
    );
    let shown = h.wait_pane("person", "the child's pane", |s| {
        s.contains("attached-child") && !s.contains("transcript:")
    });
    assert!(!shown.contains("exited with"), "{shown}");
    let (list, _) = h.json(&["list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);

    // Without a terminal nothing is started.
    let refused = h.run(&["submit", "--attach", "--agent", "command", "--", "true"]);
    assert_eq!(refused.status.code(), Some(25));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not_a_terminal"));
    let (list, _) = h.json(&["list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[test]
fn top_needs_a_terminal_and_a_sane_refresh() {
    let h = Harness::new();
    let piped = h.run(&["top"]);
    assert_eq!(piped.status.code(), Some(25));
    assert!(String::from_utf8_lossy(&piped.stderr).contains("error[not_a_terminal]"));
    let (error, code) = h.json(&["top"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("not_a_terminal"), 25)
    );
    let fast = h.run(&["top", "--refresh", "10ms"]);
    assert_eq!(fast.status.code(), Some(3));
}

/// `--id` names the task (what a cuekit on another machine passes after registering the task
/// there, and what makes a retry safe): the same request again answers with the task it
/// started; another request under that id, or an id of another shape, is refused before
/// anything starts.
#[test]
fn a_chosen_id_names_the_task_once() {
    let h = Harness::new();
    let chosen = "t_00000000c0de";
    let id = h.submit(&["--id", chosen, "--agent", "command", "--", "sleep", "30"]);
    assert_eq!(id, chosen);
    let (again, code) = h.json(&[
        "submit", "--id", chosen, "--agent", "command", "--", "sleep", "30",
    ]);
    assert_eq!((again["id"].as_str(), code), (Some(chosen), 0), "{again}");
    let other = h.json(&["submit", "--id", chosen, "--agent", "command", "--", "true"]);
    assert_eq!(
        (other.0["error"]["code"].as_str(), other.1),
        (Some("invalid_input"), 3),
        "{}",
        other.0
    );
    assert!(
        other.0["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another request")
    );
    for bad in ["t_XYZ", "../t_00000000c0de"] {
        let (error, code) = h.json(&["submit", "--id", bad, "--agent", "command", "--", "true"]);
        assert_eq!(
            (error["error"]["code"].as_str(), code),
            (Some("invalid_input"), 3),
            "{bad}: {error}"
        );
    }
    let (list, _) = h.json(&["list"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    // One pane: the retry started nothing.
    let sessions = h.tmux(&["list-sessions", "-F", "#{session_name}"]);
    let sessions = String::from_utf8_lossy(&sessions.stdout).into_owned();
    assert_eq!(sessions.lines().count(), 1, "{sessions}");
}

/// `logs --tail N`: the readable log's last N lines, what MCP's snapshot asks a host for.
#[test]
fn logs_tail_prints_the_last_lines_of_the_readable_log() {
    let h = Harness::new();
    let id = h.submit_batch_sh("for n in 1 2 3 4 5; do echo line-$n; done");
    assert_eq!(h.json(&["wait", &id, "--timeout", "20s"]).1, 0);
    let tail = h.ok(&["logs", &id, "--tail", "2"]);
    assert_eq!(
        tail.lines().collect::<Vec<_>>(),
        ["line-4", "line-5"],
        "{tail}"
    );
    assert!(h.ok(&["logs", &id]).contains("line-1"));
}

/// Submits racing with one chosen id: exactly one starts the task, the others are refused or
/// answered with it, and none of them ends or removes the one that won.
#[test]
fn racing_submits_of_one_chosen_id_start_it_once() {
    let h = Harness::new();
    let chosen = "t_00000000beef";
    let outcomes: Vec<std::process::Output> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    h.run(&[
                        "--json",
                        "submit",
                        "--id",
                        chosen,
                        "--agent",
                        "command",
                        "--",
                        "sh",
                        "-c",
                        "sleep 600",
                    ])
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    // A racer that comes after the winner finished is a retry of the same request: it answers
    // with the task the winner started. One that comes while the winner is under way is
    // refused. Either way the task starts once.
    let answered: Vec<&std::process::Output> =
        outcomes.iter().filter(|o| o.status.success()).collect();
    assert!(!answered.is_empty(), "{outcomes:#?}");
    for answer in answered {
        let view: serde_json::Value = serde_json::from_slice(&answer.stdout).unwrap();
        assert_eq!(view["id"], chosen, "{view}");
    }
    for lost in outcomes.iter().filter(|o| !o.status.success()) {
        assert_eq!(lost.status.code(), Some(3), "{lost:?}");
    }
    let sessions = h.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(
        String::from_utf8_lossy(&sessions.stdout).lines().count(),
        1,
        "the task started more than once"
    );
    assert_eq!(h.status(chosen)["status"], "running");
    assert_eq!(h.json(&["list"]).0.as_array().unwrap().len(), 1);
    assert_eq!(h.json(&["cancel", chosen]).1, 0);
}

/// What a cloned repository or a child can put before the user's eyes: a window title (OSC),
/// a screen clear (CSI, and the one-byte C1 CSI), a bell and a carriage return.
const EVIL: &str = "\x1b]0;pwned\x07 \x1b[2J \u{9b}2J \rgone";

/// [`EVIL`] as a YAML string: YAML refuses C1 characters unescaped.
const EVIL_YAML: &str = r#""\e]0;pwned\a \e[2J \u009b2J \rgone""#;

/// How the text faces show [`EVIL`].
const SHOWN: &str = r"\u{1b}]0;pwned\u{7} \u{1b}[2J \u{9b}2J \u{d}gone";

#[track_caller]
fn assert_no_raw_controls(what: &str, output: &std::process::Output) {
    for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        for raw in ["\x1b", "\x07", "\u{9b}", "\r"] {
            assert!(
                !text.contains(raw),
                "{what} put {raw:?} raw on {stream}: {text:?}"
            );
        }
    }
}

#[test]
fn control_characters_in_records_and_reports_never_reach_the_terminal_raw() {
    let h = Harness::new().with_fake_gemini();
    // An objective (and so the model's answer) carrying them, and a child's report.
    let asked = h.submit(&["--mode", "batch", "--", EVIL]);
    let mut args = sh_task(r#"cuekit report --blocked "$0""#, &["--mode", "batch"]);
    args.push(EVIL);
    let reporter = h.submit(&args);
    for id in [&asked, &reporter] {
        let (waited, code) = h.json(&["wait", id, "--timeout", &limits::arg(limits::TASK)]);
        assert_eq!(code, 0, "{waited}");
    }
    // A record the registry does not know, planted by a repository with its own objective.
    let planted = "t_0000000000ee";
    let mut record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(h.task_dir(&asked).join("task.json")).unwrap(),
    )
    .unwrap();
    record["id"] = planted.into();
    std::fs::create_dir_all(h.task_dir(planted)).unwrap();
    std::fs::write(h.task_dir(planted).join("task.json"), record.to_string()).unwrap();
    // A role and a config value, from project files.
    std::fs::create_dir_all(h.project.join(".cuekit/agents")).unwrap();
    std::fs::write(
        h.project.join(".cuekit/agents/evil.md"),
        format!("---\ndescription: {EVIL_YAML}\n---\nbody\n"),
    )
    .unwrap();
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        format!("defaults:\n  agent: {EVIL_YAML}\n"),
    )
    .unwrap();
    // The monitor's announcement of the first task's ending, for `events`.
    h.wait_until(
        &asked,
        "its ending announced",
        std::time::Duration::from_secs(30),
        || {
            h.ok(&["--json", "events"]).lines().any(|line| {
                let event: serde_json::Value = serde_json::from_str(line).unwrap();
                event["task_id"] == asked.as_str() && event["new_status"] == "completed"
            })
        },
    );

    // Each face, and whether it shows the value (`wait` and a gemini task's result do not).
    let faces: [(&[&str], bool); 9] = [
        (&["list"], true),
        (&["status", &asked, &reporter, planted], true),
        (&["result", &reporter], true),
        (&["result", &asked], false),
        (&["wait", &asked, &reporter], false),
        (&["events"], true),
        (&["roles"], true),
        (&["config"], true),
        (&["status", EVIL], true),
    ];
    for (args, shows) in faces {
        let output = h.run(args);
        assert_no_raw_controls(&format!("{args:?}"), &output);
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        assert!(
            !shows || text.contains(SHOWN),
            "{args:?} did not show it escaped: {text}"
        );
    }
    // JSON escapes them, and reads back the value as stored.
    let status = h.run(&["--json", "status", &asked, &reporter, planted]);
    assert_no_raw_controls("status --json", &status);
    let views: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(views[0]["objective"], EVIL);
    assert_eq!(views[1]["last_report"]["message"], EVIL);
    assert_eq!(views[2]["objective"], EVIL);
    for args in [
        &["--json", "list"][..],
        &["--json", "result", &asked],
        &["--json", "events"],
    ] {
        assert_no_raw_controls(&format!("{args:?}"), &h.run(args));
    }
}

/// A tail (`logs --tail`, what a task page shows) reads a bounded end of the transcript,
/// whatever its size: here 64 GiB of zeros (a sparse file) before the last lines, which a
/// tail read from the start would take minutes over.
#[test]
fn a_tail_reads_a_bounded_end_of_a_huge_transcript() {
    use std::os::unix::fs::FileExt;
    let h = Harness::new();
    let id = h.submit(&sh_task("echo done", &["--mode", "batch"]));
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let transcript = h.task_dir(&id).join("transcript.txt");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&transcript)
        .unwrap();
    let huge = 64 * 1024 * 1024 * 1024_u64;
    file.set_len(huge).unwrap();
    file.write_all_at(b"\nFIRST-OF-THE-END\nLAST-LINE\n", huge)
        .unwrap();
    let output = h.bounded(&["logs", &id, "--tail", "2"], crate::harness::HANG_GUARD);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text.contains("FIRST-OF-THE-END") && text.contains("LAST-LINE"),
        "{text}"
    );
}

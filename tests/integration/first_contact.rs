//! A newcomer's first minutes (issue 51): the README's first task runs as written, `submit
//! --help` is grouped with examples, `doctor` checks the agents in use, `--check` makes its own
//! worktree in a git repository, and `serve --qr` on loopback says a phone cannot reach it.

use crate::harness::limits;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::harness::Harness;
use crate::harness::git::project_repo;

/// The lines of the README's quick-start block (the one after the `first-task` marker), as
/// written: the test breaks when the README changes them.
fn readme_first_task() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let after = readme
        .split_once("<!-- first-task")
        .expect("README.md marks its first task with <!-- first-task … -->")
        .1;
    let block = after
        .split_once("```sh\n")
        .expect("a ```sh block after the marker")
        .1
        .split_once("```")
        .expect("the block ends")
        .0;
    block.lines().map(str::to_string).collect()
}

#[test]
fn the_readmes_first_task_runs_as_written_without_any_agent_or_key() {
    let h = Harness::new();
    let lines = readme_first_task();
    assert!(
        lines[0].starts_with("cargo install "),
        "the block starts by installing cuekit: {lines:?}"
    );
    // The install is the test's own build: its binary is `cuekit` on the harness's PATH.
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cuekit"), h.bin.join("cuekit")).unwrap();
    let script = format!("set -e\n{}\n", lines[1..].join("\n"));
    let output = crate::harness::within(
        {
            let mut sh = h.program(std::path::Path::new("/bin/sh"));
            sh.args(["-c", &script]);
            sh
        },
        crate::harness::HANG_GUARD,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script}\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("completed (exit 0)") && stdout.contains("hello from a first task"),
        "{stdout}"
    );
}

/// The flags listed under `heading` in `help`, up to the next heading.
fn flags_under<'a>(help: &'a str, heading: &str) -> Vec<&'a str> {
    let section = help
        .split_once(&format!("\n{heading}:\n"))
        .unwrap_or_else(|| panic!("no heading {heading:?} in:\n{help}"))
        .1;
    let section = section.split("\n\n").next().unwrap();
    section
        .lines()
        .filter_map(|line| line.split_whitespace().find(|w| w.starts_with("--")))
        .map(|flag| flag.split(['=', '[']).next().unwrap())
        .collect()
}

#[test]
fn submit_help_groups_its_flags_and_ends_with_examples() {
    let h = Harness::new();
    let help = String::from_utf8(h.run(&["submit", "--help"]).stdout).unwrap();
    for (heading, flags) in [
        (
            "What to run",
            &["--agent", "--mode", "--role", "--file"][..],
        ),
        (
            "Where it runs",
            &["--cwd", "--worktree", "--sandbox", "--host"],
        ),
        (
            "How it ends (and how you follow it)",
            &["--timeout", "--retry", "--attach"],
        ),
        ("Scheduling", &["--after", "--priority", "--now", "--team"]),
        (
            "Checks and races",
            &["--check", "--check-rounds", "--best-of"],
        ),
    ] {
        let listed = flags_under(&help, heading);
        for flag in flags {
            assert!(
                listed.contains(flag),
                "{flag} not under {heading}: {listed:?}"
            );
        }
    }
    let examples = help.split_once("\nExamples:\n").expect("examples").1;
    assert!(
        examples.contains("cuekit submit --agent command --mode batch -- sh -c"),
        "{examples}"
    );
    // The short help has them too.
    let short = String::from_utf8(h.run(&["submit", "-h"]).stdout).unwrap();
    assert!(short.contains("\nExamples:\n"), "{short}");
}

fn check_names(checks: &serde_json::Value) -> Vec<String> {
    checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn doctor_checks_the_agents_in_use_and_every_agent_with_all() {
    let h = Harness::new();
    let (checks, _) = h.json(&["doctor"]);
    let names = check_names(&checks);
    assert!(names.contains(&"gemini binary".to_string()), "{names:?}");
    for unused in ["claude-code binary", "codex binary", "antigravity binary"] {
        assert!(!names.contains(&unused.to_string()), "{unused}: {names:?}");
    }
    let others = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "other agents")
        .expect("a line naming the agents left out");
    assert!(
        others["message"].as_str().unwrap().contains("codex")
            && others["next_step"].as_str().unwrap().contains("--all"),
        "{others}"
    );
    // An agent a config file sets up is in use.
    h.user_config("adapters:\n  codex:\n    model: gpt-5\n");
    let (checks, _) = h.json(&["doctor"]);
    let names = check_names(&checks);
    assert!(names.contains(&"codex binary".to_string()), "{names:?}");
    assert!(!names.contains(&"qwen binary".to_string()), "{names:?}");
    let (checks, _) = h.json(&["doctor", "--all"]);
    let names = check_names(&checks);
    for kind in ["claude-code", "codex", "qwen", "copilot", "antigravity"] {
        assert!(
            names.contains(&format!("{kind} binary")),
            "{kind}: {names:?}"
        );
    }
    assert!(!names.contains(&"other agents".to_string()), "{names:?}");
}

#[test]
fn a_check_in_a_git_repository_makes_its_own_worktree() {
    let h = Harness::new();
    project_repo(&h.project, "base\n");
    let id = h.submit_sh(
        "echo changed > shared.txt",
        &[
            "--mode",
            "batch",
            "--check",
            "grep -q changed shared.txt",
            "--check-rounds",
            "0",
        ],
    );
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    // The work is in the task's own worktree, never in the user's checkout.
    let worktree = h.worktree_of(&id);
    assert_ne!(worktree, h.project);
    assert_eq!(
        std::fs::read_to_string(worktree.join("shared.txt")).unwrap(),
        "changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join("shared.txt")).unwrap(),
        "base\n"
    );
    // `--no-worktree` still says no.
    let (refused, code) = h.json(&[
        "submit",
        "--agent",
        "command",
        "--mode",
        "batch",
        "--no-worktree",
        "--check",
        "true",
        "--",
        "true",
    ]);
    assert_eq!(code, 3, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("checkout of its own"),
        "{refused}"
    );
}

#[test]
fn serve_qr_on_loopback_says_a_phone_cannot_reach_it_and_how_to_tunnel() {
    let h = Harness::new();
    let mut child = h
        .cuekit()
        .args(["serve", "--qr", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // Read on a thread: a serve that never prints the note keeps running, and the test fails
    // at the hang guard saying what it printed instead of hanging.
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut printed = Vec::new();
    let note = loop {
        match seen.recv_timeout(crate::harness::HANG_GUARD) {
            Ok(line) if line.starts_with("note: ") => break line,
            Ok(line) => printed.push(line),
            Err(_) => break String::new(),
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        note.contains("is a loopback address")
            && note.contains("a phone")
            && note.contains("ssh -N -L")
            && note.contains("--public-host"),
        "no note after the code: {printed:?}"
    );
}

/// The config entries whose value comes from the project's `.cuekit.yaml`, trust aside.
fn set_by_project_file(h: &Harness) -> Vec<String> {
    let (config, code) = h.json(&["config"]);
    assert_eq!(code, 0, "{config}");
    config
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["key"] != "trust")
        .filter(|entry| entry["source"].to_string().contains(".cuekit.yaml"))
        .map(|entry| format!("{}={}", entry["key"], entry["value"]))
        .collect()
}

#[test]
fn init_writes_only_what_differs_from_the_defaults() {
    let h = Harness::new();
    let (outcome, code) = h.json(&["init"]);
    assert_eq!(code, 0, "{outcome}");
    assert_eq!(set_by_project_file(&h), Vec::<String>::new());
    let written = std::fs::read_to_string(h.project.join(".cuekit.yaml")).unwrap();
    assert!(!written.contains("batch worktree tasks only"), "{written}");
    let (outcome, code) = h.json(&["init", "--force", "--agent", "antigravity"]);
    assert_eq!(code, 0, "{outcome}");
    assert_eq!(
        set_by_project_file(&h),
        vec![r#""defaults.agent"="antigravity""#.to_string()]
    );
}

/// `cuekit trust` at a terminal (`script` makes one), answering `answer`.
fn trust_answering(h: &Harness, answer: &str) -> (bool, String) {
    use std::io::Write;
    let line = format!("'{}' trust", env!("CARGO_BIN_EXE_cuekit"));
    let mut script = h.program(std::path::Path::new("script"));
    script
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = script.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

fn trust_state(h: &Harness) -> String {
    let (config, _) = h.json(&["config"]);
    let value = &config[0]["value"];
    value["state"]
        .as_str()
        .or(value.as_str())
        .unwrap()
        .to_string()
}

#[test]
fn trust_shows_the_keys_that_run_code_and_asks() {
    let h = Harness::new();
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        "hooks:\n  on_end: \"echo ended\"\ncheck:\n  run: [\"make test\"]\ndefaults:\n  timeout: 30m\n",
    )
    .unwrap();
    let (trusted, shown) = trust_answering(&h, "n\n");
    assert!(!trusted, "{shown}");
    assert!(
        shown.contains("hooks.on_end: \"echo ended\"")
            && shown.contains("check.run: [\"make test\"]")
            && shown.contains("[y/N]")
            && !shown.contains("defaults.timeout"),
        "{shown}"
    );
    assert_eq!(trust_state(&h), "untrusted");
    let (trusted, shown) = trust_answering(&h, "y\n");
    assert!(trusted, "{shown}");
    assert_eq!(trust_state(&h), "trusted");
}

/// Attaches in a real terminal of the test's tmux server (`cuekit ARGS` in session `person`),
/// checks the task's status line, detaches with the prefix and `d`, and returns what the
/// terminal shows then.
fn attach_and_detach(h: &Harness, person: &str, args: &str, id: impl Fn() -> String) -> String {
    h.in_terminal(person, args, (200, 30), false);
    let shown = h.wait_pane(person, "the task's status line", |s| {
        s.contains("attached-child") && s.contains("detach: C-b d]")
    });
    let id = id();
    assert!(
        shown.contains(&format!("[cuekit {id}, detach: C-b d]")),
        "{shown}"
    );
    let target = format!("={person}:");
    h.tmux(&["send-keys", "-t", &target, "C-b", "d"]);
    h.wait_pane(person, "the terminal after detaching", |s| {
        s.contains("exited with")
    })
}

#[test]
fn attach_names_the_task_and_its_detach_key_and_says_how_to_come_back() {
    let h = Harness::new();
    let only_task = || {
        let (list, _) = h.json(&["list"]);
        list[0]["id"].as_str().unwrap().to_string()
    };
    let shown = attach_and_detach(
        &h,
        "person",
        "submit --attach --agent command -- sh -c 'echo attached-child; sleep 600'",
        only_task,
    );
    let id = only_task();
    assert!(
        shown.contains(&format!("`cuekit attach {id}` comes back"))
            && shown.contains("exited with 0"),
        "{shown}"
    );
    // `cuekit attach` does the same.
    let shown = attach_and_detach(&h, "again", &format!("attach {id}"), only_task);
    assert!(
        shown.contains(&format!("`cuekit attach {id}` comes back"))
            && shown.contains("exited with 0"),
        "{shown}"
    );
    h.ok(&["cancel", &id]);
}

#[test]
fn attach_from_inside_tmux_names_the_prefix_twice_when_the_outer_tmux_shares_it() {
    let h = Harness::new();
    let id = h.submit_sh("echo attached-child; sleep 600", &[]);
    // Inside the user's tmux (here the test's server, whose prefix is also C-b) with no client
    // on this pane's terminal, so no popup: a nested client, and the outer tmux takes the
    // first C-b, so the way out of the task is C-b C-b d. (With a client, a popup: top.rs.)
    h.in_terminal("person", &format!("attach {id}"), (200, 30), true);
    let shown = h.wait_pane("person", "the task's status line", |s| {
        s.contains("attached-child") && s.contains(", detach: ")
    });
    assert!(
        shown.contains(&format!("[cuekit {id}, detach: C-b C-b d]")),
        "{shown}"
    );
    h.tmux(&["send-keys", "-t", "=person:", "C-b", "d"]);
    let shown = h.wait_pane("person", "the terminal after detaching", |s| {
        s.contains("exited with")
    });
    assert!(
        shown.contains(&format!("`cuekit attach {id}` comes back")),
        "{shown}"
    );
    h.ok(&["cancel", &id]);
}

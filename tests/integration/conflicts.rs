//! Conflicts between worktree children, seen before the merge: real git, real tmux on a private
//! socket, real /bin/sh, `--agent command` children that edit like an agent would.

use crate::harness::limits;
use std::path::{Path, PathBuf};

use crate::harness::git::{commit_all, git, project_repo};
use crate::harness::{Harness, poll};
use serde_json::Value;

const LINES: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";

/// A script replacing line `from` of shared.txt with `to` (uncommitted).
fn replace(from: &str, to: &str) -> String {
    format!("sed 's/^{from}$/{to}/' shared.txt > .edit && cat .edit > shared.txt && rm .edit")
}

fn conflicts(h: &Harness) -> Value {
    let (value, code) = h.json(&["conflicts"]);
    assert_eq!(code, 0, "{value}");
    value
}

/// The pairs found, each as `(a, other)` sorted, `other` a task id or `target <branch>`.
fn pairs(found: &Value) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = found["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let a = c["a"].as_str().unwrap().to_string();
            let other = match (c["b"].as_str(), c["target"].as_str()) {
                (Some(b), _) => b.to_string(),
                (None, Some(target)) => format!("target {target}"),
                _ => panic!("neither b nor target: {c}"),
            };
            let mut pair = [a, other];
            pair.sort();
            (pair[0].clone(), pair[1].clone())
        })
        .collect();
    pairs.sort();
    pairs
}

fn sorted(a: &str, b: &str) -> (String, String) {
    let mut pair = [a.to_string(), b.to_string()];
    pair.sort();
    (pair[0].clone(), pair[1].clone())
}

#[test]
fn two_children_editing_one_place_conflict_and_a_third_elsewhere_does_not() {
    let h = Harness::new();
    project_repo(&h.project, LINES);
    let a = h.submit_worktree_sh(&[], &replace("one", "from a"));
    let b = h.submit_worktree_sh(&[], &replace("one", "from b"));
    let c = h.submit_worktree_sh(&[], &replace("seven", "from c"));
    h.wait_ok(&[&a, &b, &c], &limits::arg(limits::AGENT));
    let found = conflicts(&h);
    assert_eq!(pairs(&found), [sorted(&a, &b)], "{found}");
    let conflict = &found["conflicts"][0];
    assert_eq!(conflict["files"][0]["path"], "shared.txt", "{found}");
    assert_eq!(conflict["files"][0]["reason"], "content", "{found}");
    assert_eq!(conflict["reason"], "content", "{found}");
    let mut checked: Vec<&str> = found["checked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    checked.sort();
    let mut all = [a.as_str(), b.as_str(), c.as_str()];
    all.sort();
    assert_eq!(checked, all);

    // The stored result marks the pair in status and list, and nobody else.
    assert_eq!(h.status(&a)["conflicts"], serde_json::json!([b.clone()]));
    assert_eq!(h.status(&b)["conflicts"], serde_json::json!([a.clone()]));
    assert!(h.status(&c).get("conflicts").is_none(), "{}", h.status(&c));
    let (list, _) = h.json(&["list"]);
    let row = |id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|v| v["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(row(&a)["conflicts"], serde_json::json!([b.clone()]));
    let text = h.ok(&["list"]);
    let line_of = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(line_of(&a).contains("!conflict"), "{text}");
    assert!(!line_of(&c).contains("!conflict"), "{text}");

    // The text view names the pair and the file.
    let text = h.ok(&["conflicts"]);
    assert!(
        text.contains("shared.txt") && text.contains("content"),
        "{text}"
    );
    assert!(text.contains("1 conflict among 3 worktree tasks"), "{text}");
}

#[test]
fn a_child_conflicts_with_a_commit_made_meanwhile_on_its_target_committed_or_untracked() {
    let h = Harness::new();
    project_repo(&h.project, LINES);
    // One child commits its edit; the other leaves a new file untracked.
    let committed = h.submit_worktree_sh(
        &[],
        &format!(
            "{} && git add shared.txt && git commit -qm edit",
            replace("two", "from the child")
        ),
    );
    let untracked = h.submit_worktree_sh(&[], "printf 'child version\\n' > notes.txt");
    h.wait_ok(&[&committed, &untracked], &limits::arg(limits::AGENT));
    assert_eq!(pairs(&conflicts(&h)), Vec::<(String, String)>::new());

    // Meanwhile, main moves on: the same line, and a file of the same name.
    std::fs::write(
        h.project.join("shared.txt"),
        LINES.replace("two", "from main"),
    )
    .unwrap();
    std::fs::write(h.project.join("notes.txt"), "main version\n").unwrap();
    commit_all(&h.project, "main moves on");
    let found = conflicts(&h);
    let mut expected = vec![
        sorted(&committed, "target main"),
        sorted(&untracked, "target main"),
    ];
    expected.sort();
    assert_eq!(pairs(&found), expected, "{found}");
    let reason_of = |id: &str| {
        found["conflicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["a"] == id)
            .map(|c| c["files"][0].clone())
            .unwrap()
    };
    assert_eq!(reason_of(&committed)["path"], "shared.txt");
    assert_eq!(reason_of(&committed)["reason"], "content");
    assert_eq!(reason_of(&untracked)["path"], "notes.txt");
    assert_eq!(reason_of(&untracked)["reason"], "add/add");
    assert_eq!(
        h.status(&untracked)["conflicts"],
        serde_json::json!(["target main"])
    );
}

#[test]
fn uncommitted_edits_and_untracked_files_count_between_children() {
    let h = Harness::new();
    project_repo(&h.project, LINES);
    let a = h.submit_worktree_sh(&[], "printf 'a\\n' > added.txt");
    let b = h.submit_worktree_sh(&[], "printf 'b\\n' > added.txt");
    h.wait_ok(&[&a, &b], &limits::arg(limits::AGENT));
    let found = conflicts(&h);
    assert_eq!(pairs(&found), [sorted(&a, &b)], "{found}");
    assert_eq!(found["conflicts"][0]["files"][0]["reason"], "add/add");

    // The child's work changes after the check: an edit in place, found again.
    let worktree = h.worktree_of(&b);
    std::fs::write(worktree.join("added.txt"), "a\n").unwrap();
    assert_eq!(pairs(&conflicts(&h)), Vec::<(String, String)>::new());
    assert!(h.status(&a).get("conflicts").is_none());
}

/// What a check must leave as it was: each worktree's status and index bytes, and the main
/// checkout's.
fn untouched(dirs: &[PathBuf]) -> Vec<(String, Vec<u8>)> {
    dirs.iter()
        .map(|dir| {
            let index = git(dir, &["rev-parse", "--absolute-git-dir"]);
            (
                git(dir, &["status", "--porcelain", "--untracked-files=all"]),
                std::fs::read(Path::new(index.trim()).join("index")).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_check_modifies_no_work_tree_and_no_index() {
    let h = Harness::new();
    project_repo(&h.project, LINES);
    let a = h.submit_worktree_sh(
        &[],
        &format!(
            "{} && git add shared.txt && echo new > new.txt",
            replace("one", "x")
        ),
    );
    let b = h.submit_worktree_sh(&[], &replace("one", "y"));
    h.wait_ok(&[&a, &b], &limits::arg(limits::AGENT));
    let dirs = vec![h.project.clone(), h.worktree_of(&a), h.worktree_of(&b)];
    let before = untouched(&dirs);
    assert!(before[1].0.contains("new.txt"), "{before:?}");
    let found = conflicts(&h);
    assert_eq!(pairs(&found), [sorted(&a, &b)], "{found}");
    assert_eq!(untouched(&dirs), before);
}

#[test]
fn the_monitor_announces_a_new_conflict_once_and_runs_the_hook() {
    let h = Harness::new();
    project_repo(&h.project, LINES);
    let log = h.root().join("hooks.log");
    h.user_config(&format!(
            "hooks:\n  on_conflict: \"echo \\\"$CUEKIT_TASK_ID $CUEKIT_REASON $CUEKIT_CONFLICT_WITH $CUEKIT_CONFLICT_FILES\\\" >> '{}'\"\n",
            log.display()
        ));
    // The children keep running, so the monitor keeps watching; `go` lets the third edit.
    let go = h.root().join("go");
    let a = h.submit_worktree_sh(&[], &format!("{}; sleep 600", replace("one", "a")));
    let b = h.submit_worktree_sh(&[], &format!("{}; sleep 600", replace("one", "b")));
    let c = h.submit_worktree_sh(
        &[],
        &format!(
            "while [ ! -e '{}' ]; do sleep 0.1; done; {}; sleep 600",
            go.display(),
            replace("seven", "c")
        ),
    );
    let transitions = || -> Vec<Value> {
        std::fs::read_to_string(h.home.join(".local/share/cuekit/transitions.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["conflict"].is_object())
            .collect()
    };
    assert!(
        poll(limits::TASK, || !transitions().is_empty()),
        "no conflict announced"
    );
    let announced = transitions();
    assert_eq!(announced.len(), 1, "{announced:?}");
    let event = &announced[0];
    assert_eq!(event["reason"], "conflict");
    let (task, other) = (
        event["task_id"].as_str().unwrap(),
        event["conflict"]["with"].as_str().unwrap(),
    );
    assert_eq!(sorted(task, other), sorted(&a, &b), "{event}");
    assert_eq!(event["conflict"]["files"][0]["path"], "shared.txt");
    // The task's own events.jsonl has it too.
    let events = std::fs::read_to_string(h.task_dir(task).join("events.jsonl")).unwrap();
    assert!(events.contains("\"conflict\""), "{events}");

    // Later checks (the third child's edit is seen: its stored tree changes) announce nothing
    // new.
    let stored = h
        .home
        .join(".local/share/cuekit/tasks")
        .join(format!("{c}.conflicts"));
    let tree = || -> String {
        std::fs::read(&stored)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| v["tree"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    assert!(poll(limits::TASK, || !tree().is_empty()));
    let first_tree = tree();
    std::fs::write(&go, "").unwrap();
    assert!(
        poll(limits::TASK, || tree() != first_tree),
        "the third child's edit was never checked"
    );
    assert_eq!(transitions().len(), 1, "{:?}", transitions());
    assert!(
        poll(limits::TASK, || std::fs::read_to_string(&log)
            .is_ok_and(|l| l.lines().count() == 1)),
        "the hook did not run"
    );
    let hook = std::fs::read_to_string(&log).unwrap();
    assert!(
        hook.starts_with(&format!("{task} conflict {other} shared.txt")),
        "{hook}"
    );
    h.ok(&["cancel", &a, &b, &c]);
}

//! A task reads as it stands: an interactive child idle while cuekit checks its turn is
//! `running` (phase `checking`), not waiting on a person; a task with no changes is marked in
//! no conflict.

use crate::harness::git::project_repo;
use crate::harness::{Harness, MODEL, canned_shell_call, canned_text, limits};

#[test]
fn an_interactive_child_waiting_on_its_own_check_reads_running_checking() {
    let h = Harness::new().with_real_gemini(&[
        canned_shell_call("echo answer=42 > answer.txt"),
        canned_text("Done."),
    ]);
    crate::checks::checked_project(&h);
    // The check takes a while: the child sits idle at its prompt all that time.
    let id = h.submit(&[
        "--worktree",
        "--model",
        MODEL,
        "--check",
        "sleep 4; sh tests/check.sh",
        "Write the answer into answer.txt",
    ]);
    let mut seen = Vec::new();
    h.wait_until(&id, "its ending", limits::LONG, || {
        let status = h.status(&id);
        let now = (
            status["status"].as_str().unwrap_or("").to_string(),
            status["phase"].as_str().unwrap_or("").to_string(),
        );
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        !matches!(
            status["status"].as_str(),
            Some("running" | "input_required")
        )
    });
    assert_eq!(seen.last().unwrap().0, "completed", "{seen:?}");
    assert!(
        seen.iter().all(|(status, _)| status != "input_required"),
        "it waited on its check, not on a person: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(status, phase)| status == "running" && phase == "checking"),
        "{seen:?}"
    );
}

#[test]
fn a_task_whose_changes_are_gone_is_marked_in_no_conflict() {
    let h = Harness::new();
    project_repo(&h.project, "one\ntwo\n");
    let edit = |to: &str| {
        format!("sed 's/^one$/{to}/' shared.txt > .edit && cat .edit > shared.txt && rm .edit")
    };
    let a = h.submit_worktree_sh(&[], &edit("from a"));
    let b = h.submit_worktree_sh(&[], &edit("from b"));
    for id in [&a, &b] {
        h.wait_until(id, "its ending", limits::TASK, || {
            h.status(id)["status"] == "completed"
        });
    }
    let (found, code) = h.json(&["conflicts"]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(h.status(&b)["conflicts"], serde_json::json!([a.clone()]));
    // b's edit undone: nothing of b's is left to conflict.
    crate::harness::git::git(&h.worktree_of(&b), &["checkout", "--", "shared.txt"]);
    let status = h.status(&b);
    assert_eq!(status["diff_stat"]["files"], 0, "{status}");
    assert!(status.get("conflicts").is_none(), "{status}");
    let text = h.ok(&["list"]);
    let line = text.lines().find(|l| l.starts_with(&b)).unwrap();
    assert!(!line.contains("!conflict"), "{text}");
}

//! Tasks in their own git worktrees: real git, real tmux, real /bin/sh, and `--agent command`
//! children that edit, commit or fail like an agent would.

use crate::harness::limits;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::harness::Harness;
use crate::harness::git::{git, init_repo, project_repo};
use crate::harness::sh_task;
use serde_json::Value;

fn branch_of(h: &Harness, id: &str) -> String {
    h.status(id)["branch"].as_str().unwrap().to_string()
}

fn branches(h: &Harness) -> String {
    git(
        &h.project,
        &[
            "branch",
            "--list",
            "--format=%(refname:short) %(objectname)",
        ],
    )
}

/// What must not change when a merge is refused: the target's ref, index and file, the task
/// branch's ref, and the task worktree's index and file.
fn merge_state(h: &Harness, id: &str) -> Vec<Vec<u8>> {
    let worktree = h.worktree_of(id);
    let task_git_dir = git(&worktree, &["rev-parse", "--absolute-git-dir"]);
    vec![
        git(&h.project, &["rev-parse", "refs/heads/main"]).into_bytes(),
        std::fs::read(h.project.join(".git/index")).unwrap(),
        std::fs::read(h.project.join("shared.txt")).unwrap(),
        git(
            &h.project,
            &["rev-parse", &format!("refs/heads/{}", branch_of(h, id))],
        )
        .into_bytes(),
        std::fs::read(Path::new(task_git_dir.trim()).join("index")).unwrap(),
        std::fs::read(worktree.join("shared.txt")).unwrap(),
        git(&h.project, &["status", "--porcelain"]).into_bytes(),
    ]
}

#[test]
fn eight_parallel_tasks_on_one_line_each_hold_only_their_change_and_merge_in_turn() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let children: Vec<_> = (0..8)
        .map(|i| {
            h.cuekit()
                .args(["--json", "submit"])
                .args(sh_task(
                    &format!("printf 'line from task {i}\\n' > shared.txt"),
                    &["--worktree", "--mode", "batch"],
                ))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let ids: Vec<String> = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            let value: Value = serde_json::from_slice(&output.stdout)
                .unwrap_or_else(|_| panic!("submit: {}", String::from_utf8_lossy(&output.stderr)));
            assert!(output.status.success(), "submit: {value}");
            value["id"].as_str().unwrap().to_string()
        })
        .collect();
    let (waited, code) = h.wait_all(&ids, "60s");
    assert_eq!(code, 0, "{waited}");
    for (i, id) in ids.iter().enumerate() {
        let (diff, code) = h.json(&["diff", id]);
        assert_eq!(code, 0, "{diff}");
        let files: Vec<&str> = diff["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        assert_eq!(files, ["shared.txt"], "{diff}");
        let patch = diff["patch"].as_str().unwrap();
        assert!(patch.contains(&format!("+line from task {i}\n")), "{patch}");
        assert_eq!(patch.matches("+line from task").count(), 1, "{patch}");
        assert_eq!(diff["stat"]["insertions"], 1);
        let status = h.status(id);
        assert_eq!(status["diff_stat"]["files"], 1, "{status}");
        assert_eq!(status["branch"], format!("cuekit/{id}"));
        let result = h.json(&["result", id]).0;
        assert_eq!(result["files_changed"][0]["path"], "shared.txt", "{result}");
    }
    // The main checkout never saw any of it.
    assert_eq!(
        std::fs::read_to_string(h.project.join("shared.txt")).unwrap(),
        "original line\n"
    );
    assert_eq!(git(&h.project, &["status", "--porcelain"]), "");

    let (merged, code) = h.json(&["merge", &ids[0]]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(merged["target"], "main");
    assert!(merged["work_commit"].is_string(), "{merged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("shared.txt")).unwrap(),
        "line from task 0\n"
    );
    for id in &ids[1..] {
        let before = merge_state(&h, id);
        let (error, code) = h.json(&["merge", id]);
        assert_eq!(code, 15, "{error}");
        assert_eq!(error["error"]["code"], "merge_conflict");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("shared.txt"),
            "{error}"
        );
        assert!(error["error"]["hint"].as_str().is_some());
        assert!(
            merge_state(&h, id) == before,
            "a refused merge changed the target or the task branch"
        );
    }
}

#[test]
fn prune_keeps_work_removes_merged_clean_tasks_and_dry_run_changes_nothing() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let dirty = h.submit_worktree_sh(&[], "echo draft > notes.txt");
    let unmerged = h.submit_worktree_sh(
        &[],
        "echo b > b.txt && git add b.txt && git commit -qm 'task b'",
    );
    let merged = h.submit_worktree_sh(
        &[],
        "echo c > c.txt && git add c.txt && git commit -qm 'task c'",
    );
    let ids = [dirty.clone(), unmerged.clone(), merged.clone()];
    let (waited, code) = h.wait_all(&ids, "60s");
    assert_eq!(code, 0, "{waited}");
    let (out, code) = h.json(&["merge", &merged]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out["work_commit"].is_null(),
        "nothing was left uncommitted: {out}"
    );
    let worktrees = ids.clone().map(|id| h.worktree_of(&id));

    let state = || {
        (
            branches(&h),
            git(&h.project, &["worktree", "list", "--porcelain"]),
            ids.iter()
                .map(|id| h.task_dir(id).join("task.json").is_file())
                .collect::<Vec<_>>(),
        )
    };
    let before = state();
    let (plan, code) = h.json(&["prune", "--dry-run"]);
    assert_eq!(code, 0, "{plan}");
    let outcome = |value: &Value, id: &str| {
        value
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["task_id"] == id)
            .map(|r| {
                (
                    r["outcome"].as_str().unwrap().to_string(),
                    r["reasons"].clone(),
                )
            })
            .unwrap()
    };
    assert_eq!(outcome(&plan, &dirty).0, "would_keep");
    assert_eq!(outcome(&plan, &unmerged).0, "would_keep");
    assert_eq!(outcome(&plan, &merged).0, "would_remove");
    assert_eq!(state(), before, "--dry-run changed something");

    let (pruned, code) = h.json(&["prune"]);
    assert_eq!(code, 36, "kept tasks fail a prune (work_kept): {pruned}");
    let (kept, reasons) = outcome(&pruned, &dirty);
    assert_eq!(kept, "kept");
    assert_eq!(reasons[0]["reason"], "uncommitted_changes", "{pruned}");
    let (kept, reasons) = outcome(&pruned, &unmerged);
    assert_eq!(kept, "kept");
    assert_eq!(reasons[0]["reason"], "unmerged_commits", "{pruned}");
    assert_eq!(reasons[0]["detail"], 1);
    assert_eq!(outcome(&pruned, &merged).0, "removed");
    assert!(!worktrees[2].exists());
    assert!(!h.task_dir(&merged).exists());
    assert!(!branches(&h).contains(&merged), "{}", branches(&h));
    // The kept ones are intact, work and all.
    assert_eq!(
        std::fs::read_to_string(worktrees[0].join("notes.txt")).unwrap(),
        "draft\n"
    );
    assert!(branches(&h).contains(&unmerged));
    assert!(h.task_dir(&dirty).join("task.json").is_file());

    // rm says the same; --force drops the work.
    let (kept, code) = h.json(&["rm", &dirty]);
    assert_eq!(code, 36, "{kept}");
    assert_eq!(kept[0]["outcome"], "kept");
    let (gone, code) = h.json(&["rm", "--force", &dirty, &unmerged]);
    assert_eq!(code, 0, "{gone}");
    assert_eq!(gone[0]["outcome"], "removed");
    assert_eq!(gone[1]["outcome"], "removed");
    assert!(!worktrees[0].exists() && !worktrees[1].exists());
    assert_eq!(branches(&h).lines().count(), 1, "{}", branches(&h));
    let (list, _) = h.json(&["list"]);
    assert_eq!(list.as_array().unwrap().len(), 0);
}

#[test]
fn a_running_task_is_never_removed() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "sleep 30");
    let worktree = h.worktree_of(&id);
    let (error, code) = h.json(&["rm", "--force", &id]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_state"), 5)
    );
    let (error, code) = h.json(&["merge", &id]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_state"), 5)
    );
    let (pruned, _) = h.json(&["prune", "--force"]);
    assert_eq!(pruned.as_array().unwrap().len(), 0);
    assert!(worktree.is_dir() && h.task_dir(&id).is_dir());
    h.ok(&["cancel", &id]);
    let (removed, code) = h.json(&["rm", &id]);
    assert_eq!(code, 0, "{removed}");
    assert_eq!(removed[0]["outcome"], "removed");
    assert!(!worktree.exists());
}

#[test]
fn base_branch_name_and_bad_requests_create_nothing() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    git(&h.project, &["switch", "-q", "-c", "other"]);
    std::fs::write(h.project.join("shared.txt"), "other line\n").unwrap();
    git(&h.project, &["commit", "-qam", "other"]);
    git(&h.project, &["switch", "-q", "main"]);

    let id = h.submit_worktree_sh(
        &["--base", "other", "--branch", "my-work"],
        "cat shared.txt",
    );
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");
    assert!(h.transcript(&id).contains("other line"));
    let status = h.status(&id);
    assert_eq!(status["branch"], "my-work");
    assert_eq!(status["base_ref"], "other");
    let record: Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(&id).join("task.json")).unwrap()).unwrap();
    assert_eq!(
        record["worktree"]["base_commit"].as_str().unwrap(),
        git(&h.project, &["rev-parse", "other"]).trim()
    );
    let default_base = h.submit_worktree_sh(&[], "true");
    assert_eq!(h.status(&default_base)["base_ref"], "main");

    let before = (
        branches(&h),
        git(&h.project, &["worktree", "list"]),
        std::fs::read_dir(h.project.join(".cuekit/tasks"))
            .unwrap()
            .count(),
    );
    let plain = h.root().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    for (args, what) in [
        (vec!["--base", "no-such-ref"], "does not resolve"),
        (vec!["--branch", "main"], "already exists"),
        (vec!["--branch", "bad..name"], "not a valid branch name"),
        (
            vec!["--cwd", plain.to_str().unwrap()],
            "not in a git repository",
        ),
    ] {
        let mut all = vec!["submit", "--worktree", "--agent", "command"];
        all.extend(args);
        all.push("true");
        let (error, code) = h.json(&all);
        assert_eq!(
            (error["error"]["code"].as_str(), code),
            (Some("invalid_input"), 3)
        );
        assert!(
            error["error"]["message"].as_str().unwrap().contains(what),
            "{error}"
        );
    }
    let (error, code) = h.json(&["submit", "--base", "main", "--agent", "command", "true"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_input"), 3)
    );
    let after = (
        branches(&h),
        git(&h.project, &["worktree", "list"]),
        std::fs::read_dir(h.project.join(".cuekit/tasks"))
            .unwrap()
            .count(),
    );
    assert_eq!(after, before);
    assert!(!plain.join(".cuekit").exists());
}

#[test]
fn submodules_are_populated_from_the_main_checkout() {
    let h = Harness::new();
    let lib = h.root().join("lib");
    init_repo(&lib);
    std::fs::write(lib.join("lib.txt"), "library code\n").unwrap();
    git(&lib, &["add", "-A"]);
    git(&lib, &["commit", "-qm", "lib"]);
    project_repo(&h.project, "original line\n");
    git(
        &h.project,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "vendor/lib",
        ],
    );
    git(&h.project, &["commit", "-qm", "add lib"]);

    let id = h.submit_worktree_sh(&[], "cat vendor/lib/lib.txt");
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    assert!(h.transcript(&id).contains("library code"));
    let sub = h.worktree_of(&id).join("vendor/lib");
    assert_eq!(
        git(&sub, &["rev-parse", "HEAD"]),
        git(&lib, &["rev-parse", "HEAD"])
    );
    assert_eq!(
        git(&sub, &["remote", "get-url", "origin"]).trim(),
        lib.to_str().unwrap(),
        "the submodule keeps its real URL"
    );
}

#[test]
fn gitignored_files_come_along_by_worktreeinclude_copy_and_symlink() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    std::fs::write(
        h.project.join(".gitignore"),
        ".cuekit/\n.env\nlocal.conf\ncache/\nprivate.key\nsecrets/\n",
    )
    .unwrap();
    std::fs::write(
        h.project.join(".worktreeinclude"),
        "# what a task needs\n.env\nunignored.txt\nsecrets/dev.key\n",
    )
    .unwrap();
    git(&h.project, &["add", "-A"]);
    git(&h.project, &["commit", "-qm", "ignores"]);
    std::fs::write(h.project.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(h.project.join("local.conf"), "conf\n").unwrap();
    std::fs::write(h.project.join("private.key"), "never copied\n").unwrap();
    std::fs::create_dir_all(h.project.join("secrets")).unwrap();
    std::fs::write(h.project.join("secrets/dev.key"), "dev\n").unwrap();
    std::fs::write(h.project.join("secrets/prod.key"), "prod\n").unwrap();
    std::fs::write(h.project.join("unignored.txt"), "untracked, not ignored\n").unwrap();
    std::fs::create_dir_all(h.project.join("cache/deep")).unwrap();
    std::fs::write(h.project.join("cache/deep/blob"), "cached\n").unwrap();
    h.user_config("worktree:\n  copy: [\"local.conf\"]\n  symlink: [\"cache\"]\n");

    let id = h.submit_worktree_sh(&[], "true");
    let tree = h.worktree_of(&id);
    assert_eq!(
        std::fs::read_to_string(tree.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("local.conf")).unwrap(),
        "conf\n"
    );
    assert!(!tree.join("private.key").exists(), "not asked for");
    assert_eq!(
        std::fs::read_to_string(tree.join("secrets/dev.key")).unwrap(),
        "dev\n"
    );
    assert!(!tree.join("secrets/prod.key").exists(), "not listed");
    assert!(
        !tree.join("unignored.txt").exists(),
        ".worktreeinclude copies only ignored files"
    );
    assert_eq!(
        std::fs::read_link(tree.join("cache")).unwrap(),
        h.project.join("cache")
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("cache/deep/blob")).unwrap(),
        "cached\n"
    );
}

#[test]
fn merge_goes_where_the_target_is_checked_out_and_refuses_a_dirty_target() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let release = h.root().join("release-wt");
    git(
        &h.project,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "release",
            release.to_str().unwrap(),
        ],
    );
    let id = h.submit_worktree_sh(&[], "echo fix > fix.txt");
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");

    std::fs::write(release.join("shared.txt"), "unsaved edit\n").unwrap();
    let task_branch = git(&h.project, &["rev-parse", &branch_of(&h, &id)]);
    let (error, code) = h.json(&["merge", &id, "--into", "release"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_state"), 5),
        "{error}"
    );
    assert_eq!(
        git(&h.project, &["rev-parse", &branch_of(&h, &id)]),
        task_branch
    );
    assert_eq!(
        git(&h.worktree_of(&id), &["status", "--porcelain"]),
        "?? fix.txt\n",
        "the task's work is still uncommitted"
    );
    git(&release, &["checkout", "--", "shared.txt"]);

    let main_before = git(&h.project, &["rev-parse", "HEAD"]);
    let (merged, code) = h.json(&["merge", &id, "--into", "release", "--squash"]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(merged["target_worktree"], release.to_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(release.join("fix.txt")).unwrap(),
        "fix\n"
    );
    assert_eq!(git(&h.project, &["rev-parse", "HEAD"]), main_before);
    assert_eq!(
        git(&h.project, &["branch", "--show-current"]).trim(),
        "main"
    );
    assert_eq!(
        git(&h.worktree_of(&id), &["branch", "--show-current"]).trim(),
        branch_of(&h, &id),
        "the task's worktree stays on its branch"
    );
    // Squashed: no ancestry, yet cuekit knows it went in.
    let (removed, _) = h.json(&["rm", &id]);
    assert_eq!(removed[0]["outcome"], "removed", "{removed}");
}

#[test]
fn a_failing_setup_fails_the_task_and_a_passing_one_runs_first() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let write_setup = |setup: &str| {
        h.user_config(&format!(
            "worktree:\n  setup: {}\n",
            serde_json::to_string(setup).unwrap()
        ))
    };
    write_setup("echo preparing the tree; exit 3");
    let failed = h.submit_worktree_sh(&[], "echo AGENT-RAN");
    let (_, code) = h.wait_all(std::slice::from_ref(&failed), "60s");
    assert_eq!(code, 20);
    let status = h.status(&failed);
    assert_eq!(status["status"], "failed");
    assert_eq!(status["reason"], "worktree_setup_failed", "{status}");
    assert_eq!(status["exit_code"], 3);
    let transcript = h.transcript(&failed);
    assert!(transcript.contains("preparing the tree"), "{transcript}");
    assert!(!transcript.contains("AGENT-RAN"), "{transcript}");

    write_setup("echo prepared > setup.txt");
    let ok = h.submit_worktree_sh(&[], "cat setup.txt");
    let (waited, code) = h.wait_all(std::slice::from_ref(&ok), "60s");
    assert_eq!(code, 0, "{waited}");
    assert!(h.transcript(&ok).contains("prepared"));
}

#[test]
fn rebase_replays_the_tasks_commits_and_fast_forwards_the_target() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(
        &[],
        "echo a > a.txt && git add a.txt && git commit -qm 'task a'",
    );
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");
    std::fs::write(h.project.join("b.txt"), "b\n").unwrap();
    git(&h.project, &["add", "b.txt"]);
    git(&h.project, &["commit", "-qm", "meanwhile on main"]);
    let (merged, code) = h.json(&["merge", &id, "--rebase"]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(git(&h.project, &["rev-list", "--merges", "main"]), "");
    assert_eq!(
        git(&h.project, &["log", "--format=%s", "main"]),
        "task a\nmeanwhile on main\ninit\n"
    );
    assert_eq!(
        git(&h.project, &["rev-parse", "main"]),
        git(&h.project, &["rev-parse", &branch_of(&h, &id)])
    );
    assert!(h.project.join("a.txt").is_file());
}

#[test]
fn doctor_reports_orphaned_worktrees_and_fix_removes_only_the_safe_ones() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "true");
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");
    let clean = h.root().join("orphan-clean");
    let dirty = h.root().join("orphan-dirty");
    for (path, branch) in [
        // Only cuekit's own branch names (`cuekit/` and a task id) can be orphans.
        (&clean, "cuekit/t_00000000c1ea"),
        (&dirty, "cuekit/t_00000000d1d1"),
    ] {
        git(
            &h.project,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                branch,
                path.to_str().unwrap(),
            ],
        );
    }
    std::fs::write(dirty.join("unsaved.txt"), "work\n").unwrap();
    let check = |args: &[&str]| {
        let (checks, _) = h.json(args);
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "task worktrees")
            .cloned()
            .unwrap()
    };
    let found = check(&["doctor"]);
    assert_eq!(found["level"], "warn", "{found}");
    let message = found["message"].as_str().unwrap();
    assert!(
        message.contains("orphan-clean") && message.contains("safe to remove"),
        "{message}"
    );
    assert!(
        message.contains("orphan-dirty") && message.contains("uncommitted"),
        "{message}"
    );
    assert!(
        !message.contains(&id),
        "a task's own worktree is no orphan: {message}"
    );
    assert!(clean.exists(), "doctor without --fix changes nothing");

    let fixed = check(&["doctor", "--fix"]);
    assert!(
        fixed["fixed"].as_str().unwrap().contains("orphan-clean"),
        "{fixed}"
    );
    assert!(!clean.exists());
    assert!(!branches(&h).contains("orphan-clean"));
    assert!(dirty.join("unsaved.txt").is_file());
    assert!(h.worktree_of(&id).is_dir());
}

#[test]
fn a_worktree_that_cannot_be_inspected_is_kept_even_when_forced() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "true");
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");
    let worktree = h.worktree_of(&id);
    let (git_dir, hidden) = (h.project.join(".git"), h.project.join("git-moved-away"));
    std::fs::rename(&git_dir, &hidden).unwrap();
    let (kept, code) = h.json(&["rm", "--force", &id]);
    std::fs::rename(&hidden, &git_dir).unwrap();
    assert_eq!(code, 36, "a kept task fails the rm (work_kept): {kept}");
    assert_eq!(kept[0]["outcome"], "kept", "{kept}");
    assert_eq!(
        kept[0]["reasons"][0]["reason"], "inspection_failed",
        "{kept}"
    );
    assert!(worktree.is_dir() && h.task_dir(&id).is_dir());
    let (removed, _) = h.json(&["rm", &id]);
    assert_eq!(removed[0]["outcome"], "removed", "{removed}");
}

/// A `git` that, asked to remove a worktree, deletes part of it (its `.git` file first, then
/// some of its files) and kills the cuekit that ran it: what `rm` killed together with its git
/// (a closed terminal, a parent's timeout on the process group) leaves half-way.
fn git_killed_half_way(dir: &Path) -> std::path::PathBuf {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .unwrap();
    let bin = dir.join("killer-git");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do last=\"$a\"; done\ncase \" $* \" in\n  *\" worktree remove \"*)\n    rm -f \"$last/.git\" \"$last\"/d*/f1 \"$last\"/d*/f2\n    kill -9 $PPID; exit 137 ;;\nesac\nexec {} \"$@\"\n",
        real.display()
    );
    std::fs::write(bin.join("git"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// `rm` killed with its git half-way through deleting a merged task's checkout: the next `rm`
/// finishes it (the checkout holds nothing its merged tip lacks: files only deleted), while a
/// file written into such a half-removed checkout since keeps it.
#[test]
fn rm_killed_with_its_git_half_way_is_finished_by_the_next_rm_and_nothing_new_is_lost() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let files = |dir: &str| {
        format!(
            "mkdir {dir} && for k in 1 2 3 4 5 6; do echo $k > {dir}/f$k; done && git add {dir} && git commit -qm {dir}"
        )
    };
    let ids = [
        h.submit_worktree_sh(&[], &files("d1")),
        h.submit_worktree_sh(&[], &files("d2")),
    ];
    let (waited, code) = h.wait_all(&ids, "60s");
    assert_eq!(code, 0, "{waited}");
    let killer = git_killed_half_way(h.root());
    let path = format!("{}:{}", killer.display(), std::env::var("PATH").unwrap());
    let worktrees = ids.clone().map(|id| h.worktree_of(&id));
    for (id, worktree) in ids.iter().zip(&worktrees) {
        let (merged, code) = h.json(&["merge", id]);
        assert_eq!(code, 0, "{merged}");
        let killed = h
            .cuekit()
            .args(["rm", id])
            .env("PATH", &path)
            .output()
            .unwrap();
        assert_eq!(killed.status.code(), None, "rm was not killed: {killed:?}");
        assert!(worktree.is_dir() && !worktree.join(".git").exists());
    }
    let added = worktrees[1].join("d2/new.txt");
    std::fs::write(&added, "written after the kill\n").unwrap();

    let (removed, code) = h.json(&["rm", &ids[0]]);
    assert_eq!(
        (code, removed[0]["outcome"].as_str()),
        (0, Some("removed")),
        "{removed}"
    );
    assert!(!worktrees[0].exists());
    let listed = git(&h.project, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains(ids[0].as_str()), "{listed}");

    let (kept, code) = h.json(&["rm", &ids[1]]);
    assert_eq!(code, 36, "{kept}");
    assert_eq!(
        kept[0]["reasons"][0]["reason"], "uncommitted_changes",
        "{kept}"
    );
    assert_eq!(
        std::fs::read_to_string(&added).unwrap(),
        "written after the kill\n"
    );
}

#[test]
fn a_copy_never_overwrites_a_file_the_worktree_has() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    git(&h.project, &["switch", "-q", "-c", "other"]);
    std::fs::write(h.project.join("local.conf"), "tracked on other\n").unwrap();
    git(&h.project, &["add", "local.conf"]);
    git(&h.project, &["commit", "-qm", "other tracks local.conf"]);
    git(&h.project, &["switch", "-q", "main"]);
    std::fs::write(h.project.join("local.conf"), "main's untracked copy\n").unwrap();
    h.user_config("worktree:\n  copy: [\"local.conf\"]\n");
    let id = h.submit_worktree_sh(&["--base", "other"], "true");
    assert_eq!(
        std::fs::read_to_string(h.worktree_of(&id).join("local.conf")).unwrap(),
        "tracked on other\n"
    );
    let plain = h.submit_worktree_sh(&[], "true");
    assert_eq!(
        std::fs::read_to_string(h.worktree_of(&plain).join("local.conf")).unwrap(),
        "main's untracked copy\n"
    );
}

#[test]
fn defaults_worktree_makes_it_the_default_and_no_worktree_overrides_it() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    h.user_config("defaults:\n  worktree: true\n");
    let isolated = h.submit(&["--agent", "command", "--mode", "batch", "true"]);
    assert_eq!(h.status(&isolated)["branch"], format!("cuekit/{isolated}"));
    let shared = h.submit(&[
        "--no-worktree",
        "--agent",
        "command",
        "--mode",
        "batch",
        "true",
    ]);
    assert!(h.status(&shared).get("branch").is_none());
}

#[test]
fn a_live_process_inside_keeps_an_ended_tasks_worktree() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "true");
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");
    let worktree = h.worktree_of(&id);
    let mut lingering = Command::new("sleep")
        .arg("60")
        .current_dir(&worktree)
        .spawn()
        .unwrap();
    let (kept, code) = h.json(&["prune"]);
    assert_eq!(code, 36, "{kept}");
    assert_eq!(kept[0]["outcome"], "kept", "{kept}");
    assert_eq!(kept[0]["reasons"][0]["reason"], "live_process");
    assert_eq!(kept[0]["reasons"][0]["detail"][0], lingering.id());
    lingering.kill().unwrap();
    lingering.wait().unwrap();
    let (removed, _) = h.json(&["prune"]);
    assert_eq!(removed[0]["outcome"], "removed", "{removed}");
    assert!(!worktree.exists());
}

#[test]
fn a_project_files_setup_runs_only_once_the_file_is_trusted() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        "worktree:\n  setup: echo from the project > setup.txt\n",
    )
    .unwrap();
    let (error, code) = h.json(&[
        "submit",
        "--worktree",
        "--agent",
        "command",
        "--mode",
        "batch",
        "true",
    ]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("config_untrusted"), 14)
    );
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("worktree.setup"),
        "{error}"
    );
    assert!(
        !h.root().join("project.worktrees").exists(),
        "nothing was created"
    );
    // A task without a worktree never runs the setup, so it needs no trust.
    h.submit(&["--agent", "command", "--mode", "batch", "true"]);
    h.trust(&[]);
    let id = h.submit_worktree_sh(&[], "cat setup.txt");
    let (waited, code) = h.wait_all(std::slice::from_ref(&id), "60s");
    assert_eq!(code, 0, "{waited}");
    assert!(h.transcript(&id).contains("from the project"));
}

#[test]
fn concurrent_merges_and_prunes_of_one_repository_do_not_trip_over_each_other() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let ids: Vec<String> = (0..4)
        .map(|i| h.submit_worktree_sh(&[], &format!("echo {i} > file{i}.txt")))
        .collect();
    let (waited, code) = h.wait_all(&ids, "60s");
    assert_eq!(code, 0, "{waited}");
    let run_all = |commands: Vec<Vec<String>>| {
        let children: Vec<_> = commands
            .iter()
            .map(|args| {
                h.cuekit()
                    .arg("--json")
                    .args(args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (child, args) in children.into_iter().zip(&commands) {
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "{args:?}: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    run_all(
        ids.iter()
            .map(|id| vec!["merge".to_string(), id.clone()])
            .collect(),
    );
    for i in 0..4 {
        assert!(h.project.join(format!("file{i}.txt")).is_file());
    }
    run_all(vec![vec!["prune".to_string()], vec!["prune".to_string()]]);
    assert_eq!(h.json(&["list"]).0.as_array().unwrap().len(), 0);
    assert_eq!(branches(&h).lines().count(), 1, "{}", branches(&h));
    assert_eq!(
        git(&h.project, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

/// A `submit --worktree` killed at any instant: the next cuekit call undoes it whole, so every
/// worktree and `cuekit/` branch left belongs to a recorded task (the pending entry names the
/// worktree before git is asked to make it).
#[test]
fn a_worktree_submit_killed_at_any_instant_leaves_no_worktree_or_branch_behind() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let mut seed: u64 = 0x0dd_ba11;
    for _ in 0..24 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = (seed >> 33) % 120;
        let mut child = h
            .cuekit()
            .args([
                "submit",
                "--worktree",
                "--agent",
                "command",
                "--",
                "sleep",
                "600",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
    }
    // A tmux client orphaned by the kill finishes within milliseconds.
    h.tmux_clients_gone();
    assert_eq!(h.json(&["list"]).1, 0);
    let registered = |id: &str| h.home.join(".local/share/cuekit/tasks").join(id).is_file();
    let worktrees = git(&h.project, &["worktree", "list", "--porcelain"]);
    let strays: Vec<&str> = worktrees
        .lines()
        .filter_map(|line| line.strip_prefix("branch refs/heads/cuekit/"))
        .filter(|id| !registered(id))
        .collect();
    assert!(
        strays.is_empty(),
        "worktrees of no task: {strays:?}\n{worktrees}"
    );
    let branches = git(
        &h.project,
        &["branch", "--list", "cuekit/*", "--format=%(refname:short)"],
    );
    let strays: Vec<&str> = branches
        .lines()
        .filter_map(|b| b.strip_prefix("cuekit/"))
        .filter(|id| !registered(id))
        .collect();
    assert!(strays.is_empty(), "branches of no task: {strays:?}");
    let folders: Vec<String> = std::fs::read_dir(h.root().join("project.worktrees"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|id| !registered(id))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        folders.is_empty(),
        "worktree folders of no task: {folders:?}"
    );
}

/// Git's merge state in the user's checkout (what an unfinished `git merge` leaves).
fn merge_leftovers(repo: &Path) -> Vec<&'static str> {
    [
        "MERGE_HEAD",
        "MERGE_MSG",
        "AUTO_MERGE",
        "SQUASH_MSG",
        "cuekit-landing",
    ]
    .into_iter()
    .filter(|name| repo.join(".git").join(name).exists())
    .collect()
}

/// Issue 42: `cuekit merge` killed (SIGKILL) at random instants, twenty times: no merge state
/// is ever left in the user's checkout, nothing is lost, and the next merge finishes the job.
#[test]
fn a_merge_killed_at_any_instant_leaves_no_merge_state_and_the_next_one_works() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "echo 0 > work-0.txt");
    h.wait_ok(std::slice::from_ref(&id), &limits::arg(limits::AGENT));
    let worktree = h.worktree_of(&id);
    let started = std::time::Instant::now();
    h.ok(&["merge", &id]);
    let full = u64::try_from(started.elapsed().as_millis()).unwrap_or(1000);
    let mut seed: u64 = 0x42_f00d;
    for round in 1..=20u32 {
        std::fs::write(
            worktree.join(format!("work-{round}.txt")),
            format!("{round}\n"),
        )
        .unwrap();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = (seed >> 33) % (full + 1);
        let mut child = h
            .cuekit()
            .args(["merge", &id])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever git the kill orphaned finishes within moments.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let left: Vec<&str> = merge_leftovers(&h.project)
            .into_iter()
            .filter(|name| *name != "cuekit-landing")
            .collect();
        assert!(
            left.is_empty(),
            "round {round} (killed after {delay} ms) left {left:?}"
        );
        let (merged, code) = h.json(&["merge", &id]);
        assert_eq!(code, 0, "round {round} (killed after {delay} ms): {merged}");
        assert!(merge_leftovers(&h.project).is_empty(), "round {round}");
        assert_eq!(
            git(&h.project, &["status", "--porcelain"]),
            "",
            "round {round}: the checkout follows its branch"
        );
        for k in 0..=round {
            assert_eq!(
                std::fs::read_to_string(h.project.join(format!("work-{k}.txt")))
                    .unwrap_or_default(),
                format!("{k}\n"),
                "round {round}: work-{k}.txt"
            );
        }
    }
}

/// Issue 42: what an interrupted merge left is put right by the next one: cuekit's own
/// landing cut between the branch's move and the checkout's (by the recovery rule), and an
/// older cuekit's unfinished `git merge` (MERGE_HEAD, MERGE_MSG) in the user's checkout.
#[test]
fn the_next_merge_repairs_what_an_interrupted_merge_left_in_the_checkout() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let first = h.submit_worktree_sh(&[], "echo a > a.txt && git add a.txt && git commit -qm a");
    let second = h.submit_worktree_sh(&[], "echo b > b.txt");
    h.wait_ok(&[&first, &second], &limits::arg(limits::AGENT));
    // An older cuekit's `git merge` cut short: its message, MERGE_HEAD, the change staged.
    git(
        &h.project,
        &[
            "merge",
            "--no-ff",
            "--no-commit",
            "-m",
            &format!("cuekit task {first}: a"),
            &branch_of(&h, &first),
        ],
    );
    assert!(merge_leftovers(&h.project).contains(&"MERGE_HEAD"));
    let (merged, code) = h.json(&["merge", &first]);
    assert_eq!(code, 0, "{merged}");
    assert!(
        merged["repaired"]
            .as_str()
            .unwrap_or_default()
            .contains("older cuekit"),
        "{merged}"
    );
    assert!(merge_leftovers(&h.project).is_empty());
    assert_eq!(git(&h.project, &["status", "--porcelain"]), "");
    assert!(h.project.join("a.txt").is_file());

    // cuekit's own landing cut after the branch moved: the branch holds the merge, the
    // checkout still the old head (the merge shows as staged reversed).
    let old = git(&h.project, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(h.project.join("c.txt"), "c\n").unwrap();
    git(&h.project, &["add", "c.txt"]);
    git(&h.project, &["commit", "-qm", "c"]);
    let new = git(&h.project, &["rev-parse", "HEAD"]).trim().to_string();
    git(&h.project, &["reset", "-q", "--hard", &old]);
    git(&h.project, &["update-ref", "refs/heads/main", &new, &old]);
    std::fs::write(
        h.project.join(".git/cuekit-landing"),
        format!("refs/heads/main {old} {new}\n"),
    )
    .unwrap();
    assert_ne!(git(&h.project, &["status", "--porcelain"]), "");
    let (merged, code) = h.json(&["merge", &second]);
    assert_eq!(code, 0, "{merged}");
    assert!(
        merged["repaired"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted merge"),
        "{merged}"
    );
    assert!(merge_leftovers(&h.project).is_empty());
    assert_eq!(git(&h.project, &["status", "--porcelain"]), "");
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert!(h.project.join(file).is_file(), "{file}");
    }
}

/// Issue 51: merging a task's work a second time changes nothing and says so, instead of
/// "merged into main" again.
#[test]
fn a_second_merge_of_the_same_work_says_nothing_was_left_to_merge() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "echo fix > fix.txt");
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    let first = h.ok(&["merge", &id]);
    assert!(first.contains("merged into main"), "{first}");
    let head = git(&h.project, &["rev-parse", "HEAD"]);
    let second = h.ok(&["merge", &id]);
    assert!(
        second.contains("nothing to merge") && !second.contains("merged into"),
        "{second}"
    );
    assert_eq!(git(&h.project, &["rev-parse", "HEAD"]), head);
    let (again, code) = h.json(&["merge", &id]);
    assert_eq!(
        (code, &again["already_merged"]),
        (0, &Value::Bool(true)),
        "{again}"
    );
}

/// `.cuekit/tasks/` made first by another user (or left writable by others), or a project
/// folder others can write to (they could rename `.cuekit/` away): that user could swap a new
/// task's folder for one of their own, whose `launch.sh` this user's pane would run and whose
/// links would take this user's writes. The submit is refused before anything runs.
#[test]
fn a_tasks_folder_another_user_can_change_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let tasks = h.project.join(".cuekit/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    let open = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let submit = || {
        h.run(&[
            "submit",
            "--agent",
            "command",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "echo ran > ran.txt",
        ])
    };
    let refused = |out: std::process::Output, why: &str| {
        assert_eq!(out.status.code(), Some(29), "{why}: {out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(why), "{said}");
        assert!(
            said.contains("chmod go-w"),
            "the hint names the way out: {said}"
        );
        assert!(
            !h.project.join("ran.txt").exists(),
            "a task ran from a folder another user can change"
        );
    };
    // Another user's, world-writable: made first by them.
    open(&tasks, 0o777);
    open(&h.project.join(".cuekit"), 0o777);
    std::os::unix::fs::chown(&tasks, Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(h.project.join(".cuekit"), Some(65534), Some(65534)).unwrap();
    refused(submit(), "belongs to another user");
    // This user's, but writable by others.
    let me = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    std::os::unix::fs::chown(&tasks, Some(me), None).unwrap();
    std::os::unix::fs::chown(h.project.join(".cuekit"), Some(me), None).unwrap();
    open(&h.project.join(".cuekit"), 0o700);
    refused(submit(), "others can write");
    // The project folder writable by others.
    open(&tasks, 0o700);
    open(&h.project, 0o777);
    refused(submit(), "others can write");
    open(&h.project, 0o755);
    let id = h.submit_sh("echo ran > ran.txt", &[]);
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    assert!(h.project.join("ran.txt").exists(), "a safe folder is used");
    let made = std::fs::metadata(tasks.join(&id)).unwrap();
    assert_eq!(made.permissions().mode() & 0o777, 0o700);
}

/// The checkouts' folder (`{repo}.worktrees`, a sibling of the repository) made first by
/// another user in a shared folder: its owner could swap a task's checkout for a tree of their
/// own, which `merge` would land. A folder others can write to is refused at submit, and one
/// that turns another user's after the submit is refused by `diff` and `merge`.
#[test]
fn a_checkouts_folder_another_user_can_change_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let folder = h.project.with_extension("worktrees");
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = h.run(&[
        "submit",
        "--agent",
        "command",
        "--worktree",
        "--mode",
        "batch",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(29), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("others can write to it"), "{said}");
    assert!(
        said.contains("worktree.dir"),
        "the hint names the way out: {said}"
    );
    // Made by cuekit (no folder there): writable by this user alone, whatever the umask.
    std::fs::remove_dir(&folder).unwrap();
    let id = h.submit_worktree_sh(&[], "echo mine > work.txt");
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755, "{mode:o}");
    let (diff, code) = h.json(&["diff", &id]);
    assert_eq!(code, 0, "{diff}");
    // Another user takes the folder over (here: it becomes theirs).
    std::os::unix::fs::chown(&folder, Some(65534), Some(65534)).unwrap();
    for verb in ["diff", "merge"] {
        let (out, code) = h.json(&[verb, &id, "--yes"][..if verb == "diff" { 2 } else { 3 }]);
        assert_eq!(code, 29, "{verb}: {out}");
    }
    assert!(
        !h.project.join("work.txt").exists(),
        "the merge went ahead in a folder another user owns"
    );
}

/// A file of the user's that git ignores (a `settings.local`, an `out/` of results: often the
/// only copy) where the task's work adds a file: git's own update takes ignored files as
/// expendable. The merge is refused, naming them, and nothing changes.
#[test]
fn a_merge_never_writes_over_the_users_ignored_files() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::write(h.project.join(".gitignore"), "*.local\nout/\n").unwrap();
    crate::harness::git::commit_all(&h.project, "ignore local files");
    std::fs::write(h.project.join("settings.local"), "token=mine\n").unwrap();
    std::fs::create_dir(h.project.join("out")).unwrap();
    std::fs::write(h.project.join("out/results.csv"), "ten hours\n").unwrap();
    let file = h.submit_worktree_sh(
        &[],
        "echo theirs > settings.local && git add -f settings.local && git commit -qm s",
    );
    let folder = h.submit_worktree_sh(&[], "echo x > out && git add -f out && git commit -qm o");
    h.wait_ok(&[&file, &folder], &limits::arg(limits::TASK));
    for (id, named) in [(&file, "settings.local"), (&folder, "out")] {
        let (out, code) = h.json(&["merge", id, "--yes"]);
        assert_eq!(code, 5, "{out}");
        let message = out["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{out}");
    }
    assert_eq!(
        std::fs::read_to_string(h.project.join("settings.local")).unwrap(),
        "token=mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join("out/results.csv")).unwrap(),
        "ten hours\n"
    );
    assert_eq!(
        git(&h.project, &["log", "--format=%s", "-1"]).trim(),
        "ignore local files"
    );
}

/// A merge that landed but whose record could not be written (a full disk; here the record's
/// place taken by a folder) says it merged, with a warning, never `io` as if nothing happened;
/// the next merge says "nothing to merge" and writes the record.
#[test]
fn a_merge_whose_record_cannot_be_written_still_says_it_merged() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let id = h.submit_worktree_sh(&[], "echo work > work.txt");
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    let record = h.home.join(format!(".local/share/cuekit/tasks/{id}.merge"));
    std::fs::create_dir_all(record.join("blocker")).unwrap();
    let out = h.run(&["--json", "merge", &id, "--yes"]);
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .contains("could not be written"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join("work.txt")).unwrap(),
        "work\n"
    );
    std::fs::remove_dir_all(&record).unwrap();
    let (again, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["already_merged"], true, "{again}");
    assert!(record.is_file(), "the next merge wrote the record");
}

/// A merge whose process group was killed while `read-tree` brought the checkout up: the
/// branch holds the merge, the index too, files it adds missing or half-written, and that
/// `read-tree` (in a group of its own) may still hold the index lock. The next merge waits for
/// the lock, writes those files again and finishes; the journal is never dropped while the
/// checkout does not show the branch.
#[test]
fn a_merge_killed_in_read_tree_is_finished_by_the_next_merge_never_dropping_its_journal() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let id = h.submit_worktree_sh(&[], "echo b > b.txt");
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    let old = git(&h.project, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::create_dir(h.project.join("d")).unwrap();
    for k in 1..=20 {
        std::fs::write(h.project.join(format!("d/f{k}.txt")), format!("file {k}\n")).unwrap();
    }
    git(&h.project, &["add", "d"]);
    git(&h.project, &["commit", "-qm", "d"]);
    let new = git(&h.project, &["rev-parse", "HEAD"]).trim().to_string();
    for k in 1..=5 {
        std::fs::remove_file(h.project.join(format!("d/f{k}.txt"))).unwrap();
    }
    std::fs::write(h.project.join("d/f6.txt"), "fil").unwrap();
    let journal = h.project.join(".git/cuekit-landing");
    std::fs::write(&journal, format!("refs/heads/main {old} {new}\n")).unwrap();
    let lock = h.project.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let held = lock.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(1));
        std::fs::remove_file(held).unwrap();
    });
    let (merged, code) = h.json(&["merge", &id]);
    writer.join().unwrap();
    assert_eq!(code, 0, "{merged}");
    assert!(
        merged["repaired"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted merge"),
        "{merged}"
    );
    assert!(!journal.exists());
    assert_eq!(git(&h.project, &["status", "--porcelain"]), "");
    for k in 1..=20 {
        assert_eq!(
            std::fs::read_to_string(h.project.join(format!("d/f{k}.txt"))).unwrap(),
            format!("file {k}\n")
        );
    }
    assert!(h.project.join("b.txt").is_file());
}

/// The same state with a change of the user's in the checkout: refused, saying the branch is
/// at the merge (never "nothing was changed"), the journal kept for the next merge.
#[test]
fn a_checkout_behind_its_merge_with_changes_of_yours_is_refused_keeping_the_journal() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let id = h.submit_worktree_sh(&[], "echo b > b.txt");
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    let old = git(&h.project, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(h.project.join("c.txt"), "c\n").unwrap();
    git(&h.project, &["add", "c.txt"]);
    git(&h.project, &["commit", "-qm", "c"]);
    let new = git(&h.project, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::remove_file(h.project.join("c.txt")).unwrap();
    std::fs::write(h.project.join("shared.txt"), "mine\n").unwrap();
    let journal = h.project.join(".git/cuekit-landing");
    std::fs::write(&journal, format!("refs/heads/main {old} {new}\n")).unwrap();
    let (refused, code) = h.json(&["merge", &id]);
    assert_eq!(code, 5, "{refused}");
    let text = refused.to_string();
    assert!(text.contains("is at the merge"), "{refused}");
    assert!(!text.contains("nothing was changed"), "{refused}");
    assert!(journal.exists(), "the journal was dropped");
}

/// A pass recorded while the task ran, followed by the task's own failing check (a process the
/// child left could ask for that pass at a moment of its choosing): a plain merge refuses it,
/// naming the failure, and lands nothing; `--unchecked` is still there.
#[test]
fn a_pass_a_later_failure_followed_while_the_task_ran_is_not_what_a_plain_merge_takes() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let ready = h.root().join("ready");
    let go = h.root().join("go");
    let script = format!(
        "echo 1 > impl.txt; echo evil > evil.txt; touch '{}'; \
         while [ ! -f '{}' ]; do sleep 0.1; done; rm evil.txt; echo 0 > impl.txt",
        ready.display(),
        go.display()
    );
    let id = h.submit_worktree_sh(&["--check", "grep -q 1 impl.txt"], &script);
    assert!(crate::harness::poll(limits::TASK, || ready.exists()));
    let (checked, _) = h.json(&["check", &id]);
    assert!(checked.to_string().contains("passed"), "{checked}");
    std::fs::write(&go, "").unwrap();
    h.wait_ended(&[&id], &limits::arg(limits::TASK));
    assert_eq!(h.status(&id)["status"], "failed");
    let head = git(&h.project, &["rev-parse", "HEAD"]);
    let (refused, code) = h.json(&["merge", &id]);
    assert_ne!(code, 0, "{refused}");
    assert!(
        refused.to_string().contains("last check failed"),
        "{refused}"
    );
    assert_eq!(git(&h.project, &["rev-parse", "HEAD"]), head);
    assert!(!h.project.join("evil.txt").exists());
}

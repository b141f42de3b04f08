//! Nothing of a child's is deleted (issue 43): before `rm`, `prune` or a race's cleanup
//! removes a checkout, cuekit takes an inventory of what its git dir and submodules hold — a
//! stash, a side branch, a submodule's commits and files — and keeps what nothing else
//! keeps, saying what and where (`work_kept`, exit 36). Real git, tmux and /bin/sh; `command`
//! children doing what the audit's children did.

use crate::harness::limits;
use std::path::Path;

use serde_json::Value;

use crate::harness::Harness;
use crate::harness::git::{commit_all, git, init_repo, project_repo};

/// git for a child's script: an identity of its own.
const G: &str = "git -c user.name=c -c user.email=c@x";

/// The project, with a library at `vendor/lib` as a submodule.
fn project_with_submodule(h: &Harness) {
    let lib = h.root().join("lib");
    init_repo(&lib);
    std::fs::write(lib.join("lib.txt"), "library code\n").unwrap();
    commit_all(&lib, "lib");
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
}

/// The task's one row of an `rm`/`prune` answer.
fn row<'a>(answer: &'a Value, id: &str) -> &'a Value {
    answer
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .find(|r| r["task_id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {answer}"))
}

/// The unsaved things a row names: (holder, name).
fn unsaved(row: &Value) -> Vec<(String, String)> {
    row["reasons"]
        .as_array()
        .map(|reasons| {
            reasons
                .iter()
                .filter(|r| r["reason"] == "unsaved")
                .map(|r| {
                    (
                        r["detail"]["holder"].as_str().unwrap().to_string(),
                        r["detail"]["name"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `rm ID` keeps the task (exit 36, `kept`), naming `expected` among what it keeps; the
/// checkout is still there.
fn rm_keeps(h: &Harness, id: &str, expected: &[(&str, &str)]) -> Value {
    let worktree = h.worktree_of(id);
    let (answer, code) = h.json(&["rm", id]);
    assert_eq!(code, 36, "rm must fail closed: {answer}");
    let row = row(&answer, id);
    assert_eq!(row["outcome"], "kept", "{answer}");
    let found = unsaved(row);
    for (holder, name) in expected {
        assert!(
            found.iter().any(|(h, n)| h == holder && n == name),
            "{holder} {name} not named in {answer}"
        );
    }
    assert!(worktree.is_dir(), "the checkout was removed: {answer}");
    assert!(h.task_dir(id).join("task.json").is_file());
    let text = String::from_utf8_lossy(&h.run(&["rm", id]).stdout).into_owned();
    for (_, name) in expected {
        assert!(text.contains(name), "the text does not say {name}: {text}");
    }
    answer
}

fn removed_by_force(h: &Harness, id: &str) {
    let worktree = h.worktree_of(id);
    let (gone, code) = h.json(&["rm", "--force", id]);
    assert_eq!(code, 0, "{gone}");
    assert_eq!(row(&gone, id)["outcome"], "removed", "{gone}");
    assert!(!worktree.exists());
}

/// The audit: a sandboxed task's own repository holding a stash, or a commit on a side
/// branch, was deleted by `rm` without `--force` (only `HEAD` was inspected). Both kinds of
/// sandboxed task.
#[test]
fn a_sandboxed_tasks_stash_and_side_branch_keep_it() {
    for kind in [&[][..], &["--worktree"][..]] {
        let h = Harness::new();
        project_repo(&h.project, "original line\n");
        let script = format!(
            "set -e; echo draft > drafted.txt; {G} add drafted.txt; {G} stash -q; \
             {G} checkout -q -b side; echo b > side.txt; {G} add side.txt; \
             {G} commit -qm side; {G} checkout -q -; echo DONE"
        );
        let mut extra = vec!["--sandbox", "--mode", "batch"];
        extra.extend(kind);
        let id = h.submit_sh(&script, &extra);
        h.wait_ok(std::slice::from_ref(&id), &limits::arg(limits::AGENT));
        assert!(h.transcript(&id).contains("DONE"), "{}", h.transcript(&id));
        // The checkout itself is clean: only the git dir holds the work.
        let (diff, code) = h.json(&["diff", &id, "--stat"]);
        assert_eq!(code, 0, "{diff}");
        assert_eq!(diff["files"].as_array().unwrap().len(), 0, "{diff}");
        let (plan, code) = h.json(&["rm", "--dry-run", &id]);
        assert_eq!(code, 0, "a dry run only tells: {plan}");
        assert_eq!(row(&plan, &id)["outcome"], "would_keep", "{plan}");
        rm_keeps(
            &h,
            &id,
            &[("ref", "refs/stash"), ("ref", "refs/heads/side")],
        );
        let (pruned, code) = h.json(&["prune"]);
        assert_eq!(code, 36, "{pruned}");
        assert_eq!(row(&pruned, &id)["outcome"], "kept", "{pruned}");
        removed_by_force(&h, &id);
    }
}

/// The audit: a child's edits inside a submodule (which cuekit initialises in every
/// checkout) were invisible — `diff` said nothing changed and `rm` removed them — and so
/// was a commit it made on a branch of the submodule. Unsandboxed worktrees.
#[test]
fn a_submodules_files_and_commits_keep_a_worktree_and_diff_names_it() {
    let h = Harness::new();
    project_with_submodule(&h);
    let edited = h.submit_worktree_sh(&[], "echo edit >> vendor/lib/lib.txt");
    let committed = h.submit_worktree_sh(
        &[],
        &format!(
            "set -e; cd vendor/lib; {G} checkout -q -b feature; echo n > new.txt; \
             {G} add new.txt; {G} commit -qm new; {G} checkout -q -"
        ),
    );
    h.wait_ok(&[&edited, &committed], &limits::arg(limits::AGENT));

    let (diff, code) = h.json(&["diff", &edited]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(
        diff["submodules"],
        serde_json::json!(["vendor/lib"]),
        "{diff}"
    );
    let text = h.ok(&["diff", &edited, "--stat"]);
    assert!(text.contains("vendor/lib"), "{text}");
    let (result, _) = h.json(&["result", &edited]);
    assert_eq!(
        result["submodules_changed"],
        serde_json::json!(["vendor/lib"]),
        "{result}"
    );
    let (refused, code) = h.json(&["merge", &edited, "--yes"]);
    assert_eq!(code, 37, "{refused}");
    assert_eq!(refused["error"]["code"], "submodule_work", "{refused}");
    assert!(refused.to_string().contains("vendor/lib"), "{refused}");

    rm_keeps(&h, &edited, &[("submodule_changes", "vendor/lib")]);
    rm_keeps(&h, &committed, &[("submodule_commits", "vendor/lib")]);
    let lib = h.worktree_of(&committed).join("vendor/lib");
    assert!(git(&lib, &["branch", "--list", "feature"]).contains("feature"));
    removed_by_force(&h, &edited);
    removed_by_force(&h, &committed);
}

/// The audit: a sandboxed child committed in a submodule and recorded the new commit in its
/// own history; `merge --yes` said "merged into main" and left a gitlink to a commit that only
/// the task's repository had, and `rm` deleted it. Now the merge refuses, naming the
/// submodule, and `rm` keeps the task.
#[test]
fn a_submodule_commit_of_a_sandboxed_task_is_neither_merged_nor_removed() {
    let h = Harness::new();
    project_with_submodule(&h);
    let script = format!(
        "set -e; cd vendor/lib; echo n > new.txt; {G} add new.txt; {G} commit -qm new; \
         cd ../..; {G} add vendor/lib; {G} commit -qm 'lib moved'; echo DONE"
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(std::slice::from_ref(&id), &limits::arg(limits::AGENT));
    assert!(h.transcript(&id).contains("DONE"), "{}", h.transcript(&id));
    let main_before = git(&h.project, &["rev-parse", "main"]);
    let (refused, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 37, "{refused}");
    assert!(refused.to_string().contains("vendor/lib"), "{refused}");
    assert_eq!(git(&h.project, &["rev-parse", "main"]), main_before);
    rm_keeps(&h, &id, &[("submodule_commits", "vendor/lib")]);
    removed_by_force(&h, &id);
}

/// The audit: a race loser's kept ref lacked its submodule edits while its checkout was
/// removed. Now a loser whose inventory is not empty keeps its checkout, and the race says so.
#[test]
fn a_race_loser_with_submodule_work_keeps_its_checkout() {
    let h = Harness::new();
    crate::checks::checked_project(&h);
    let lib = h.root().join("lib");
    init_repo(&lib);
    std::fs::write(lib.join("lib.txt"), "library code\n").unwrap();
    commit_all(&lib, "lib");
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
    let script = "echo answer=42 > answer.txt; echo edit >> vendor/lib/lib.txt";
    let mut args = vec!["submit", "--best-of", "2", "--mode", "batch"];
    args.extend(["--check", "sh tests/check.sh", "--check-rounds", "0"]);
    args.extend(crate::harness::sh_task(script, &[]));
    let (race, code) = h.json(&args);
    assert_eq!(code, 0, "{race}");
    let race_id = race["race"].as_str().unwrap().to_string();
    let (waited, _) = h.json(&["wait", &race_id, "--timeout", "90s"]);
    let (result, _) = h.json(&["result", &race_id]);
    assert_eq!(result["state"], "decided", "{waited}\n{result}");
    let winner = result["pick"]["winner"].as_str().unwrap();
    let ids: Vec<String> = race["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let loser = ids.iter().find(|id| *id != winner).unwrap();
    let checkout = h.worktree_of(loser);
    assert!(
        checkout.is_dir(),
        "the loser's checkout was removed: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("vendor/lib/lib.txt")).unwrap(),
        "library code\nedit\n"
    );
    assert!(
        result.to_string().contains("vendor/lib"),
        "the race does not say why: {result}"
    );
}

/// A clean, merged task still goes, and a submodule left as the base had it keeps nothing.
#[test]
fn a_clean_task_with_an_untouched_submodule_is_removed() {
    let h = Harness::new();
    project_with_submodule(&h);
    let id = h.submit_worktree_sh(&[], "cat vendor/lib/lib.txt");
    h.wait_ok(std::slice::from_ref(&id), &limits::arg(limits::AGENT));
    let worktree = h.worktree_of(&id);
    let (gone, code) = h.json(&["rm", &id]);
    assert_eq!(code, 0, "{gone}");
    assert_eq!(row(&gone, &id)["outcome"], "removed", "{gone}");
    assert!(!Path::new(&worktree).exists());
}

/// cuekit's own `merge --rebase` rewrites the task's commits in its worktree: the commits it
/// replaced (in the worktree's `HEAD` reflog) are in the target as their rebased copies, and
/// the task goes; one the child amended away itself is kept.
#[test]
fn a_rebased_task_goes_and_an_amended_away_commit_keeps_one() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let rebased = h.submit_worktree_sh(
        &[],
        &format!("echo a > a.txt && {G} add a.txt && {G} commit -qm 'task a'"),
    );
    let amended = h.submit_worktree_sh(
        &[],
        &format!(
            "echo first > c.txt && {G} add c.txt && {G} commit -qm first && \
             {G} reset -q --hard HEAD~1"
        ),
    );
    h.wait_ok(&[&rebased, &amended], &limits::arg(limits::AGENT));
    std::fs::write(h.project.join("b.txt"), "b\n").unwrap();
    commit_all(&h.project, "meanwhile on main");
    let (merged, code) = h.json(&["merge", &rebased, "--rebase"]);
    assert_eq!(code, 0, "{merged}");
    let (gone, code) = h.json(&["rm", &rebased]);
    assert_eq!(code, 0, "{gone}");
    assert_eq!(row(&gone, &rebased)["outcome"], "removed", "{gone}");
    rm_keeps(&h, &amended, &[("reflog", "logs/HEAD")]);
    removed_by_force(&h, &amended);
}

/// The audits (round 1 F5, round 2 F1): an unsandboxed child hid new work from `rm` by ignore
/// rules of its own — a line appended to the repository's shared `.git/info/exclude`, or a
/// folder whose own `.gitignore` says `*` (or the user's global excludes) — and `rm` deleted it
/// without a word. The removal's
/// inventory lists untracked files with the rules the task started with: the base commit's
/// `.gitignore` files and the user's excludes as they were at submit. What those ignore still
/// goes (a base `*.log`, a nested base `.gitignore`, a global excludes line, an `info/exclude`
/// line from before the submit).
/// A line added to the repository's `info/exclude` after a look at a worktree hides the file
/// from the next `diff`, as it would had no look come before: a look's tree is not served
/// again, nor its staging kept, as if nothing changed. Once in a loaded run a child's `echo
/// work.txt >> info/exclude` landed just after a look (the test below), and `diff` still
/// showed the file.
#[test]
fn an_exclude_line_added_after_a_look_is_seen_by_the_next_diff() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    let id = h.submit_worktree_sh(&[], "echo PRECIOUS > work.txt");
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let (diff, code) = h.json(&["diff", &id, "--stat"]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(diff["files"].as_array().unwrap().len(), 1, "{diff}");
    let exclude = h.project.join(".git/info/exclude");
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    let mut lines = std::fs::read_to_string(&exclude).unwrap_or_default();
    lines.push_str("work.txt\n");
    std::fs::write(&exclude, lines).unwrap();
    let (diff, code) = h.json(&["diff", &id, "--stat"]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(diff["files"].as_array().unwrap().len(), 0, "{diff}");
}

#[test]
fn work_hidden_by_ignore_rules_the_child_wrote_keeps_the_worktree() {
    let h = Harness::new();
    project_repo(&h.project, "original line\n");
    std::fs::write(h.project.join(".gitignore"), ".cuekit/\n*.log\n").unwrap();
    std::fs::create_dir_all(h.project.join("sub")).unwrap();
    std::fs::write(h.project.join("sub/.gitignore"), "out/\n").unwrap();
    commit_all(&h.project, "ignores");
    let global = h.home.join(".config/git/ignore");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, "*.swp\n").unwrap();
    let exclude = h.project.join(".git/info/exclude");
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    std::fs::write(&exclude, "notes.local\n").unwrap();
    let in_exclude = h.submit_worktree_sh(
        &[],
        "echo PRECIOUS > work.txt && \
         echo work.txt >> \"$(git rev-parse --git-common-dir)/info/exclude\"",
    );
    let in_gitignore = h.submit_worktree_sh(
        &[],
        "mkdir feature && echo '*' > feature/.gitignore && echo 42 > feature/impl.py && \
         echo later.txt >> \"$HOME/.config/git/ignore\" && echo x > later.txt",
    );
    let base_ignored = h.submit_worktree_sh(
        &[],
        "echo x > build.log && mkdir -p sub/out && echo x > sub/out/a.o && \
         echo x > edit.swp && echo x > notes.local",
    );
    h.wait_ok(
        &[&in_exclude, &in_gitignore, &base_ignored],
        &limits::arg(limits::AGENT),
    );
    let (diff, code) = h.json(&["diff", &in_exclude, "--stat"]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(diff["files"].as_array().unwrap().len(), 0, "{diff}");
    rm_keeps(&h, &in_exclude, &[("hidden", "work.txt")]);
    rm_keeps(
        &h,
        &in_gitignore,
        &[("hidden", "feature/.gitignore, feature/impl.py, later.txt")],
    );
    let (gone, code) = h.json(&["rm", &base_ignored]);
    assert_eq!(code, 0, "what the base's rules ignore goes: {gone}");
    assert_eq!(row(&gone, &base_ignored)["outcome"], "removed", "{gone}");
    removed_by_force(&h, &in_exclude);
    removed_by_force(&h, &in_gitignore);
}

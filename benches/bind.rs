//! Prints what binding a check's verdict to a commit costs (issue 42), and a merge landed the
//! way cuekit lands it (`merge-tree --write-tree`, `commit-tree`, `update-ref`, then
//! `read-tree -m -u` of the checkout) next to the old way (`git merge --no-ff` in the
//! checkout). Asserts nothing about time. Run with `cargo bench --bench figures -- bind`: real git, a
//! repository of 2,000 committed files, cuekit's own code for the binding.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{Sandbox, median, ms};
use cuekit::effects::git::Git;
use cuekit::effects::git::checkout::Checkout;
use cuekit::effects::store::WorktreePlacement;

const FILES: usize = 2000;
const RUNS: usize = 15;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The task's work: 20 tracked files changed, 5 untracked added.
fn work(worktree: &Path, run: usize) {
    for i in 0..20 {
        let file = worktree.join(format!("src/m{}/f{i}.rs", i % 40));
        std::fs::write(file, format!("// changed in run {run}\n")).unwrap();
    }
    for i in 0..5 {
        std::fs::write(worktree.join(format!("new-{i}.txt")), format!("{run}\n")).unwrap();
    }
}

fn bind_figures(bench: &Sandbox) {
    let worktree = bench.root.join("task");
    git(
        &bench.project,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "cuekit/t_0123456789ab",
            worktree.to_str().unwrap(),
            "HEAD",
        ],
    );
    let placed = WorktreePlacement {
        repo_root: bench.project.clone(),
        path: worktree.clone(),
        branch: "cuekit/t_0123456789ab".into(),
        base_ref: "main".into(),
        base_full_ref: None,
        base_commit: git(&bench.project, &["rev-parse", "HEAD"]),
        common_dir: bench.project.join(".git"),
        git_dir: Some(bench.project.join(".git/worktrees/task")),
        tip_ref: None,
    };
    let scratch = bench.root.join("task-dir");
    std::fs::create_dir_all(&scratch).unwrap();
    let checkout = Checkout {
        placed: &placed,
        scratch: &scratch,
    };
    let root = Git::new(&bench.project);
    let bind = |run: usize| {
        let start = Instant::now();
        let tip = checkout.tip().unwrap();
        let tree = checkout.tree_from(&tip).unwrap();
        let read = start.elapsed();
        cuekit::effects::git::checked::bind(
            &root,
            &tree,
            &tip,
            &format!("refs/cuekit/checked/t_0123456789ab/{run}"),
            "bench",
        )
        .unwrap();
        (read, start.elapsed())
    };
    work(&worktree, 0);
    let (_, cold) = bind(0);
    let (mut reads, mut totals) = (Vec::new(), Vec::new());
    for run in 1..=RUNS {
        work(&worktree, run);
        let (read, total) = bind(run);
        reads.push(read);
        totals.push(total);
    }
    let (read, total) = (median(reads), median(totals));
    println!("bind a verdict ({FILES} files, 20 changed, 5 untracked; median of {RUNS}):");
    println!("  first bind (cuekit's index made)      {}", ms(cold));
    println!("  read the work (tip + tree)            {}", ms(read));
    println!(
        "  commit it and keep its ref            {}",
        ms(total.saturating_sub(read))
    );
    println!(
        "  bind a verdict, {FILES} files           {} (target <= 50 ms)",
        ms(total)
    );
}

/// One merge of `branch` into the checked-out `main`, landed cuekit's way.
fn land(project: &Path, branch: &str) -> Duration {
    let start = Instant::now();
    let head = git(project, &["rev-parse", "refs/heads/main"]);
    let tip = git(project, &["rev-parse", branch]);
    let out = git(
        project,
        &[
            "merge-tree",
            "--write-tree",
            "-z",
            "--name-only",
            &head,
            &tip,
        ],
    );
    let tree = out.split('\0').next().unwrap().to_string();
    let commit = git(
        project,
        &["commit-tree", &tree, "-p", &head, "-p", &tip, "-m", "bench"],
    );
    let journal = project.join(".git/cuekit-landing");
    std::fs::write(&journal, format!("refs/heads/main {head} {commit}\n")).unwrap();
    git(project, &["update-ref", "refs/heads/main", &commit, &head]);
    git(project, &["read-tree", "-m", "-u", &head, &commit]);
    std::fs::remove_file(&journal).unwrap();
    start.elapsed()
}

fn merge_figures(bench: &Sandbox) {
    let project = &bench.project;
    let worktree = bench.root.join("task");
    // The task's work committed on its branch, and a change on main meanwhile.
    work(&worktree, 99);
    git(&worktree, &["add", "-A"]);
    git(&worktree, &["commit", "-qm", "the task's work"]);
    std::fs::write(project.join("src/m39/f1999.rs"), "// meanwhile\n").unwrap();
    git(project, &["commit", "-qam", "meanwhile on main"]);
    let start_head = git(project, &["rev-parse", "HEAD"]);
    let branch = "cuekit/t_0123456789ab";
    let (mut new, mut old) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        new.push(land(project, branch));
        git(project, &["reset", "-q", "--hard", &start_head]);
        let start = Instant::now();
        git(
            project,
            &["merge", "-q", "--no-ff", "--no-edit", "-m", "bench", branch],
        );
        old.push(start.elapsed());
        git(project, &["reset", "-q", "--hard", &start_head]);
    }
    println!(
        "merge a task's branch (25 files) into the checked-out main ({FILES} files; median of {RUNS}):"
    );
    println!(
        "  merge-tree + commit-tree + update-ref + read-tree   {}",
        ms(median(new))
    );
    println!(
        "  git merge --no-ff in the checkout (before)          {}",
        ms(median(old))
    );
}

pub fn main() {
    let bench = Sandbox::new("bind", &[]);
    crate::support::committed_repo(&bench.project, FILES, 40);
    bind_figures(&bench);
    merge_figures(&bench);
}

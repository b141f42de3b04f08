//! A sandboxed child when cuekit runs as root (the tests' user, as in CI): it runs as the
//! sandbox's unprivileged uid (65534), never root, with real bubblewrap and its network of its
//! own; what it must write is its own, and its work still comes back (diff, check, report,
//! merge). These tests need root and fail, never skip, without it.

use std::os::unix::fs::MetadataExt;

use crate::harness::Harness;
use crate::harness::git::project_repo;
use crate::sandbox::{attempt, results};

/// The uid the tests run as, from the kernel's own account.
fn own_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|uid| uid.parse().ok())
        .unwrap()
}

fn needs_root() {
    assert_eq!(
        own_uid(),
        0,
        "these tests are of cuekit run as root: run them as root (CI does)"
    );
}

/// What the child tries, by name, and whether each must succeed.
const TRIES: &[(&str, &str, bool)] = &[
    (
        "uid",
        "[ \"$(id -u)\" = 65534 ] && [ \"$(id -g)\" = 65534 ]",
        true,
    ),
    ("shadow", "cat /etc/shadow", false),
    // Root's own HOME (0700 here and in CI), which this test does not hide.
    ("roothome", "ls /root", false),
    (
        "commit",
        "echo made > inside.txt && git add inside.txt \
         && git -c user.name=c -c user.email=c@x commit -qm inside",
        true,
    ),
    ("loose", "echo loose > loose.txt", true),
    ("home", "echo h > ~/h", true),
    ("tmp", "echo t > /tmp/t", true),
    ("report", "cuekit report --progress from-the-sandbox", true),
];

/// As root: the child is uid 65534 with no capability, cannot read `/etc/shadow` or root's
/// HOME, and still writes its checkout (committed and not), its HOME, `/tmp` and its report;
/// its check runs in its sandbox on a scratch checkout it may write; diff and merge read its
/// work.
#[test]
fn as_root_a_sandboxed_child_is_unprivileged_and_its_work_still_comes_back() {
    needs_root();
    let h = Harness::new();
    project_repo(&h.project, "base\n");
    let script: Vec<String> = TRIES
        .iter()
        .map(|(name, command, _)| attempt(name, command))
        .chain(["grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status".to_string()])
        .collect();
    let script = script.join("; ");
    let id = h.submit_worktree_sh(
        &[
            "--sandbox",
            "--check",
            "id -u > checked-as && test -f inside.txt",
            "--check-rounds",
            "0",
        ],
        &script,
    );
    let (waited, _) = h.wait_all(&[&id], "90s");
    let said = h.transcript(&id);
    assert_eq!(
        waited["tasks"][0]["status"], "completed",
        "{waited}\n{said}"
    );
    let names: Vec<&str> = TRIES.iter().map(|(name, _, _)| *name).collect();
    for ((name, code), (_, _, must)) in results(&said, &names).into_iter().zip(TRIES) {
        let code = code.unwrap_or_else(|| panic!("no result for {name}:\n{said}"));
        assert_eq!(code == 0, *must, "{name} exited {code}:\n{said}");
    }
    for set in ["CapEff", "CapPrm", "CapBnd"] {
        assert!(
            said.contains(&format!("{set}:\t0000000000000000")),
            "{set} is not empty:\n{said}"
        );
    }
    let status = h.status(&id);
    assert_eq!(status["check"]["phase"], "passed", "{status}");
    // Its checkout is the sandbox's uid's, made so before it ran.
    let worktree = h.worktree_of(&id);
    assert_eq!(std::fs::metadata(&worktree).unwrap().uid(), 65534);
    assert!(
        status.to_string().contains("from-the-sandbox"),
        "the dropped report: {status}"
    );
    let diff = h.ok(&["diff", &id]);
    assert!(
        diff.contains("inside.txt") && diff.contains("loose.txt"),
        "{diff}"
    );
    h.ok(&["merge", "--yes", &id]);
    assert_eq!(
        std::fs::read_to_string(h.project.join("inside.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join("loose.txt")).unwrap(),
        "loose\n"
    );
}

/// As root, a sandbox in a folder of root's with no checkout of its own (not a repository):
/// cuekit never gives the user's folder away, and the submit says the child cannot write it.
#[test]
fn as_root_an_in_place_sandbox_says_its_child_cannot_write_the_folder() {
    needs_root();
    let h = Harness::new();
    let mut args = vec!["submit"];
    args.extend(crate::harness::sh_task(
        "id -u; touch here.txt || echo REFUSED",
        &["--sandbox", "--mode", "batch"],
    ));
    let (submitted, _) = h.json(&args);
    assert!(
        submitted["warnings"]
            .to_string()
            .contains("runs as uid 65534 (nobody), which cannot write"),
        "{submitted}"
    );
    let id = submitted["id"].as_str().unwrap().to_string();
    h.wait_all(&[&id], "60s");
    let said = h.transcript(&id);
    assert!(said.contains("65534") && said.contains("REFUSED"), "{said}");
    assert_eq!(std::fs::metadata(&h.project).unwrap().uid(), 0);
}

/// As root, `doctor` says who a sandboxed child is.
#[test]
fn as_root_doctor_names_the_sandboxs_user() {
    needs_root();
    let h = Harness::new();
    let output = h.cuekit().arg("doctor").output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    let line = said
        .lines()
        .find(|line| line.contains("sandbox user"))
        .unwrap_or_else(|| panic!("no sandbox user line:\n{said}"));
    assert!(
        line.starts_with("ok") && line.contains("uid 65534") && line.contains("setpriv"),
        "{line}"
    );
}

/// The hand-over of a tree cuekit made changes the tree's own entries and nothing they lead
/// to: a link is changed itself, never its target; a file hard-linked from elsewhere (a
/// submodule's objects) stays root's.
#[test]
fn as_root_the_hand_over_never_follows_a_link_or_takes_a_shared_file() {
    needs_root();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("roots.txt");
    std::fs::write(&target, "root's").unwrap();
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/own.txt"), "x").unwrap();
    std::os::unix::fs::symlink(&target, root.join("a/link")).unwrap();
    std::fs::hard_link(&target, root.join("a/b/shared.txt")).unwrap();
    cuekit::effects::owner::hand_over_tree(root).unwrap();
    let uid = |path: &std::path::Path| std::fs::symlink_metadata(path).unwrap().uid();
    for own in ["", "a", "a/b", "a/b/own.txt", "a/link"] {
        assert_eq!(uid(&root.join(own)), 65534, "{own}");
    }
    assert_eq!(uid(&target), 0, "the link's target was handed over");
    assert_eq!(uid(&root.join("a/b/shared.txt")), 0, "a shared inode was");
}

/// As root, a sandboxed child reaches its own checkout by its path (`realpath`, the `lstat` the
/// Gemini CLI makes at its start) through `<repo>.worktrees`, which is root's alone (`0700`), and
/// sees nothing else there: no other task's checkout.
#[test]
fn as_root_a_sandboxed_child_reaches_its_own_checkout_by_path_and_no_other() {
    needs_root();
    let h = Harness::new();
    // Outside HOME and /tmp, where the machine is shown read-only; open to the sandbox's uid.
    let out = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::set_permissions(
        out.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let repo = out.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    project_repo(&repo, "base\n");
    let submit = |script: &str| {
        let output = h
            .cuekit()
            .current_dir(&repo)
            .args(["--json", "submit"])
            .args(crate::harness::sh_task(
                script,
                &["--sandbox", "--mode", "batch"],
            ))
            .output()
            .unwrap();
        let said: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
        said["id"].as_str().unwrap().to_string()
    };
    let other = submit("sleep 60");
    let id = submit(
        "echo \"REAL $(realpath \"$PWD\" 2>&1)\"; echo \"BESIDE $(ls \"$PWD/..\" 2>&1 | tr '\\n' ' ')\"",
    );
    h.wait_ok(
        &[&id],
        &crate::harness::limits::arg(crate::harness::limits::AGENT),
    );
    let _ = h.cuekit().args(["cancel", &other]).output();
    let said = h.ok(&["logs", &id]);
    let own = h.worktree_of(&id);
    let checkouts = own.parent().unwrap();
    assert_eq!(
        std::fs::metadata(checkouts).unwrap().mode() & 0o777,
        0o700,
        "the checkouts' folder is root's alone"
    );
    assert!(
        said.contains(&format!("REAL {}", own.display())),
        "the child cannot name its own checkout:\n{said}"
    );
    let name = own.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        said.lines()
            .any(|line| line.trim() == format!("BESIDE {name}")),
        "the child sees more than its own checkout there:\n{said}"
    );
}

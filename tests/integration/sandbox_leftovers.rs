//! What a sandboxed child leaves in the folders of yours it could write, made harmless at its
//! end (issue 48, F10 and F20): a repository it planted in its in-place folder moved aside
//! where git does not look, and the set-ID bits of the programs it left there and in a
//! `sandbox.write` folder stripped. Each child is a `command` task in bubblewrap on real tmux.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::harness::Harness;
use crate::harness::limits;

fn warnings(h: &Harness, id: &str) -> String {
    h.status(id)["warnings"].to_string()
}

/// A repository the child plants in its in-place folder (at its top, in a subfolder, and one
/// shaped as a bare git dir) is moved aside at its end, never deleted: the user's next
/// `git status` there runs none of its fsmonitor. Status and result say so.
#[test]
fn a_repository_an_in_place_child_planted_is_moved_aside_at_its_end() {
    let h = Harness::new();
    h.project_for_sandbox();
    std::fs::write(h.project.join("notes.txt"), "mine\n").unwrap();
    let ran = h.root().join("RAN-OUTSIDE");
    let script = format!(
        "git init -q . && git config core.fsmonitor 'touch {ran}; false' \
         && mkdir -p sub && git init -q sub && git init -q --bare mirror && echo PLANTED",
        ran = ran.display()
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(
        h.ok(&["logs", &id]).contains("PLANTED"),
        "the child did not run"
    );
    for planted in [".git", "sub/.git", "mirror/HEAD"] {
        assert!(
            h.project.join(planted).symlink_metadata().is_err(),
            "{planted} was left where git reads it"
        );
        let aside = format!("{planted}.cuekit-quarantine-{id}");
        assert!(h.project.join(&aside).exists(), "{aside} is missing");
    }
    let kept = h
        .project
        .join(format!(".git.cuekit-quarantine-{id}/config"));
    assert!(std::fs::read_to_string(kept).unwrap().contains("fsmonitor"));
    let said = warnings(&h, &id);
    assert!(said.contains("moved aside"), "{said}");
    let (result, _) = h.json(&["result", &id]);
    assert!(
        result["warnings"].to_string().contains("moved aside"),
        "{result}"
    );
    let status = std::process::Command::new("git")
        .args(["status", "--short"])
        .current_dir(&h.project)
        .env("GIT_CEILING_DIRECTORIES", h.root())
        .output()
        .unwrap();
    assert!(
        !status.status.success(),
        "git still finds a repository there"
    );
    assert!(!ran.exists(), "the user's git ran the child's fsmonitor");
    assert_eq!(
        std::fs::read_to_string(h.project.join("notes.txt")).unwrap(),
        "mine\n"
    );
}

/// A set-ID program the child leaves in its in-place folder or in a `sandbox.write` folder
/// loses its set-ID bits at the child's end (run by root, it would be a program of the
/// sandbox's uid anyone could run; unprivileged, one of yours). Inside, the folders are mounted
/// `nosuid` as well.
#[test]
fn set_id_programs_a_child_left_lose_their_bits_at_its_end() {
    let h = Harness::new();
    h.project_for_sandbox();
    let shared = h.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
    }
    h.user_config(&format!("sandbox:\n  write: ['{}']\n", shared.display()));
    let script = format!(
        "cp /bin/cat ./cat-suid && chmod 4755 cat-suid && cp /bin/cat '{shared}/cat-sgid' \
         && chmod 2755 '{shared}/cat-sgid' && grep \" $PWD \" /proc/self/mountinfo > mounted \
         && echo LEFT",
        shared = shared.display()
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(
        h.ok(&["logs", &id]).contains("LEFT"),
        "the child did not run"
    );
    let mounted = std::fs::read_to_string(h.project.join("mounted")).unwrap_or_default();
    assert!(mounted.contains("nosuid"), "the work dir inside: {mounted}");
    let mode = |path: &Path| std::fs::symlink_metadata(path).unwrap().mode() & 0o7777;
    assert_eq!(mode(&h.project.join("cat-suid")), 0o755);
    assert_eq!(mode(&shared.join("cat-sgid")), 0o755);
    let said = warnings(&h, &id);
    assert!(said.contains("set-ID bits were removed"), "{said}");
}

/// A cancelled child's planted repository is moved aside too, once its processes are gone:
/// `cancel` answers after that.
#[test]
fn a_cancelled_in_place_childs_planted_repository_is_moved_aside() {
    let h = Harness::new();
    h.project_for_sandbox();
    let id = h.submit_sh(
        "git init -q . && echo PLANTED && sleep 120",
        &["--sandbox", "--mode", "batch"],
    );
    assert!(
        crate::harness::poll(limits::AGENT, || h.ok(&["logs", &id]).contains("PLANTED")),
        "the child did not run: {}",
        h.transcript(&id)
    );
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert!(h.project.join(".git").symlink_metadata().is_err());
    assert!(
        h.project
            .join(format!(".git.cuekit-quarantine-{id}"))
            .is_dir()
    );
    // Moved aside whole, its HEAD too: no git reads it, nor a later submit's check.
    assert!(
        !h.project
            .join(format!(".git.cuekit-quarantine-{id}/HEAD"))
            .exists()
    );
    let said = warnings(&h, &id);
    assert!(said.contains("moved aside"), "{said}");
    let again = h.submit_sh("echo AGAIN", &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&again], &limits::arg(limits::AGENT));
}

/// In a task's own checkout (`--sandbox` in a repository) a set-ID program the child made
/// loses its bits at its end as well; the repository its checkout is stays where it is.
#[test]
fn a_set_id_program_left_in_a_sandboxed_checkout_loses_its_bits() {
    let h = Harness::new();
    crate::harness::git::project_repo(&h.project, "shared");
    let id = h.submit_sh(
        "cp /bin/cat ./cat-suid && chmod 4755 cat-suid",
        &["--sandbox", "--mode", "batch"],
    );
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let left = h.worktree_of(&id).join("cat-suid");
    assert_eq!(
        std::fs::symlink_metadata(&left).unwrap().mode() & 0o7777,
        0o755
    );
    assert!(
        h.worktree_of(&id).join(".git").exists(),
        "its checkout's .git was moved"
    );
    assert!(warnings(&h, &id).contains("set-ID bits were removed"));
}

/// As the review found it: an unprivileged user's in-place child plants a repository with an
/// fsmonitor; that user's own `git status` there afterwards (a shell prompt's would do the
/// same) finds no repository, and runs nothing of the child's.
#[test]
fn an_unprivileged_users_git_runs_nothing_an_in_place_child_planted() {
    let user = crate::harness::ssh_host::ThrowawayUser::new("cuekit-left-");
    let ran = user.home().join("RAN-OUTSIDE");
    let script = format!(
        "mkdir -p ~/inplace && cd ~/inplace && echo mine > notes.txt \
         && cuekit submit --id t_5a4db0c0f010 --sandbox --agent command --mode batch -- sh -c \
         \"git init -q . && git config core.fsmonitor 'touch {ran}; false' && echo PLANTED\" \
         && cuekit wait t_5a4db0c0f010 --timeout 60s; cuekit logs t_5a4db0c0f010; \
         git status --short; ls -a",
        ran = ran.display()
    );
    let ran_as = crate::sandbox::run_as(&user, &script);
    let said = String::from_utf8_lossy(&ran_as.stdout).into_owned()
        + &String::from_utf8_lossy(&ran_as.stderr);
    assert!(said.contains("PLANTED"), "the child did not run:\n{said}");
    assert!(
        said.contains(".git.cuekit-quarantine-t_5a4db0c0f010"),
        "nothing was moved aside:\n{said}"
    );
    assert!(
        !ran.exists(),
        "the user's git ran the child's fsmonitor:\n{said}"
    );
}

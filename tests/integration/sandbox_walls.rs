//! What a second blind review of the sandbox reached (issue 48), now out of reach: a tmux
//! server of the user's on a socket outside HOME and /tmp (its `run-shell` runs outside the
//! sandbox), other tasks' live checkouts and the main checkout's untracked files. Each child
//! is a `command` task in bubblewrap on real tmux; what it reached it writes into its work dir.

use crate::harness::limits;
use std::path::{Path, PathBuf};

use crate::harness::Harness;
use crate::harness::git::project_repo;
use crate::harness::ssh_host::{ThrowawayUser, as_root};
use crate::sandbox::run_as;

/// A folder outside HOME, /tmp and /run (the roots every sandbox hides), open to every user.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    dir
}

/// [`outside`], for a throw-away user to work in: given to `user`. Every folder above it must be
/// passable by other users (the checkout's place: `mktemp -d` makes a `0700` one); said at once
/// rather than as the child's "Permission denied". Kept after the test: the tmux sockets its
/// user binds there are covered by every sandbox another test starts meanwhile, and bubblewrap
/// fails making a cover whose file was removed between the plan and the start (tmux leaves its
/// socket file when its server ends; `target/tmp` holds the folder until `cargo clean`).
fn outside_for(user: &ThrowawayUser) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let out = outside();
    for above in out.path().ancestors().skip(1) {
        let mode = std::fs::metadata(above).unwrap().permissions().mode();
        assert!(
            mode & 0o001 != 0,
            "{} (mode {mode:o}) cannot be passed by other users: these tests run a throw-away \
             user in a folder of the checkout's target/, so clone the repository where every \
             user may pass",
            above.display()
        );
    }
    let status = as_root("chown")
        .arg(&user.name)
        .arg(out.path())
        .status()
        .unwrap();
    assert!(status.success());
    out.keep()
}

/// An unprivileged user's sandboxed child cannot drive another tmux server of that user's
/// whose socket lies outside HOME and /tmp (a second cuekit's `CUEKIT_TMUX_SOCKET`, a
/// `tmux -S <path>`): the socket stays in sight read-only, and a read-only mount does not stop
/// a connect.
#[test]
fn a_sandboxed_child_cannot_drive_another_tmux_server_of_its_user() {
    let user = ThrowawayUser::new("cuekit-sbx-");
    let out = outside_for(&user);
    let (socket, escaped) = (out.join("b.sock"), out.join("ESCAPED"));
    let script = format!(
        "tmux -S '{socket}' new-session -d 'sleep 120' && mkdir -p ~/proj && cd ~/proj \
         && cuekit submit --id t_5a4db0c00048 --sandbox --agent command --mode batch -- sh -c \
         \"tmux -S '{socket}' run-shell 'touch {escaped}'; echo TRIED\" \
         && cuekit wait t_5a4db0c00048 --timeout 60s; cuekit logs t_5a4db0c00048; \
         tmux -S '{socket}' kill-server",
        socket = socket.display(),
        escaped = escaped.display()
    );
    let ran = run_as(&user, &script);
    let said =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    assert!(said.contains("TRIED"), "the child did not run:\n{said}");
    assert!(
        !escaped.exists(),
        "the child ran a command outside its sandbox through another tmux server:\n{said}"
    );
}

/// Nor through a socket whose name the kernel's list (`/proc/net/unix`) does not give as it is
/// now: one bound with a relative name (`cd dir && tmux -S b.sock`), one whose folder was
/// renamed since, a second (hard-linked) name of one, and one bound in another network
/// namespace (not in cuekit's list at all). All four bound before the sandbox starts.
#[test]
fn a_sandboxed_child_cannot_drive_a_tmux_server_whatever_name_its_socket_was_bound_with() {
    let user = ThrowawayUser::new("cuekit-sbx-");
    let out = outside_for(&user);
    let w = out.display().to_string();
    let ways = [
        ("relative", "rel/b.sock"),
        ("renamed", "new/c.sock"),
        ("hardlink", "link/d2.sock"),
        ("othernetns", "e.sock"),
    ];
    let child: String = ways
        .iter()
        .map(|(name, socket)| {
            format!("tmux -S '{w}/{socket}' run-shell 'touch {w}/ESCAPED-{name}'; ")
        })
        .collect();
    let script = format!(
        "cd '{w}' && mkdir rel old link && (cd rel && tmux -S b.sock -f /dev/null new-session -d 'sleep 120') \
         && tmux -S old/c.sock -f /dev/null new-session -d 'sleep 120' && mv old new \
         && tmux -S d.sock -f /dev/null new-session -d 'sleep 120' && ln d.sock link/d2.sock \
         && unshare -rn tmux -S e.sock -f /dev/null new-session -d 'sleep 120' \
         && mkdir -p ~/proj && cd ~/proj \
         && cuekit submit --id t_5a4db0c00049 --sandbox --agent command --mode batch -- sh -c \
         \"{child}echo TRIED\" \
         && cuekit wait t_5a4db0c00049 --timeout 60s; cuekit logs t_5a4db0c00049; \
         for s in rel/b.sock new/c.sock d.sock e.sock; do tmux -S '{w}'/$s kill-server; done"
    );
    let ran = run_as(&user, &script);
    let said =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    assert!(said.contains("TRIED"), "the child did not run:\n{said}");
    for (name, _) in ways {
        assert!(
            !out.join(format!("ESCAPED-{name}")).exists(),
            "the child ran a command outside its sandbox through a socket bound {name}:\n{said}"
        );
    }
}

/// `cuekit --json submit ARGS…` from `dir`: the task's id.
fn submit_in(h: &Harness, dir: &Path, args: &[&str]) -> String {
    let output = h
        .cuekit()
        .current_dir(dir)
        .args(["--json", "submit"])
        .args(args)
        .output()
        .unwrap();
    let said: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    said["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{said}"))
        .to_string()
}

/// A sandboxed child sees neither another task's live checkout (its uncommitted work) nor the
/// main checkout of its repository (an untracked `.env`), wherever the repository lies: here
/// outside HOME and /tmp, where the machine is shown read-only.
#[test]
fn a_sandboxed_child_sees_no_other_tasks_checkout_nor_the_main_checkout() {
    let h = Harness::new();
    let out = outside();
    let repo: PathBuf = out.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    project_repo(&repo, "shared");
    std::fs::write(repo.join(".env"), "DB_PASSWORD=MAIN-CHECKOUT-SECRET\n").unwrap();
    let a = submit_in(
        &h,
        &repo,
        &[
            "--sandbox",
            "--agent",
            "command",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "echo A-UNCOMMITTED-WORK > secret-work.txt; sleep 60",
        ],
    );
    let a_checkout = h.worktree_of(&a);
    let written = a_checkout.join("secret-work.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !written.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(written.exists(), "task A never wrote its work");
    let script = format!(
        "cat '{}' > seen-a 2>&1; cat '{}' > seen-env 2>&1; ls '{}' > seen-main 2>&1; true",
        written.display(),
        repo.join(".env").display(),
        repo.display()
    );
    let b = submit_in(
        &h,
        &repo,
        &[
            "--sandbox",
            "--agent",
            "command",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    h.wait_ok(&[&b], &limits::arg(limits::AGENT));
    let _ = h.cuekit().args(["cancel", &a]).output();
    let b_checkout = h.worktree_of(&b);
    let seen = |name: &str| std::fs::read_to_string(b_checkout.join(name)).unwrap_or_default();
    assert!(
        !seen("seen-a").contains("A-UNCOMMITTED-WORK"),
        "{}",
        seen("seen-a")
    );
    assert!(
        !seen("seen-env").contains("MAIN-CHECKOUT-SECRET"),
        "{}",
        seen("seen-env")
    );
    assert!(
        !seen("seen-main").contains("shared.txt"),
        "{}",
        seen("seen-main")
    );
}

/// The `keyctl` system call's number (x86_64, else aarch64's).
const KEYCTL: u32 = if cfg!(target_arch = "x86_64") {
    250
} else {
    219
};

/// A sandboxed child cannot use the kernel keyring: the session keyring bubblewrap leaves it
/// (and the persistent one linked into it, where `kinit` keeps a Kerberos ticket) is the
/// user's. `keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)` fails with EPERM.
#[test]
fn a_sandboxed_child_cannot_reach_the_kernel_keyring() {
    let h = Harness::new();
    h.project_for_sandbox();
    let nr = KEYCTL;
    let script = format!(
        "perl -e 'my $r = syscall({nr}, 0, -3, 0); print \"KEYRING $r \", ($r < 0 ? 0 + $! : 0), \"\\n\"' \
         > seen-keyring 2>&1"
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let seen = std::fs::read_to_string(h.project.join("seen-keyring")).unwrap_or_default();
    // EPERM is 1.
    assert!(seen.contains("KEYRING -1 1"), "{seen}");
}

/// A `PATH` folder spelled with `..` (`~/.cargo/bin/..`) is not shown: it would bring back
/// what it resolves to (`~/.cargo` and its credentials, HOME itself).
#[test]
fn a_path_folder_spelled_with_dots_shows_nothing_of_home() {
    let h = Harness::new();
    h.project_for_sandbox();
    let cargo = h.home.join(".cargo");
    std::fs::create_dir_all(cargo.join("bin")).unwrap();
    std::fs::write(cargo.join("credentials.toml"), "token = \"CARGO-TOKEN\"\n").unwrap();
    let path = format!(
        "{}:{}/bin/..:{}",
        h.bin.display(),
        cargo.display(),
        std::env::var("PATH").unwrap()
    );
    let h = h.env("PATH", &path);
    let script = format!(
        "cat '{}/credentials.toml' > seen-cargo 2>&1; true",
        cargo.display()
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let seen = std::fs::read_to_string(h.project.join("seen-cargo")).unwrap_or_default();
    assert!(!seen.contains("CARGO-TOKEN"), "{seen}");
}

/// A sandboxed Gemini task is shown Gemini's settings, not what Antigravity keeps in the same
/// `~/.gemini` (its CLI's login, its ACP server's, the IDE's conversations and plans).
#[test]
fn a_sandboxed_gemini_reads_none_of_antigravitys_files() {
    let h = Harness::new();
    h.project_for_sandbox();
    let files = [
        ".gemini/antigravity-cli/antigravity-oauth-token",
        ".gemini/antigravity-acp/oauth-token",
        ".gemini/antigravity/brain/plan.md",
    ];
    for file in files {
        let path = h.home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-OF-{file}\n")).unwrap();
    }
    std::fs::write(h.home.join(".gemini/settings.json"), "{}").unwrap();
    let reads: Vec<String> = files
        .iter()
        .map(|file| format!("cat \"$HOME/{file}\""))
        .collect();
    crate::harness::write_executable(
        &h.bin.join("gemini"),
        &format!(
            "#!/bin/sh\n{{ cat \"$HOME/.gemini/settings.json\"; {}; }} > \"$PWD/seen-agy\" 2>&1\n",
            reads.join("; ")
        ),
    );
    let id = h.submit(&["--sandbox", "--mode", "batch", "hi"]);
    h.wait_ended(&[&id], &limits::arg(limits::AGENT));
    let seen = std::fs::read_to_string(h.project.join("seen-agy")).unwrap_or_default();
    assert!(seen.contains("{}"), "the stand-in did not run: {seen}");
    assert!(!seen.contains("SECRET-OF-"), "{seen}");
}

/// A private (`0700`) repository's task checkouts are private too: their folder beside it
/// keeps others out as the repository does (run by root, also every other process of the
/// sandbox's uid 65534), and the sandboxed child still works in its own.
#[test]
fn a_private_repositorys_checkouts_are_private_too() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    let out = outside();
    let repo = out.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    project_repo(&repo, "PROPRIETARY-SOURCE");
    std::fs::set_permissions(&repo, std::fs::Permissions::from_mode(0o700)).unwrap();
    let id = submit_in(
        &h,
        &repo,
        &[
            "--sandbox",
            "--agent",
            "command",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "cat shared.txt > copy.txt && echo CHILD-WORK > new.c",
        ],
    );
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let checkout = h.worktree_of(&id);
    let made = std::fs::read_to_string(checkout.join("new.c")).unwrap_or_default();
    assert!(made.contains("CHILD-WORK"), "the child could not work");
    let folder = checkout.parent().unwrap();
    let mode = std::fs::metadata(folder).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{} is {mode:o}", folder.display());
    let other = as_root("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(format!("cat '{}'", checkout.join("new.c").display()))
        .output()
        .unwrap();
    assert!(
        !other.status.success(),
        "another user read the checkout: {}",
        String::from_utf8_lossy(&other.stdout)
    );
}

/// What a sandboxed child leaves in its checkout (a program it made setuid to its uid) is out
/// of other users' reach, whatever the repository's own mode: the folder of sandboxed tasks'
/// checkouts is its owner's alone.
#[test]
fn no_other_user_runs_what_a_sandboxed_child_left() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::new();
    let out = outside();
    let repo = out.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    project_repo(&repo, "shared");
    let id = submit_in(
        &h,
        &repo,
        &[
            "--sandbox",
            "--agent",
            "command",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "cp /bin/cat ./cat-suid && chmod 4755 cat-suid",
        ],
    );
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let left = h.worktree_of(&id).join("cat-suid");
    assert!(left.exists(), "the child made no program");
    let folder = left.parent().unwrap().parent().unwrap();
    let mode = std::fs::metadata(folder).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{} is {mode:o}", folder.display());
    let other = as_root("setpriv")
        .args(["--reuid=1", "--regid=1", "--clear-groups", "sh", "-c"])
        // Through a shell: setpriv's own exec of a path is not the other user's.
        .arg(format!("'{}' /etc/hostname", left.display()))
        .output()
        .unwrap();
    assert!(
        !other.status.success(),
        "another user ran the child's program"
    );
}

/// In ACP mode too (bubblewrap around the agent, the client outside): the agent runs under the
/// sandbox's filter, so it cannot use the kernel keyring either (issue 48, F13 in ACP mode). The
/// agent is a stand-in ACP server that tries `keyctl` first.
#[test]
fn a_sandboxed_acp_agent_cannot_reach_the_kernel_keyring() {
    let h = Harness::new();
    h.project_for_sandbox();
    let nr = KEYCTL;
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agy-acp");
    crate::harness::install_executable(&server, &h.bin.join("fake-agy-acp"));
    crate::harness::write_executable(
        &h.bin.join("agy_acp_server"),
        &format!(
            "#!/bin/sh\nperl -e 'my $r = syscall({nr}, 0, -3, 0); print \"KEYRING $r \", \
             ($r < 0 ? 0 + $! : 0), \"\\n\"' > \"$PWD/seen-keyring\" 2>&1\n\
             exec '{}' \"$@\"\n",
            h.bin.join("fake-agy-acp").display()
        ),
    );
    let id = h.submit(&["--sandbox", "--agent", "antigravity", "--mode", "acp", "hi"]);
    h.wait_ended(&[&id], &limits::arg(limits::AGENT));
    // The protocol works under the filter: the agent answered (not signed in inside, it
    // refuses the session, and the task ends auth_missing).
    let transcript = h.transcript(&id);
    assert!(
        transcript.contains("Authentication required"),
        "{transcript}"
    );
    let said = || std::fs::read_to_string(h.project.join("seen-keyring")).unwrap_or_default();
    // EPERM is 1.
    assert!(said().contains("KEYRING -1 1"), "{}", said());
}

fn strs(words: &[String]) -> Vec<&str> {
    words.iter().map(String::as_str).collect()
}

/// A task started after a sandbox, in another repository cuekit already has a task checkout in,
/// is out of that sandbox's sight too: the repository's folder of checkouts
/// (`<repo>.worktrees`) is hidden whole, not the checkouts there at the sandbox's start alone.
#[test]
fn a_checkout_made_after_a_sandbox_started_is_out_of_its_sight() {
    let h = Harness::new();
    let out = outside();
    let (a_repo, b_repo) = (out.path().join("a"), out.path().join("b"));
    for repo in [&a_repo, &b_repo] {
        std::fs::create_dir_all(repo).unwrap();
        project_repo(repo, "shared");
    }
    let sh = |script: &str| {
        ["--agent", "command", "--mode", "batch", "--", "sh", "-c"]
            .into_iter()
            .map(String::from)
            .chain([script.to_string()])
            .collect::<Vec<String>>()
    };
    let args = |extra: &[&str], script: &str| {
        extra
            .iter()
            .map(|word| (*word).to_string())
            .chain(sh(script))
            .collect::<Vec<String>>()
    };
    // B already has a checkout when A's sandbox starts.
    let earlier = submit_in(&h, &b_repo, &strs(&args(&["--worktree"], "true")));
    h.wait_ok(&[&earlier], &limits::arg(limits::AGENT));
    let b_checkouts = h.worktree_of(&earlier).parent().unwrap().to_path_buf();
    let a = submit_in(
        &h,
        &a_repo,
        &strs(&args(
            &["--sandbox"],
            &format!(
                "while [ ! -f go ]; do sleep 0.2; done; cat '{}'/*/later-work.txt > seen-later 2>&1; true",
                b_checkouts.display()
            ),
        )),
    );
    // A's sandbox is up once its checkout is there and it waits.
    let a_checkout = h.worktree_of(&a);
    let later = submit_in(
        &h,
        &b_repo,
        &strs(&args(
            &["--worktree"],
            "echo LATER-UNCOMMITTED-WORK > later-work.txt; chmod 644 later-work.txt; sleep 60",
        )),
    );
    let written = h.worktree_of(&later).join("later-work.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !written.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(written.exists(), "the later task never wrote its work");
    std::fs::write(a_checkout.join("go"), "").unwrap();
    h.wait_ok(&[&a], &limits::arg(limits::AGENT));
    let _ = h.cuekit().args(["cancel", &later]).output();
    let seen = std::fs::read_to_string(a_checkout.join("seen-later")).unwrap_or_default();
    assert!(!seen.contains("LATER-UNCOMMITTED-WORK"), "{seen}");
}

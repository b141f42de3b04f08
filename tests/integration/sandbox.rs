//! The sandbox (`--sandbox`): the real Gemini CLI in bypass mode, offline, with canned tool
//! calls that try to get out, inside bubblewrap on real tmux; and the same attempts by a
//! `command` child run as an unprivileged throw-away user, where bubblewrap needs a user
//! namespace (as root it does not, and the failures real users meet would not show).

use crate::harness::limits;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::git::project_repo;
use crate::harness::sh_task;
use crate::harness::ssh_host::{ThrowawayUser, as_root};
use crate::harness::{Harness, canned_shell_call, canned_text};
use serde_json::Value;

/// Each attempt as one shell command that prints `RESULT-<name> <its exit status>`.
pub(crate) fn attempt(name: &str, command: &str) -> String {
    format!("({command}) >/dev/null 2>&1; echo \"RESULT-{name} $?\"")
}

/// The exit status each attempt printed, by name, from a transcript.
pub(crate) fn results(transcript: &str, names: &[&str]) -> Vec<(String, Option<i32>)> {
    names
        .iter()
        .map(|name| {
            let marker = format!("RESULT-{name} ");
            let code = transcript.lines().rev().find_map(|line| {
                let at = line.find(&marker)?;
                line[at + marker.len()..]
                    .split_whitespace()
                    .next()?
                    .trim_matches(|c: char| !c.is_ascii_digit())
                    .parse()
                    .ok()
            });
            (name.to_string(), code)
        })
        .collect()
}

/// A process of the user's outside any task, ended on drop.
struct Outsider(std::process::Child);

impl Outsider {
    fn start(mut command: Command) -> Outsider {
        Outsider(command.stdin(Stdio::null()).spawn().unwrap())
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Outsider {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the sandboxed child tries, by name: only `inside` and `report` may succeed.
const ESCAPES: [&str; 10] = [
    "inside",
    "key",
    "other",
    "kill",
    "agent",
    "tmux",
    "settings",
    "gitconfig",
    "exitcode",
    "report",
];

/// A real Gemini child in bypass mode, in a worktree, sandboxed: it writes its worktree, and
/// every way out it tries fails; the task completes, and its report arrives.
#[test]
fn a_sandboxed_gemini_child_writes_its_worktree_and_nothing_else() {
    const ID: &str = "t_5a4db0c00001";
    let h = Harness::new();
    project_repo(&h.project, "original\n");
    // A key the child must not read, settings it must not change, an agent it must not use.
    std::fs::create_dir_all(h.home.join(".ssh")).unwrap();
    std::fs::write(h.home.join(".ssh/id_ed25519"), "PLANTED-KEY\n").unwrap();
    let other = h.home.join("other-project");
    std::fs::create_dir_all(&other).unwrap();
    let agent_socket = h.root().join("agent.sock");
    let mut agent = Command::new("ssh-agent");
    agent
        .arg("-D")
        .arg("-a")
        .arg(&agent_socket)
        .stdout(Stdio::null());
    let _agent = Outsider::start(agent);
    let mut outside = Outsider::start({
        let mut sleep = Command::new("sleep");
        sleep.arg("300");
        sleep
    });
    let outside_pid = outside.0.id();
    assert!(crate::harness::poll(limits::SHORT, || {
        agent_socket.exists()
    }));
    let tmux_socket = format!("/tmp/tmux-{}/{}", unsafe { libc::geteuid() }, h.socket);

    let attempts = [
        attempt("inside", "echo made > inside.txt"),
        attempt("key", "grep PLANTED-KEY ~/.ssh/id_ed25519"),
        attempt(
            "other",
            &format!("echo owned > '{}/owned.txt'", other.display()),
        ),
        attempt("kill", &format!("kill -TERM {outside_pid}")),
        attempt(
            "agent",
            &format!(
                "SSH_AUTH_SOCK='{}' ssh-add -l; [ $? -ne 2 ]",
                agent_socket.display()
            ),
        ),
        attempt("tmux", &format!("tmux -S '{tmux_socket}' list-sessions")),
        attempt("settings", "echo '{\"x\":1}' > ~/.gemini/settings.json"),
        // Its own repository's config is its own; the user's repository is out of reach.
        attempt(
            "gitconfig",
            &format!(
                "git --git-dir='{}' config user.name evil",
                h.project.join(".git").display()
            ),
        ),
        attempt(
            "exitcode",
            &format!(
                "echo cuekit_exit=7 > '{}'",
                h.task_dir(ID).join("exit-code").display()
            ),
        ),
        attempt(
            "report",
            "cuekit report --progress 'from inside the sandbox'",
        ),
    ];
    let mut replies: Vec<String> = attempts.iter().map(|a| canned_shell_call(a)).collect();
    replies.push(canned_text("Tried everything."));
    let h = h.with_real_gemini(&replies);
    // The canned replies and the real CLI live where the sandbox hides (the test's temp dir):
    // the user's own `sandbox.read` shows them.
    let tools = crate::harness::tools_root();
    h.user_config(&format!(
        "sandbox:\n  read: ['{}', '{}']\n",
        h.root().join("canned.jsonl").display(),
        tools.display()
    ));
    let settings_before = std::fs::read(h.home.join(".gemini/settings.json")).unwrap();
    let config_before = std::fs::read(h.project.join(".git/config")).unwrap();

    let (submitted, code) = h.json(&[
        "submit",
        "--sandbox",
        "--worktree",
        "--mode",
        "batch",
        "--model",
        crate::harness::MODEL,
        "--id",
        ID,
        "Try to get out",
    ]);
    assert_eq!(code, 0, "{submitted}");
    let id = ID;
    let task_dir = h.task_dir(id);
    let (waited, _) = h.json(&["wait", id, "--timeout", "120s"]);
    let transcript = h.transcript(id);
    assert_eq!(
        waited["tasks"][0]["status"], "completed",
        "{waited}\n{transcript}"
    );
    let status = h.status(id);
    assert_eq!(status["sandbox"], "bwrap", "{status}");
    assert!(
        status["launch_command"]
            .as_str()
            .unwrap_or_default()
            .contains("bwrap"),
        "{status}"
    );

    let got = results(&transcript, &ESCAPES);
    for (name, code) in &got {
        let code = code.unwrap_or_else(|| panic!("no result for {name}:\n{transcript}"));
        match name.as_str() {
            "inside" | "report" => assert_eq!(code, 0, "{name} failed:\n{transcript}"),
            _ => assert_ne!(code, 0, "{name} got out:\n{transcript}"),
        }
    }
    let worktree = PathBuf::from(status["worktree"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(worktree.join("inside.txt")).unwrap(),
        "made\n"
    );
    assert!(outside.alive(), "the sandbox killed a process outside");
    assert!(!other.join("owned.txt").exists());
    assert_eq!(
        std::fs::read(h.home.join(".gemini/settings.json")).unwrap(),
        settings_before
    );
    assert_eq!(
        std::fs::read(h.project.join(".git/config")).unwrap(),
        config_before
    );
    assert_eq!(
        std::fs::read_to_string(task_dir.join("exit-code"))
            .unwrap()
            .trim(),
        "cuekit_exit=0"
    );
    // The report, dropped inside, is on record.
    assert!(
        crate::harness::poll(limits::SHORT, || {
            h.status(id)["last_report"]["message"] == "from inside the sandbox"
        }),
        "{}",
        h.status(id)
    );
}

/// The direct write at the task's own exit code: the task directory is read-only inside.
#[test]
fn a_sandboxed_child_cannot_forge_its_exit_code_or_record() {
    let h = Harness::new();
    let script = "d=$(ls -d .cuekit/tasks/*/ | head -1); \
         (echo cuekit_exit=0 > \"$d/exit-code\") 2>/dev/null && echo FORGED-exit; \
         (echo '{}' > \"$d/task.json\") 2>/dev/null && echo FORGED-record; \
         echo TRIED; exit 3";
    let id = h.submit_sh(script, &["--sandbox", "--mode", "batch"]);
    let (waited, _) = h.json(&["wait", &id, "--timeout", "30s"]);
    let transcript = h.transcript(&id);
    assert!(transcript.contains("TRIED"), "{transcript}");
    assert!(!transcript.contains("FORGED"), "{transcript}");
    assert_eq!(waited["tasks"][0]["status"], "failed", "{waited}");
    assert_eq!(waited["tasks"][0]["exit_code"], 3, "{waited}");
}

/// `--no-network`: a connection to a server on the machine's loopback fails inside, and works
/// from the same task unsandboxed.
#[test]
fn no_network_means_not_even_loopback() {
    let h = Harness::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    let script = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)' && echo CONNECTED || echo REFUSED"
    );
    let cut = h.submit_sh(&script, &["--sandbox", "--no-network", "--mode", "batch"]);
    // Unsandboxed: a sandbox with the network has a namespace of its own (sandbox_net.rs).
    let open = h.submit_sh(&script, &["--mode", "batch"]);
    h.json(&["wait", &cut, &open, "--timeout", "30s"]);
    let cut_said = h.transcript(&cut);
    assert!(
        cut_said.contains("REFUSED") && !cut_said.contains("CONNECTED"),
        "{cut_said}"
    );
    assert!(
        h.transcript(&open).contains("CONNECTED"),
        "{}",
        h.transcript(&open)
    );
    assert_eq!(h.status(&cut)["sandbox"], "bwrap, no network");
}

/// Where no sandbox can be made, a sandboxed submit fails before anything starts: never
/// silently unsandboxed.
#[test]
fn without_bubblewrap_a_sandboxed_submit_starts_nothing() {
    let h = Harness::new();
    // A PATH with no bwrap on it, but sh and tmux.
    let bin = h.root().join("nobwrap");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["sh", "tmux", "env"] {
        let found = which(tool);
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    let output = h
        .cuekit()
        .env("PATH", format!("{}:{}", h.bin.display(), bin.display()))
        .args([
            "--json",
            "submit",
            "--sandbox",
            "--agent",
            "command",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    let said: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    assert_eq!(output.status.code(), Some(32), "{said}");
    assert_eq!(said["error"]["code"], "sandbox_unavailable", "{said}");
    let listed = h.ok(&["list", "--json"]);
    assert!(!listed.contains("t_"), "a task was recorded: {listed}");
    // A Gemini task that asks for approvals is sandboxed by default: without bubblewrap it
    // fails closed, and the user's own --sandbox=none runs it, saying its approvals are
    // advisory.
    let h = h.with_fake_gemini();
    let asks = |extra: &[&str]| {
        let mut args = vec![
            "--json",
            "submit",
            "--mode",
            "batch",
            "--no-skip-permissions",
        ];
        args.extend_from_slice(extra);
        args.push("Ask first");
        let output = h
            .cuekit()
            .env("PATH", format!("{}:{}", h.bin.display(), bin.display()))
            .args(&args)
            .output()
            .unwrap();
        let said: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
        (said, output.status.code())
    };
    let (closed, code) = asks(&[]);
    assert_eq!(code, Some(32), "{closed}");
    assert!(
        closed["error"]["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("--sandbox=none")),
        "{closed}"
    );
    let (open, code) = asks(&["--sandbox=none"]);
    assert_eq!(code, Some(0), "{open}");
    assert!(open["warnings"].to_string().contains("advisory"), "{open}");
    // `doctor` names the cause.
    let doctor = h
        .cuekit()
        .env("PATH", format!("{}:{}", h.bin.display(), bin.display()))
        .arg("doctor")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        said.lines()
            .any(|line| line.contains("sandbox") && line.contains("not installed")),
        "{said}"
    );
    // An agent without a sandbox of its own, asked for it.
    let (refused, code) = h.json(&[
        "submit",
        "--sandbox=agent",
        "--agent",
        "command",
        "--",
        "/bin/true",
    ]);
    assert_eq!(code, 32, "{refused}");
}

fn which(tool: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(tool))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("{tool} not on PATH"))
}

/// `script` run by `sh` as `user`, in a clean environment of theirs.
pub(crate) fn run_as(user: &ThrowawayUser, script: &str) -> std::process::Output {
    let home = user.home();
    as_root("runuser")
        .args(["-u", &user.name, "--", "env", "-i"])
        .arg(format!("HOME={}", home.display()))
        .arg(format!("PATH={}/bin:/usr/bin:/bin", home.display()))
        .args(["CUEKIT_TMUX_SOCKET=sbx", "/bin/sh", "-c", script])
        .current_dir(&home)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// As an unprivileged user (bubblewrap then needs a user namespace): the same ways out fail,
/// the work dir is written, and a process of the same user outside survives.
#[test]
fn an_unprivileged_users_sandbox_holds() {
    let user = ThrowawayUser::new("cuekit-sbx-");
    let home = user.home();
    let setup = run_as(
        &user,
        "mkdir -p ~/.ssh ~/proj ~/other ~/.gemini && echo PLANTED-KEY > ~/.ssh/id_ed25519 \
         && echo '{}' > ~/.gemini/settings.json && cd ~/proj && git init -q -b main \
         && git config user.name u && git config user.email u@x \
         && git commit -q --allow-empty -m base; \
         sleep 300 >/dev/null 2>&1 & echo $! > ~/outsider.pid",
    );
    assert!(setup.status.success(), "{setup:?}");
    let outsider: u32 = std::fs::read_to_string(home.join("outsider.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let names = [
        "inside",
        "key",
        "other",
        "kill",
        "tmux",
        "gitconfig",
        "settings",
        "objects",
        "rewind",
        "lead",
    ];
    let attempts = [
        attempt("inside", "echo made > inside.txt"),
        attempt("key", "grep PLANTED-KEY ~/.ssh/id_ed25519"),
        attempt("other", "echo owned > ~/other/owned.txt"),
        attempt("kill", &format!("kill -TERM {outsider}")),
        attempt("tmux", "ls /tmp/tmux-$(id -u)/sbx"),
        attempt("gitconfig", "echo x >> ~/proj/.git/config"),
        attempt("settings", "echo x > ~/.gemini/settings.json"),
        attempt(
            "objects",
            "find ~/proj/.git/objects -type f -delete && [ -z \"$(find ~/proj/.git/objects -type f)\" ]",
        ),
        attempt(
            "rewind",
            "git --git-dir=$HOME/proj/.git update-ref refs/heads/main $(git hash-object -t commit -w /dev/null)",
        ),
        // H1: its checkout's `.git` leads to a git dir of its own whose filter copies the key.
        attempt(
            "lead",
            "git init -q --bare .evil && git --git-dir=.evil config filter.pwn.clean \
             'cp ~/.ssh/id_ed25519 ~/proj/STOLEN; cat' && echo '* filter=pwn' > .gitattributes \
             && echo \"gitdir: $PWD/.evil\" > .git && [ -e ~/proj/STOLEN ]",
        ),
    ]
    .join("; ");
    let script = format!(
        "cd ~/proj && cuekit submit --id t_5a4db0c00002 --sandbox --agent command --mode batch -- sh -c {} \
         && cuekit wait t_5a4db0c00002 --timeout 30s; cuekit logs t_5a4db0c00002; \
         cuekit status t_5a4db0c00002 >/dev/null; cuekit diff t_5a4db0c00002 >/dev/null; \
         cuekit merge --yes t_5a4db0c00002 >/dev/null; git -C ~/proj status >/dev/null; \
         git -C ~/proj fsck --no-dangling && echo FSCK-OK",
        shell_quote(&attempts)
    );
    let ran = run_as(&user, &script);
    let said =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    for (name, code) in results(&said, &names) {
        let code = code.unwrap_or_else(|| panic!("no result for {name}:\n{said}"));
        if name == "inside" {
            assert_eq!(code, 0, "{said}");
        } else if name != "gitconfig" {
            assert_ne!(code, 0, "{name} got out:\n{said}");
        }
    }
    assert!(said.contains("FSCK-OK"), "{said}");
    assert!(
        !home.join("proj/STOLEN").exists(),
        "the child's filter ran:\n{said}"
    );
    // Merged: its work is the user's now.
    assert!(home.join("proj/inside.txt").exists(), "{said}");
    // The repository's folder inside is an empty one of the sandbox's own.
    let config = std::fs::read_to_string(home.join("proj/.git/config")).unwrap();
    assert!(!config.lines().any(|line| line == "x"), "{config}");
    // The work dir was the task's own checkout beside the repository.
    assert!(
        home.join("proj.worktrees/t_5a4db0c00002/inside.txt")
            .exists()
    );
    assert!(!home.join("other/owned.txt").exists());
    assert!(
        Path::new(&format!("/proc/{outsider}")).exists(),
        "the outsider was killed"
    );
}

pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The pid namespace a process lives in.
fn pid_namespace(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()
}

/// An interactive Gemini child in the sandbox: its TUI runs, a steer arrives with its receipt,
/// and a cancel ends every process of it, inside the namespace too.
#[test]
fn a_sandboxed_interactive_child_is_steered_and_cancelled() {
    let h = Harness::new()
        .with_real_gemini(&[canned_text("First answer."), canned_text("Second answer.")]);
    h.show_real_gemini_to_sandbox();
    let id = h.submit(&[
        "--sandbox",
        "--model",
        crate::harness::MODEL,
        "Answer twice",
    ]);
    let ok = crate::harness::poll(limits::AGENT, || {
        h.status(&id)["status"] == "input_required"
    });
    assert!(ok, "{}\n{}", h.status(&id), h.screen(&id));
    let (receipt, code) = h.json(&["steer", &id, "Say more"]);
    assert_eq!(code, 0, "{receipt}");
    assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    assert!(
        crate::harness::poll(limits::TASK, || h.screen(&id).contains("Second answer.")),
        "{}",
        h.screen(&id)
    );
    let inside = crate::harness::processes_of(&id);
    let own = pid_namespace(std::process::id());
    assert!(
        inside.iter().any(|pid| pid_namespace(*pid) != own),
        "no process of the task runs in a pid namespace of its own: {inside:?}"
    );
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(h.status(&id)["status"], "cancelled");
    crate::harness::assert_nothing_left(&id);
}

/// In ACP mode bubblewrap wraps the agent, not cuekit's client: the client stays outside (its
/// control socket reachable by the parent), the agent runs inside, and steering works.
#[test]
fn in_acp_mode_the_sandbox_wraps_the_agent_not_the_client() {
    let h = Harness::new()
        .with_real_gemini(&[canned_text("First answer."), canned_text("Second answer.")]);
    h.show_real_gemini_to_sandbox();
    let id = h.submit(&[
        "--sandbox",
        "--mode",
        "acp",
        "--model",
        crate::harness::MODEL,
        "Answer",
    ]);
    assert!(
        crate::harness::poll(limits::AGENT, || {
            h.ok(&["logs", &id]).contains("First answer.")
        }),
        "{}",
        h.transcript(&id)
    );
    let own = pid_namespace(std::process::id());
    let processes = crate::harness::processes_of(&id);
    let name =
        |pid: &u32| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let client: Vec<&u32> = processes
        .iter()
        .filter(|pid| name(pid).contains("__acp"))
        .collect();
    assert!(!client.is_empty(), "no client among {processes:?}");
    for pid in &client {
        assert_eq!(pid_namespace(**pid), own, "the client was sandboxed");
    }
    assert!(
        processes
            .iter()
            .any(|pid| name(pid).contains("gemini") && pid_namespace(*pid) != own),
        "the agent is not in a namespace of its own"
    );
    let (receipt, code) = h.json(&["steer", &id, "And now?"]);
    assert_eq!(code, 0, "{receipt}");
    assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    assert!(
        crate::harness::poll(limits::TASK, || h
            .ok(&["logs", &id])
            .contains("Second answer.")),
        "{}",
        h.transcript(&id)
    );
    h.json(&["cancel", &id]);
    crate::harness::assert_nothing_left(&id);
}

/// A sandbox that cannot be made when the task starts (a path it shows is gone by then) ends
/// the task `failed` / `sandbox_failed`: the agent never runs unsandboxed, and its failure is
/// not taken for the agent's.
#[test]
fn a_sandbox_that_cannot_be_made_at_start_ends_sandbox_failed() {
    let h = Harness::new();
    let shown = h.root().join("shown");
    std::fs::create_dir_all(&shown).unwrap();
    h.user_config(&format!("sandbox:\n  read: ['{}']\n", shown.display()));
    // Long enough to outlast the second's submit (its plan walks what the sandbox shows).
    let first = h.submit_batch_sh("sleep 8");
    let second = h.submit_sh(
        "echo AGENT-RAN",
        &["--sandbox", "--after", &first, "--mode", "batch"],
    );
    assert_eq!(h.status(&second)["status"], "queued");
    std::fs::remove_dir(&shown).unwrap();
    let (waited, _) = h.json(&["wait", &second, "--timeout", "60s"]);
    let view = &waited["tasks"][0];
    assert_eq!(view["status"], "failed", "{waited}");
    assert_eq!(view["reason"], "sandbox_failed", "{waited}");
    let transcript = h.transcript(&second);
    assert!(!transcript.contains("AGENT-RAN"), "{transcript}");
    assert!(
        transcript.contains("bwrap"),
        "bubblewrap's own words: {transcript}"
    );
}

/// A sandboxed task's timeout holds: it ends `timed_out`, and nothing of it outlives it, inside
/// the namespace either.
#[test]
fn a_sandboxed_task_times_out_with_nothing_left() {
    let h = Harness::new();
    let id = h.submit_sh(
        "sleep 600 & sleep 600",
        &["--sandbox", "--timeout", "2s", "--mode", "batch"],
    );
    let (waited, _) = h.json(&["wait", &id, "--timeout", "60s"]);
    assert_eq!(waited["tasks"][0]["status"], "timed_out", "{waited}");
    assert!(
        crate::harness::poll(limits::TASK, || crate::harness::processes_of(&id)
            .is_empty()),
        "left running: {:?}",
        crate::harness::processes_of(&id)
    );
}

/// A work dir that holds HOME would show all of it again: refused before anything is made.
/// (/tmp and /run are refused by the same rule, unit-tested in ops::sandbox: a test must not
/// risk a `.cuekit/` in the machine's /tmp.)
#[test]
fn a_work_dir_that_holds_home_is_refused() {
    let h = Harness::new();
    let home = h.home.to_str().unwrap();
    let (refused, code) = h.json(&[
        "submit",
        "--sandbox",
        "--cwd",
        home,
        "--agent",
        "command",
        "--",
        "/bin/true",
    ]);
    assert_eq!(code, 3, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_input", "{refused}");
    assert!(
        !h.home.join(".cuekit").exists(),
        "a refused submit made files"
    );
}

/// Every cuekit command that reads a task's work, each with a hang guard; their outputs.
fn read_every_way(h: &Harness, id: &str) -> String {
    let mut said = String::new();
    for args in [
        vec!["wait", id, "--timeout", "60s"],
        vec!["status", id],
        vec!["list"],
        vec!["list", "--all"],
        vec!["diff", id],
        vec!["result", id],
        vec!["conflicts"],
    ] {
        let out = h.bounded(&args, limits::AGENT);
        said += &String::from_utf8_lossy(&out.stdout);
        said += &String::from_utf8_lossy(&out.stderr);
    }
    said
}

/// Changed paths of `cuekit diff ID`.
fn diffed_paths(h: &Harness, id: &str) -> Vec<String> {
    let (diff, code) = h.json(&["diff", id, "--stat"]);
    assert_eq!(code, 0, "{diff}");
    diff["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

/// H1 and H2 of the audit: a sandboxed child (both kinds) rewrites everything git would
/// follow — its checkout's `.git` file, a submodule's `.git`, its own git dir's `commondir` —
/// towards git dirs whose config runs a filter, an fsmonitor and hooks, and asks for the
/// filter in `.gitattributes`. No command of cuekit's runs any of them, and the work it
/// committed and left uncommitted comes back exactly.
#[test]
fn nothing_a_sandboxed_child_writes_leads_cuekits_git() {
    for (n, kind) in [&[][..], &["--worktree"][..]].into_iter().enumerate() {
        let h = Harness::new().env("CUEKIT_GIT_TIMEOUT", "10");
        project_repo(&h.project, "original\n");
        let marker = h.root().join("PWNED");
        let run = format!("touch '{}'", marker.display());
        let evil = |dir: &str| {
            format!(
                "git init -q --bare {dir} && git --git-dir={dir} config filter.pwn.clean \"{run}; cat\" \
                 && git --git-dir={dir} config filter.pwn.smudge \"{run}; cat\" \
                 && git --git-dir={dir} config core.fsmonitor \"{run}\" \
                 && c=$(git -c user.name=c -c user.email=c@x --git-dir={dir} commit-tree \
                    $(git --git-dir={dir} mktree </dev/null) -m x) \
                 && git --git-dir={dir} update-ref HEAD $c \
                 && mkdir -p {dir}/hooks && printf '#!/bin/sh\\n{run}\\n' > {dir}/hooks/post-checkout \
                 && chmod +x {dir}/hooks/post-checkout"
            )
        };
        let script = format!(
            "set -e; g='git -c user.name=c -c user.email=c@x'; \
             echo one > committed.txt && $g add committed.txt && $g commit -qm one; \
             echo two > uncommitted.txt; \
             {}; {}; {}; \
             printf '* filter=pwn\\n' > .gitattributes; \
             mkdir -p lib && echo \"gitdir: $PWD/.evil-sub\" > lib/.git; \
             echo \"$PWD/.evil-common\" > \"$(git rev-parse --git-dir)/commondir.new\"; \
             echo \"gitdir: $PWD/.evil\" > .git; echo DONE",
            evil(".evil"),
            evil(".evil-sub"),
            evil(".evil-common"),
        );
        let mut extra = vec!["--sandbox", "--mode", "batch"];
        extra.extend(kind);
        let id = h.submit_sh(&script, &extra);
        let said = read_every_way(&h, &id);
        assert!(h.transcript(&id).contains("DONE"), "{}", h.transcript(&id));
        let paths = diffed_paths(&h, &id);
        for expected in ["committed.txt", "uncommitted.txt", ".gitattributes"] {
            assert!(paths.iter().any(|p| p == expected), "case {n}: {paths:?}");
        }
        // `lib` became a repository of the child's: a gitlink no merge may carry (issue 43).
        let (refused, code) = h.json(&["merge", &id, "--yes"]);
        assert_eq!(code, 37, "case {n}: {refused}");
        assert!(refused.to_string().contains("lib"), "{refused}");
        std::fs::remove_dir_all(h.worktree_of(&id).join("lib")).unwrap();
        // A merge is reviewed: `.gitattributes` changed.
        let (refused, code) = h.json(&["merge", &id]);
        assert_eq!(code, 34, "case {n}: {refused}");
        assert!(refused.to_string().contains(".gitattributes"), "{refused}");
        h.ok(&["merge", &id, "--yes"]);
        let merged = crate::harness::git::git(&h.project, &["show", "main:committed.txt"]);
        assert_eq!(merged, "one\n");
        crate::harness::git::git(&h.project, &["show", "main:uncommitted.txt"]);
        // The user's own git in the user's repository runs nothing of the child's either.
        crate::harness::git::git(&h.project, &["status"]);
        assert!(
            !marker.exists(),
            "case {n}: the child's git ran outside:\n{said}"
        );
        h.ok(&["rm", &id, "--force"]);
    }
}

/// M2 of the audit: from inside both kinds of sandboxed task, rewinding the user's `main` and
/// deleting the user's objects fail (the user's git dir is out of sight but for its objects,
/// read-only); the child's own repository is its own to rewrite.
#[test]
fn a_sandboxed_child_cannot_touch_the_users_repository() {
    for kind in [&[][..], &["--worktree"][..]] {
        let h = Harness::new();
        project_repo(&h.project, "original\n");
        let user_git = h.project.join(".git");
        let head = crate::harness::git::git(&h.project, &["rev-parse", "HEAD"]);
        let names = ["rewind", "objects", "rename", "commondir", "own", "unmount"];
        let attempts = [
            attempt(
                "rewind",
                &format!(
                    "git --git-dir='{0}' update-ref refs/heads/main $(git --git-dir='{0}' hash-object -w -t commit /dev/null)",
                    user_git.display()
                ),
            ),
            attempt(
                "objects",
                &format!(
                    "find '{0}/objects' -type f -delete && [ -z \"$(find '{0}/objects' -type f)\" ]",
                    user_git.display()
                ),
            ),
            attempt(
                "rename",
                &format!("mv '{0}' '{0}-old'", user_git.display()),
            ),
            // Where the user's git dir was, the child sees an empty folder of its own: what it
            // writes there vanishes with the sandbox (checked on the real one below).
            attempt(
                "commondir",
                &format!("echo /x > '{}/commondir'", user_git.display()),
            ),
            // Run by root, bubblewrap would keep every capability unless dropped: a child could
            // unmount what hides the user's `.git` and remount `/` writable.
            attempt(
                "unmount",
                &format!(
                    "umount -l '{}' || mount -o remount,rw /",
                    user_git.display()
                ),
            ),
            attempt(
                "own",
                "git -c user.name=c -c user.email=c@x commit -q --allow-empty -m mine \
                 && git update-ref -d HEAD && git checkout -q --orphan fresh",
            ),
        ]
        .join("; ");
        let mut extra = vec!["--sandbox", "--mode", "batch"];
        extra.extend(kind);
        let id = h.submit_sh(&attempts, &extra);
        h.ok(&["wait", &id, "--timeout", "60s"]);
        let transcript = h.transcript(&id);
        for (name, code) in results(&transcript, &names) {
            let code = code.unwrap_or_else(|| panic!("no result for {name}:\n{transcript}"));
            if name == "own" {
                assert_eq!(code, 0, "{transcript}");
            } else if name != "commondir" {
                assert_ne!(code, 0, "{name} got through:\n{transcript}");
            }
        }
        assert_eq!(
            crate::harness::git::git(&h.project, &["rev-parse", "HEAD"]),
            head
        );
        crate::harness::git::git(&h.project, &["fsck", "--no-dangling"]);
        assert!(!h.project.join(".git/commondir").exists());
    }
}

/// M3 and L1 of the audit: a child points its `.git` at a folder whose `index` is a FIFO,
/// makes `.gitattributes` a FIFO, then `.gitignore`; a `.worktreeinclude` folder holds a FIFO.
/// Nothing hangs: the reads that need git past a FIFO say `git_timed_out` within the deadline.
#[test]
fn fifos_in_a_childs_tree_never_hang_cuekit() {
    let h = Harness::new().env("CUEKIT_GIT_TIMEOUT", "3");
    project_repo(&h.project, "original\n");
    // L1: an included, ignored folder with a FIFO and a file in it.
    std::fs::write(h.project.join(".worktreeinclude"), "cache/\n").unwrap();
    std::fs::write(h.project.join(".gitignore"), ".cuekit/\ncache/\n").unwrap();
    crate::harness::git::commit_all(&h.project, "include");
    std::fs::create_dir_all(h.project.join("cache")).unwrap();
    std::fs::write(h.project.join("cache/kept.txt"), "kept\n").unwrap();
    let made = Command::new("mkfifo")
        .arg(h.project.join("cache/pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = h.bounded(
        &[
            &["submit"][..],
            &sh_task(
                "ls cache; mkdir .fake && mkfifo .fake/index && echo \"gitdir: $PWD/.fake\" > .git \
                 && mkfifo .gitattributes && echo FIFOS",
                &["--worktree", "--mode", "batch"],
            ),
        ]
        .concat(),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{out:?}");
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let said = read_every_way(&h, &id);
    let transcript = h.transcript(&id);
    assert!(
        transcript.contains("kept.txt") && !transcript.contains("pipe"),
        "{transcript}"
    );
    assert!(transcript.contains("FIFOS"), "{transcript}");
    // The FIFO index is never read, and a FIFO is no file git adds: nothing changed.
    assert!(diffed_paths(&h, &id).is_empty(), "{said}");
    // A FIFO `.gitignore` makes git wait: the deadline ends it.
    let worktree = PathBuf::from(h.status(&id)["worktree"].as_str().unwrap());
    std::fs::remove_file(worktree.join(".gitattributes")).unwrap();
    std::fs::remove_file(worktree.join(".gitignore")).unwrap();
    let made = Command::new("mkfifo")
        .arg(worktree.join(".gitignore"))
        .status()
        .unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let diff = h.bounded(&["diff", &id], limits::TASK);
    assert_eq!(diff.status.code(), Some(33), "{diff:?}");
    assert!(String::from_utf8_lossy(&diff.stdout).contains("git_timed_out"));
    eprintln!("diff past a FIFO .gitignore: {:?}", started.elapsed());
    read_every_way(&h, &id);
    // A view that timed out is not tried again for a while, however the checkout changes: with
    // a deadline longer than the guard, a look that ran git again would trip the guard.
    std::fs::write(worktree.join("touched.txt"), "x").unwrap();
    let mut look = h.cuekit();
    look.env("CUEKIT_GIT_TIMEOUT", "60")
        .args(["--json", "status", &id]);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(look.output().unwrap()));
    let status = finished
        .recv_timeout(limits::TASK)
        .expect("a view ran git past a FIFO again");
    assert!(status.status.success(), "{status:?}");
    assert!(!said.is_empty());
}

/// An interactive sandboxed child keeps the pane's terminal but cannot push keystrokes into
/// it (TIOCSTI), which would answer its own agent's approval dialog.
#[test]
fn a_sandboxed_interactive_child_cannot_push_keystrokes() {
    let h = Harness::new();
    project_repo(&h.project, "original\n");
    let push = "python3 -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b\"Z\")' \
                2>&1 | tail -1; echo \"PUSHED-$?\"; sleep 1; echo END";
    let legacy =
        std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "1");
    let plain = h.submit_sh(push, &["--mode", "interactive"]);
    let sandboxed = h.submit_sh(push, &["--mode", "interactive", "--sandbox"]);
    for id in [&plain, &sandboxed] {
        h.ok(&["wait", id, "--timeout", "60s"]);
    }
    let open = h.transcript(&plain);
    let walled = h.transcript(&sandboxed);
    assert!(walled.contains("Operation not permitted"), "{walled}");
    if legacy {
        // Without the sandbox this kernel lets it through: the filter is what stops it.
        assert!(!open.contains("Operation not permitted"), "{open}");
    }
}

/// A real Gemini child in a sandbox, in both kinds, edits, commits and leaves uncommitted
/// work; `diff`, `conflicts`, `--base-from` and `merge` bring exactly that work.
#[test]
fn a_sandboxed_gemini_childs_work_comes_back_exactly() {
    let replies = [
        canned_shell_call(
            "echo one > a.txt && git add a.txt && git -c user.name=g -c user.email=g@x commit -qm one",
        ),
        canned_shell_call("echo two > b.txt && echo changed > shared.txt"),
        canned_text("Done."),
    ];
    for kind in [&[][..], &["--worktree"][..]] {
        let h = Harness::new().with_real_gemini(&replies);
        project_repo(&h.project, "original\n");
        let tools = crate::harness::tools_root();
        h.user_config(&format!(
            "sandbox:\n  read: ['{}', '{}']\n",
            h.root().join("canned.jsonl").display(),
            tools.display()
        ));
        let mut args = vec![
            "--sandbox",
            "--mode",
            "batch",
            "--model",
            crate::harness::MODEL,
        ];
        args.extend(kind);
        args.push("Edit, commit, and leave some work uncommitted");
        let id = h.submit(&args);
        let (waited, _) = h.json(&["wait", &id, "--timeout", "120s"]);
        assert_eq!(
            waited["tasks"][0]["status"],
            "completed",
            "{waited}\n{}",
            h.transcript(&id)
        );
        let mut paths = diffed_paths(&h, &id);
        paths.sort();
        assert_eq!(paths, ["a.txt", "b.txt", "shared.txt"]);
        let (conflicts, code) = h.json(&["conflicts"]);
        assert_eq!(code, 0, "{conflicts}");
        let next = h.submit_sh(
            "cat a.txt b.txt shared.txt",
            &["--mode", "batch", "--base-from", &id],
        );
        h.ok(&["wait", &next, "--timeout", "60s"]);
        let seen = h.transcript(&next);
        assert!(
            seen.contains("one") && seen.contains("two") && seen.contains("changed"),
            "{seen}"
        );
        h.ok(&["merge", &id]);
        for (file, text) in [
            ("a.txt", "one\n"),
            ("b.txt", "two\n"),
            ("shared.txt", "changed\n"),
        ] {
            assert_eq!(std::fs::read_to_string(h.project.join(file)).unwrap(), text);
        }
    }
}

/// The audit's read-out: a sandboxed child points its own git dir's `commondir` (and `HEAD`)
/// at a repository of the user's it cannot see; cuekit's fetch of its work must not bring that
/// repository's history into the user's, where the child could read it back.
#[test]
fn a_sandboxed_childs_git_dir_never_leads_the_fetch_elsewhere() {
    let h = Harness::new();
    project_repo(&h.project, "original\n");
    let private = h.home.join("private");
    crate::harness::git::init_repo(&private);
    std::fs::write(private.join("secret.txt"), "PRIVATE-3\n").unwrap();
    crate::harness::git::commit_all(&private, "secret");
    let secret = crate::harness::git::git(&private, &["rev-parse", "HEAD"]);
    let script = format!(
        "gd=$(sed -n 's/^gitdir: //p' .git); echo '{}' > \"$gd/commondir\"; \
         echo 'ref: refs/heads/main' > \"$gd/HEAD\"; echo LED",
        private.join(".git").display()
    );
    for kind in [&[][..], &["--worktree"][..]] {
        let mut extra = vec!["--sandbox", "--mode", "batch"];
        extra.extend(kind);
        let id = h.submit_sh(&script, &extra);
        h.ok(&["wait", &id, "--timeout", "60s"]);
        assert!(h.transcript(&id).contains("LED"), "{}", h.transcript(&id));
        for look in [&["list"][..], &["status", &id], &["diff", &id]] {
            let _ = h.run(look);
        }
        let fetched = h.run(&["--json", "diff", &id]);
        let present = Command::new("git")
            .arg("-C")
            .arg(&h.project)
            .args(["cat-file", "-e", secret.trim()])
            .status()
            .unwrap();
        assert!(
            !present.success(),
            "the private repository's commit reached the user's: {}",
            String::from_utf8_lossy(&fetched.stdout)
        );
        // A task whose commits cannot be read is kept by `rm`, not deleted with its work.
        let removed = h.run(&["--json", "rm", &id]);
        let said = String::from_utf8_lossy(&removed.stdout);
        assert!(said.contains("kept"), "{said}");
        h.ok(&["rm", "--force", &id]);
    }
}

/// The audit's setup escape: `worktree.setup` runs on a checkout that starts from a sandboxed
/// child's work (`--base-from`), so a sandboxed task runs it inside its sandbox.
#[test]
fn a_sandboxed_tasks_setup_runs_inside_its_sandbox() {
    let h = Harness::new();
    project_repo(&h.project, "original\n");
    std::fs::write(h.project.join("setup.sh"), "echo SETUP-RAN\n").unwrap();
    crate::harness::git::commit_all(&h.project, "setup");
    h.user_config("worktree:\n  setup: sh ./setup.sh\n");
    let escaped = h.home.join("ESCAPED-VIA-SETUP");
    let first = h.submit_sh(
        &format!(
            "printf 'echo SETUP-RAN; touch {}\\n' > setup.sh; exit 1",
            escaped.display()
        ),
        &["--sandbox", "--worktree", "--mode", "batch"],
    );
    h.json(&["wait", &first, "--timeout", "60s"]);
    let second = h.submit_sh(
        "echo AGENT-RAN",
        &["--sandbox", "--base-from", &first, "--mode", "batch"],
    );
    h.ok(&["wait", &second, "--timeout", "60s"]);
    let transcript = h.transcript(&second);
    assert!(
        transcript.contains("SETUP-RAN") && transcript.contains("AGENT-RAN"),
        "{transcript}"
    );
    assert!(
        !escaped.exists(),
        "the child's setup ran outside the sandbox"
    );
}

/// The audit's copy-in: a repository's `.worktreeinclude` naming `.cuekit/` and `.env` must
/// not bring other tasks' records, or the user's secrets, into a sandboxed task's checkout;
/// cuekit's records are never brought, sandbox or not.
#[test]
fn a_repository_never_chooses_what_is_copied_into_a_sandbox() {
    let h = Harness::new();
    project_repo(&h.project, "original\n");
    std::fs::write(h.project.join(".worktreeinclude"), ".cuekit/\n.env\n").unwrap();
    std::fs::write(h.project.join(".gitignore"), ".cuekit/\n.env\n").unwrap();
    crate::harness::git::commit_all(&h.project, "include");
    std::fs::write(h.project.join(".env"), "AWS_SECRET=xyz\n").unwrap();
    let earlier = h.submit_batch_sh("echo EARLIER-PROMPT-TEXT");
    h.ok(&["wait", &earlier, "--timeout", "60s"]);
    let look =
        "ls -a; cat .env 2>/dev/null; find .cuekit -type f 2>/dev/null | head -3; echo LOOKED";
    let boxed = h.submit_sh(look, &["--sandbox", "--worktree", "--mode", "batch"]);
    let open = h.submit_sh(look, &["--worktree", "--mode", "batch"]);
    for id in [&boxed, &open] {
        h.ok(&["wait", id, "--timeout", "60s"]);
    }
    let boxed_saw = h.transcript(&boxed);
    assert!(boxed_saw.contains("LOOKED"), "{boxed_saw}");
    assert!(!boxed_saw.contains("AWS_SECRET"), "{boxed_saw}");
    assert!(!boxed_saw.contains(&earlier), "{boxed_saw}");
    // Unsandboxed, the user's `.env` is brought as the convention says; records never are.
    let open_saw = h.transcript(&open);
    assert!(open_saw.contains("AWS_SECRET"), "{open_saw}");
    assert!(!open_saw.contains(&earlier), "{open_saw}");
}

/// A checkout that starts from a sandboxed task's work holds what that child wrote: a task
/// based on it (`--base-from`) without `--sandbox` is sandboxed too, so the child's rewritten
/// setup script runs inside; asked to run unsandboxed, the submit is refused with the list a
/// merge of that work would ask to have reviewed, and nothing starts.
#[test]
fn a_task_based_on_a_sandboxed_tasks_work_inherits_its_sandbox() {
    let h = Harness::new();
    project_repo(&h.project, "original\n");
    std::fs::write(h.project.join("setup.sh"), "echo SETUP-RAN\n").unwrap();
    crate::harness::git::commit_all(&h.project, "setup");
    h.user_config("worktree:\n  setup: sh ./setup.sh\n");
    let escaped = h.home.join("ESCAPED-VIA-SETUP");
    let first = h.submit_sh(
        &format!(
            "printf 'echo SETUP-RAN; touch {}\\n' > setup.sh; printf 'all:\\n\\ttrue\\n' > Makefile",
            escaped.display()
        ),
        &["--sandbox", "--worktree", "--mode", "batch"],
    );
    h.ok(&["wait", &first, "--timeout", "60s"]);
    let mut unsandboxed = vec!["submit", "--sandbox=none", "--base-from", &first];
    unsandboxed.extend(sh_task("echo AGENT-RAN", &["--mode", "batch"]));
    let (answer, code) = h.json(&unsandboxed);
    crate::harness::assert_refused(&answer, code, "merge_review", 34);
    let said = answer["error"]["message"].as_str().unwrap();
    assert!(said.contains("Makefile"), "{answer}");
    let second = h.submit_sh(
        "echo AGENT-RAN",
        &["--base-from", &first, "--mode", "batch"],
    );
    h.ok(&["wait", &second, "--timeout", "60s"]);
    let transcript = h.transcript(&second);
    assert!(
        transcript.contains("SETUP-RAN") && transcript.contains("AGENT-RAN"),
        "{transcript}"
    );
    assert!(!escaped.exists(), "the child's setup ran outside a sandbox");
    let (listed, _) = h.json(&["list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
}

//! Tasks on other hosts, through real OpenSSH on loopback: each "host" is an `sshd` of the
//! test's own (own config, host key, port) and a throw-away unix user whose home holds a link
//! to this cuekit. The test's ssh client config (the user's `~/.ssh/config`, in effect) names
//! the hosts; host keys are checked against a known_hosts file written from the host keys.
//! scripts/test installs openssh-server; a machine without it fails here, saying so.

use crate::harness::limits;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::ssh_host::{SshHost, as_root, must};
use crate::harness::{Harness, write_executable};
use proptest::prelude::*;
use serde_json::Value;

/// A harness whose user config names `hosts`, with an ssh client config for them (through a
/// `ssh` on PATH that adds `-F`: ssh reads `~/.ssh/config` from the passwd entry, not HOME).
pub(crate) fn harness_with(hosts: &[&SshHost], extra_hosts: &str) -> Harness {
    let h = Harness::new();
    let run = h.root().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let h = h.env("XDG_RUNTIME_DIR", run.to_str().unwrap());
    let mut yaml = crate::harness::ssh_host::client_of(&h, hosts);
    yaml.push_str(extra_hosts);
    h.user_config(&yaml);
    h
}

pub(crate) fn submit_on(h: &Harness, host: &str, words: &[&str]) -> String {
    let mut args = vec!["--host", host, "--agent", "command"];
    args.extend_from_slice(words);
    h.submit(&args)
}

/// `submit --host HOST --agent command WORDS…`, whatever its outcome.
fn try_submit_on(h: &Harness, host: &str, words: &[&str]) -> std::process::Output {
    let mut args = vec!["submit", "--host", host, "--agent", "command"];
    args.extend_from_slice(words);
    h.run(&args)
}

/// How many times cuekit has started ssh so far.
fn ssh_calls(h: &Harness) -> usize {
    std::fs::read_to_string(h.root().join("ssh-calls"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What the host's own cuekit prints for `command` (a remote command line), run there directly.
fn on_host(h: &Harness, host: &str, command: &str) -> String {
    let output = std::process::Command::new(h.bin.join("ssh"))
        .args([host, &format!("~/bin/cuekit {command}")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{command}: {}", stderr_of(&output));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_task_on_a_host_is_submitted_followed_steered_and_cancelled() {
    let alpha = SshHost::start("alpha");
    let h = harness_with(&[&alpha], "");

    let batch = submit_on(
        &h,
        "alpha",
        &["--mode", "batch", "--", "sh", "-c", "echo hello-from-alpha"],
    );
    let status = h.status(&batch);
    assert_eq!(status["host"], "alpha");
    // Warm: the master greeted on its socket and was checked already, so a status is one ssh.
    let before = ssh_calls(&h);
    h.status(&batch);
    assert_eq!(
        ssh_calls(&h) - before,
        1,
        "a warm status starts exactly one ssh"
    );
    let (waited, code) = h.json(&["wait", &batch, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}");
    assert_eq!(waited["tasks"][0]["status"], "completed");
    // The host's rows are read back typed, so they name their host as `status` does.
    assert_eq!(waited["tasks"][0]["host"], "alpha", "{waited}");
    let (result, code) = h.json(&["result", &batch]);
    assert_eq!(code, 0, "{result}");
    assert_eq!(result["status"], "completed");
    assert!(h.ok(&["logs", &batch]).contains("hello-from-alpha"));
    assert_eq!(h.ok(&["logs", "--tail", "1", &batch]), "hello-from-alpha\n");
    // Text is rendered here from the host's typed reply: exactly what the host prints.
    for command in ["result", "wait", "logs"] {
        assert_eq!(
            h.ok(&[command, &batch]),
            on_host(&h, "alpha", &format!("{command} {batch}")),
            "cuekit {command}"
        );
    }
    // Followed: streamed from the host until the task ends.
    let counting = submit_on(
        &h,
        "alpha",
        &[
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "for i in 1 2 3; do echo line-$i; sleep 0.3; done",
        ],
    );
    let followed = h.ok(&["logs", "--follow", &counting]);
    assert!(
        followed.contains("line-1") && followed.contains("line-3"),
        "{followed}"
    );
    // The registry holds the host; the task's directory is the host's, not one of ours.
    let entry =
        std::fs::read_to_string(h.home.join(".local/share/cuekit/tasks").join(&batch)).unwrap();
    assert!(entry.contains("\"host\": \"alpha\""), "{entry}");
    assert!(
        status["task_dir"]
            .as_str()
            .unwrap()
            .starts_with(alpha.home().to_str().unwrap())
    );

    let interactive = submit_on(
        &h,
        "alpha",
        &["--", "sh", "-c", "read line; echo got:$line; sleep 600"],
    );
    let steered = h.run(&["steer", &interactive, "it's $(not run)"]);
    assert!(steered.status.success(), "{}", stderr_of(&steered));
    let start = Instant::now();
    while !h
        .ok(&["logs", &interactive])
        .contains("got:it's $(not run)")
    {
        assert!(
            start.elapsed() < limits::TASK,
            "{}",
            h.ok(&["logs", &interactive])
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // `attach` from a terminal: an interactive ssh to the host's `cuekit attach`.
    h.in_terminal("person", &format!("attach {interactive}"), (120, 30), false);
    h.wait_pane("person", "the host's pane", |shown| {
        shown.contains("got:it's $(not run)")
    });
    let (cancelled, code) = h.json(&["cancel", &interactive]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(cancelled[0]["host"], "alpha", "{cancelled}");
    assert_eq!(h.status(&interactive)["status"], "cancelled");

    // A local command that does not reach hosts refuses the host's task instead of misreading it.
    let refused = h.run(&["merge", &interactive]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr_of(&refused));
    assert!(
        stderr_of(&refused).contains("runs on host alpha"),
        "{}",
        stderr_of(&refused)
    );
    // `rm` removes the task's files on the host, then forgets it here.
    let task_dir = PathBuf::from(h.status(&interactive)["task_dir"].as_str().unwrap());
    assert!(task_dir.is_dir(), "{}", task_dir.display());
    let (removed, code) = h.json(&["rm", &interactive]);
    assert_eq!(
        (code, removed[0]["outcome"].as_str()),
        (0, Some("removed")),
        "{removed}"
    );
    assert!(!task_dir.exists());
    assert_eq!(
        h.json(&["status", &interactive]).0["error"]["code"],
        "task_not_found"
    );
}

/// `--sandbox` goes to the host, whose own bubblewrap (as the host's unprivileged user, in a
/// user namespace) makes the sandbox: the host user's `~/.ssh` is out of the child's reach.
#[test]
fn a_sandboxed_task_on_a_host_runs_in_the_hosts_bubblewrap() {
    let alpha = SshHost::start("alpha");
    std::fs::create_dir_all(alpha.home().join("work")).unwrap();
    must(as_root("chown").args(["-R", &alpha.user]).arg(alpha.home()));
    let h = harness_with(&[&alpha], "");
    // In the host user's HOME itself it is refused: the sandbox would show all of HOME.
    let refused = try_submit_on(&h, "alpha", &["--sandbox", "--", "true"]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr_of(&refused));
    assert!(
        stderr_of(&refused).contains("HOME"),
        "{}",
        stderr_of(&refused)
    );
    let id = submit_on(
        &h,
        "alpha",
        &[
            "--cwd",
            "~/work",
            "--sandbox",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "(cat ~/.ssh/authorized_keys) >/dev/null 2>&1 && echo KEY-ESCAPED || echo KEY-BLOCKED; \
             echo made > made.txt && echo WORK-WRITTEN",
        ],
    );
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}");
    let logs = h.ok(&["logs", &id]);
    assert!(
        logs.contains("KEY-BLOCKED") && !logs.contains("KEY-ESCAPED"),
        "{logs}"
    );
    assert!(logs.contains("WORK-WRITTEN"), "{logs}");
    assert_eq!(h.status(&id)["sandbox"], "bwrap");
}

#[test]
fn list_all_shows_both_hosts_and_a_lost_host_reads_unknown_until_it_is_back() {
    let alpha = SshHost::start("alpha");
    let mut beta = SshHost::start("beta");
    let h = harness_with(&[&alpha, &beta], "");
    let on_alpha = submit_on(&h, "alpha", &["--", "sh", "-c", "sleep 600"]);
    let on_beta = submit_on(&h, "beta", &["--", "sh", "-c", "sleep 600"]);
    let local = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);

    let rows = |h: &Harness| -> Vec<(String, String, Value)> {
        let (list, code) = h.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        list.as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row["id"].as_str().unwrap().to_string(),
                    row["status"].as_str().unwrap().to_string(),
                    row["host"].clone(),
                )
            })
            .collect()
    };
    let all = rows(&h);
    for (id, host) in [(&on_alpha, "alpha"), (&on_beta, "beta")] {
        assert!(
            all.iter()
                .any(|(i, s, hs)| i == id && s == "running" && hs == host),
            "{all:?}"
        );
    }
    assert!(
        all.iter().any(|(i, _, hs)| i == &local && hs.is_null()),
        "{all:?}"
    );

    // The dashboard shows every task with the hosts' beside this machine's, each naming its host.
    h.in_terminal("dashboard", "top --all", (120, 30), false);
    h.wait_pane("dashboard", "both hosts' tasks", |shown| {
        shown.contains("command@alpha") && shown.contains("command@beta")
    });

    beta.down();
    h.wait_pane("dashboard", "the lost host's task as unknown", |shown| {
        shown.lines().any(|line| {
            line.contains("command@beta") && line.contains("can't tell — its host does not answer")
        }) && shown
            .lines()
            .any(|line| line.contains("command@alpha") && line.contains("running"))
    });
    let start = Instant::now();
    let (lost, code) = h.json(&["status", &on_beta]);
    let took = start.elapsed();
    assert_eq!(code, 0, "{lost}");
    assert_eq!(lost["status"], "unknown");
    assert_eq!(lost["reason"], "host_unreachable");
    assert!(lost["hint"].as_str().unwrap().contains("beta"), "{lost}");
    println!("status of a task on a lost host answered in {took:?}");
    // Every other command on it says the host is unreachable, whichever way it reads the host.
    for args in [
        &["logs", &on_beta][..],
        &["logs", "--tail", "3", &on_beta],
        &["logs", "--follow", &on_beta],
        &["result", &on_beta],
        &["diff", &on_beta],
        &["steer", &on_beta, "hello"],
    ] {
        let out = h.run(args);
        assert_eq!(out.status.code(), Some(26), "{args:?}: {}", stderr_of(&out));
    }
    let all = rows(&h);
    assert!(
        all.iter().any(|(i, s, _)| i == &on_alpha && s == "running"),
        "{all:?}"
    );
    assert!(
        all.iter().any(|(i, s, _)| i == &on_beta && s == "unknown"),
        "{all:?}"
    );
    // A wait with its own timeout keeps waiting, and says why, never taking the loss for an end.
    let waited = h.run(&["wait", &on_beta, "--timeout", "3s"]);
    assert_eq!(waited.status.code(), Some(26), "{}", stderr_of(&waited));
    assert!(
        stderr_of(&waited).contains("still waiting"),
        "{}",
        stderr_of(&waited)
    );

    // So does an MCP client's: it times out with the task unknown, and the ssh error as hint.
    let waited = Mcp::start(&h).call(
        "wait",
        serde_json::json!({"ids": [&on_beta], "timeout_seconds": 3}),
    );
    let task = &waited["tasks"][0];
    assert_eq!(
        (&waited["timed_out"], &task["status"], &task["reason"]),
        (
            &Value::Bool(true),
            &Value::from("unknown"),
            &Value::from("host_unreachable")
        ),
        "{waited}"
    );

    beta.up();
    assert_eq!(h.status(&on_beta)["status"], "running");
    // A host's task is cancelled from the dashboard like any other: filter to it, x, y.
    for keys in [&["/"][..], &["-l", "alpha"], &["Enter"], &["x"], &["y"]] {
        let mut args = vec!["send-keys", "-t", "=dashboard:"];
        args.extend_from_slice(keys);
        assert!(h.tmux(&args).status.success());
    }
    h.wait_pane("dashboard", "the cancel's outcome", |shown| {
        shown.contains(&format!("{on_alpha}: cancelled"))
    });
    assert_eq!(h.status(&on_alpha)["status"], "cancelled");
    // Nothing was recorded on the host while it was away.
    let (cancelled, code) = h.json(&["cancel", &on_beta, &on_alpha]);
    assert_ne!(
        code, 0,
        "ids of two hosts are refused in one call: {cancelled}"
    );
    for id in [&on_alpha, &on_beta, &local] {
        assert_eq!(h.json(&["cancel", id]).1, 0);
    }
}

#[test]
fn a_control_socket_nobody_answers_on_is_replaced_not_waited_on() {
    let alpha = SshHost::start("alpha");
    let h = harness_with(&[&alpha], "");
    let id = submit_on(&h, "alpha", &["--", "sh", "-c", "sleep 600"]);
    // A master that hangs: the socket accepts connections and never answers.
    let control = h.root().join("run/cuekit-ssh/alpha");
    let _ = std::fs::remove_file(&control);
    let _ = std::fs::remove_file(h.root().join("run/cuekit-ssh/alpha.checked"));
    let hung = std::os::unix::net::UnixListener::bind(&control).unwrap();
    let start = Instant::now();
    assert_eq!(h.status(&id)["status"], "running");
    println!(
        "status past a hung control socket took {:?}",
        start.elapsed()
    );
    drop(hung);
    // A socket file left by a master that died: refused, removed, replaced.
    let _ = std::fs::remove_file(&control);
    drop(std::os::unix::net::UnixListener::bind(&control).unwrap());
    assert_eq!(h.status(&id)["status"], "running");
    assert_eq!(h.json(&["cancel", &id]).1, 0);
}

#[test]
fn a_host_running_another_cuekit_is_refused_with_the_install_hint() {
    let alpha = SshHost::start("alpha");
    let other = alpha.home().join("bin/other-cuekit");
    write_executable(&other, "#!/bin/sh\necho 'cuekit 9.9.9'\n");
    let h = harness_with(
        &[&alpha],
        "  skewed:\n    ssh: alpha\n    cuekit: ~/bin/other-cuekit\n  nowhere:\n    ssh: alpha\n    cuekit: /no/such/cuekit\n",
    );
    let (hosts, code) = h.json(&["hosts"]);
    assert_eq!(code, 27, "{hosts}");
    let by_name = |name: &str| {
        hosts
            .as_array()
            .unwrap()
            .iter()
            .find(|host| host["name"] == name)
            .unwrap()
            .clone()
    };
    let ok = by_name("alpha");
    assert_eq!(ok["reachable"], true, "{ok}");
    assert_eq!(
        ok["cuekit_version"],
        format!("cuekit {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(
        ok["tmux_version"].as_str().unwrap().starts_with("tmux "),
        "{ok}"
    );
    let skewed = by_name("skewed");
    assert_eq!(skewed["error"]["code"], "host_version_mismatch", "{skewed}");
    assert_eq!(skewed["cuekit_version"], "cuekit 9.9.9");
    assert_eq!(by_name("nowhere")["error"]["code"], "host_version_mismatch");

    let refused = h.run(&[
        "submit", "--host", "skewed", "--agent", "command", "--", "true",
    ]);
    assert_eq!(refused.status.code(), Some(27), "{}", stderr_of(&refused));
    assert!(
        stderr_of(&refused).contains("cuekit host install skewed"),
        "{}",
        stderr_of(&refused)
    );
    let unknown = h.run(&[
        "submit", "--host", "nope", "--agent", "command", "--", "true",
    ]);
    assert_eq!(unknown.status.code(), Some(3), "{}", stderr_of(&unknown));

    // The hint's command: this very binary copied over ssh, then the host is good.
    let (installed, code) = h.json(&["host", "install", "skewed"]);
    assert_eq!(code, 0, "{installed}");
    assert_eq!(installed["path"], "~/bin/other-cuekit");
    assert!(installed.get("note").is_none(), "{installed}");
    let (hosts, _) = h.json(&["hosts"]);
    let skewed = hosts
        .as_array()
        .unwrap()
        .iter()
        .find(|host| host["name"] == "skewed")
        .unwrap()
        .clone();
    assert!(skewed.get("error").is_none(), "{skewed}");
    let id = submit_on(&h, "skewed", &["--mode", "batch", "--", "true"]);
    assert_eq!(h.json(&["wait", &id, "--timeout", "60s"]).1, 0);
    let failed = h.run(&["host", "install", "nowhere"]);
    assert_eq!(failed.status.code(), Some(11), "{}", stderr_of(&failed));
}

#[test]
fn a_stopped_host_is_reported_unreachable_by_hosts() {
    let mut alpha = SshHost::start("alpha");
    let h = harness_with(&[&alpha], "");
    alpha.down();
    let (hosts, code) = h.json(&["hosts"]);
    assert_eq!(code, 26, "{hosts}");
    assert_eq!(hosts[0]["reachable"], false);
    assert_eq!(hosts[0]["error"]["code"], "host_unreachable");
    let refused = h.run(&[
        "submit", "--host", "alpha", "--agent", "command", "--", "true",
    ]);
    assert_eq!(refused.status.code(), Some(26), "{}", stderr_of(&refused));
    let (checks, code) = h.json(&["doctor"]);
    assert_eq!(code, 1, "{checks}");
    let check = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == "host alpha")
        .unwrap_or_else(|| panic!("{checks}"))
        .clone();
    assert_eq!(check["level"], "fail", "{check}");
    assert!(
        check["message"].as_str().unwrap().contains("unreachable"),
        "{check}"
    );
}

/// Words with what shells and ssh love to mangle: quotes, `$()`, backticks, backslashes,
/// newlines, a leading `-`, spaces, non-ASCII.
fn awkward_word() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("'".to_string()),
            Just("\"".to_string()),
            Just("$(touch pwned)".to_string()),
            Just("`id`".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            Just("-".to_string()),
            Just(" ".to_string()),
            Just("*".to_string()),
            Just("é漢🙂".to_string()),
            "[a-z]{1,3}",
        ],
        1..8,
    )
    .prop_map(|parts| parts.concat())
}

#[test]
fn arguments_reach_the_host_exactly_through_sshd_and_its_shell() {
    let alpha = SshHost::start("alpha");
    let h = harness_with(&[&alpha], "");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 8,
        ..ProptestConfig::default()
    });
    let case = std::sync::atomic::AtomicUsize::new(0);
    runner
        .run(&proptest::collection::vec(awkward_word(), 1..6), |words| {
            let n = case.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let out = format!("out-{n}");
            // The remote task writes each argument it received, NUL-terminated.
            let script = format!("for a; do printf '%s\\0' \"$a\"; done > {out}");
            let mut args = vec!["--mode", "batch", "--", "sh", "-c", &script, "sh"];
            args.extend(words.iter().map(String::as_str));
            let id = submit_on(&h, "alpha", &args);
            let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
            prop_assert_eq!(code, 0, "{}", waited);
            let written = std::fs::read(alpha.home().join(&out)).unwrap();
            let expected: Vec<u8> = words
                .iter()
                .flat_map(|w| [w.as_bytes(), b"\0"].concat())
                .collect();
            prop_assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&expected)
            );
            Ok(())
        })
        .unwrap();
    assert!(!alpha.home().join("pwned").exists());
}

/// `diff` of a host's worktree task is its host's `cuekit diff`, in every face that shows one:
/// the command line's patch and JSON, and MCP's get_task_diff. Its paths are the host's, shown.
#[test]
fn a_hosts_worktree_task_is_diffed_by_its_host() {
    let alpha = SshHost::start("alpha");
    let repo = alpha.home().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        must(
            std::process::Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
                .args(args),
        )
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
    must(as_root("chown").args(["-R", &alpha.user]).arg(alpha.home()));
    let h = harness_with(&[&alpha], "");
    let id = submit_on(
        &h,
        "alpha",
        &[
            "--cwd",
            "~/repo",
            "--worktree",
            "--mode",
            "batch",
            "--",
            "sh",
            "-c",
            "echo new > added.txt",
        ],
    );
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}");

    let patch = h.ok(&["diff", &id]);
    assert!(
        patch.contains("+++ b/added.txt") && patch.contains("+new"),
        "{patch}"
    );
    assert_eq!(patch, on_host(&h, "alpha", &format!("diff {id}")));
    let (stat, code) = h.json(&["diff", "--stat", &id]);
    assert_eq!(code, 0, "{stat}");
    assert_eq!(stat["files"][0]["path"], "added.txt", "{stat}");
    assert!(stat.get("patch").is_none(), "{stat}");
    assert!(
        stat["worktree"]
            .as_str()
            .unwrap()
            .starts_with(alpha.home().to_str().unwrap()),
        "{stat}"
    );
    let diff = Mcp::start(&h).call("get_task_diff", serde_json::json!({"id": id}));
    assert!(
        diff["diff"]["patch"].as_str().unwrap().contains("+new"),
        "{diff}"
    );
    assert_eq!(h.json(&["rm", "--force", &id]).1, 0);
}

/// An MCP client's `submit_task` with `host`, over `cuekit mcp`'s stdio (newline-delimited
/// JSON-RPC): the task starts on the host and the result names it.
#[test]
fn mcp_submit_task_runs_on_a_host_and_says_so() {
    let alpha = SshHost::start("alpha");
    // The host's own config: its "gemini" is /bin/true (the task only has to start there).
    let config = alpha.home().join(".config/cuekit");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.yaml"),
        "adapters:\n  gemini:\n    bin: /bin/true\n",
    )
    .unwrap();
    std::fs::create_dir_all(alpha.home().join("work")).unwrap();
    must(as_root("chown").args(["-R", &alpha.user]).arg(alpha.home()));
    let h = harness_with(&[&alpha], "");
    let mut mcp = Mcp::start(&h);
    let mut call = |name: &str, arguments: Value| mcp.call(name, arguments);
    let task = call(
        "submit_task",
        serde_json::json!({"objective": "say hi", "mode": "batch", "host": "alpha", "cwd": "~/work"}),
    );
    assert_eq!(task["task"]["host"], "alpha", "{task}");
    let id = task["task"]["id"].as_str().unwrap();
    assert_eq!(h.status(id)["host"], "alpha");
    let status = h.status(id);
    let work = alpha.home().join("work/.cuekit/tasks");
    assert!(
        status["task_dir"]
            .as_str()
            .unwrap()
            .starts_with(work.to_str().unwrap()),
        "the cwd is the host's (~ its home): {status}"
    );
    // The other tools reach the host by the registry's entry; wait runs on the host.
    // ("gemini" is /bin/true: it exits 0 without the stream's result event, so the host judges
    // it failed.)
    let waited = call(
        "wait",
        serde_json::json!({"ids": [id], "timeout_seconds": 30}),
    );
    let task = &waited["tasks"][0];
    assert_eq!(
        (
            &waited["timed_out"],
            &waited["all_completed"],
            &task["status"],
            &task["reason"],
            &task["host"]
        ),
        (
            &Value::Bool(false),
            &Value::Bool(false),
            &Value::from("failed"),
            &Value::from("no_result_event"),
            &Value::from("alpha")
        ),
        "{waited}"
    );
    let snapshot = call(
        "get_task_snapshot",
        serde_json::json!({"id": id, "lines": 5}),
    );
    assert_eq!(snapshot["task"]["host"], "alpha", "{snapshot}");
    assert!(snapshot["transcript_tail"].is_string(), "{snapshot}");
    let result = call("get_task_result", serde_json::json!({"id": id}));
    assert_eq!(result["result"]["task_id"], id, "{result}");
    let steered = call("steer_task", serde_json::json!({"id": id, "message": "hi"}));
    assert!(steered.to_string().contains("host alpha"), "{steered}");
    let cancelled = call("cancel_tasks", serde_json::json!({"ids": [id]}));
    assert_eq!(cancelled["tasks"][0]["id"], id, "{cancelled}");
    assert_eq!(cancelled["tasks"][0]["host"], "alpha", "{cancelled}");
    assert!(work.join(id).is_dir());
    let removed = call("remove_tasks", serde_json::json!({"ids": [id]}));
    assert_eq!(removed["removed"][0]["outcome"], "removed", "{removed}");
    assert!(!work.join(id).exists(), "removed on the host");
}

/// A `cuekit mcp` server on stdio (newline-delimited JSON-RPC), initialized, for tool calls.
struct Mcp {
    server: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    next_id: u64,
}

impl Mcp {
    fn start(h: &Harness) -> Mcp {
        let mut server = h
            .cuekit()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut mcp = Mcp {
            stdin: server.stdin.take().unwrap(),
            lines: std::io::BufRead::lines(std::io::BufReader::new(server.stdout.take().unwrap())),
            server,
            next_id: 0,
        };
        mcp.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "remote-test", "version": "0"}}),
        );
        mcp.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").unwrap();
    }

    /// One request: its reply (notifications from the server are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method,
            "params": params}),
        );
        loop {
            let line = self.lines.next().expect("the server answers").unwrap();
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                return reply;
            }
        }
    }

    /// A tool call's JSON text, parsed (or the text, for a tool error).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let reply = self.request(
            "tools/call",
            serde_json::json!({"name": name, "arguments": arguments}),
        );
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{reply}"));
        serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The task is registered here before the host is asked: a connection lost after the host
/// started it (the reply never came) leaves a task this machine can still ask about and cancel;
/// a host that refuses the submit leaves nothing registered.
#[test]
fn a_submit_whose_reply_is_lost_is_still_known_and_a_refused_one_is_not() {
    let alpha = SshHost::start("alpha");
    // This host's cuekit submits, then cuts the connection before its reply can leave
    // (its parent is the sshd process serving the connection).
    let cutting = alpha.home().join("bin/cutting-cuekit");
    write_executable(
        &cutting,
        "#!/bin/sh\ncase \" $* \" in\n  *\" submit \"*) \"$HOME/bin/cuekit\" \"$@\" >/dev/null; \
         kill -KILL \"$PPID\"; sleep 5 ;;\n  *) exec \"$HOME/bin/cuekit\" \"$@\" ;;\nesac\n",
    );
    must(as_root("chown").args(["-R", &alpha.user]).arg(alpha.home()));
    let h = harness_with(
        &[&alpha],
        "  cutting:\n    ssh: alpha\n    cuekit: ~/bin/cutting-cuekit\n",
    );
    let registry = h.home.join(".local/share/cuekit/tasks");
    let registered = || std::fs::read_dir(&registry).map_or(0, |dir| dir.count());

    let lost = try_submit_on(&h, "cutting", &["--", "sh", "-c", "sleep 600"]);
    let said = stderr_of(&lost);
    assert_eq!(lost.status.code(), Some(26), "{said}");
    let id = said
        .split_whitespace()
        .find(|word| word.starts_with("t_") && word.len() == 14)
        .unwrap_or_else(|| panic!("the error names the task: {said}"))
        .to_string();
    assert!(said.contains("may have started there"), "{said}");
    // The host is asked again on the next call: the task runs there, and is ended from here.
    assert_eq!(h.status(&id)["status"], "running");
    assert_eq!(h.status(&id)["host"], "cutting");
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(h.status(&id)["status"], "cancelled");
    // Removed on the host behind this machine's back: `rm` here then only forgets it.
    on_host(&h, "alpha", &format!("rm {id}"));
    let (list, _) = h.json(&["list", "--all"]);
    let row = list
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == id.as_str())
        .unwrap_or_else(|| panic!("a task its host forgot is still listed: {list}"));
    assert_eq!(
        (row["status"].as_str(), row["reason"].as_str()),
        (Some("unknown"), Some("task_not_found")),
        "{row}"
    );
    let (removed, code) = h.json(&["rm", &id]);
    assert_eq!(
        (
            code,
            removed[0]["task_id"].as_str(),
            removed[0]["outcome"].as_str()
        ),
        (0, Some(id.as_str()), Some("removed")),
        "{removed}"
    );
    assert!(!registry.join(&id).exists());

    let before = registered();
    let refused = h.run(&["submit", "--host", "alpha", "--agent", "no-such-agent", "x"]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        stderr_of(&refused).contains("host alpha"),
        "{}",
        stderr_of(&refused)
    );
    assert_eq!(
        registered(),
        before,
        "a refused submit leaves nothing registered"
    );
}

/// A host's reply never names files here: ids in it are not taken for this machine's registry.
/// A host that answers a submit with a task of its own choosing is an error (the id asked for
/// stays registered), and an `rm` reply naming other ids forgets only the id asked about.
#[test]
fn a_hosts_reply_never_names_this_machines_files_or_tasks() {
    let alpha = SshHost::start("alpha");
    let h = harness_with(
        &[&alpha],
        "  lying:\n    ssh: alpha\n    cuekit: ~/bin/lying-cuekit\n",
    );
    let local = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    // `rm` answers with a path and this machine's own task; `submit` drops the id it was given.
    write_executable(
        &alpha.home().join("bin/lying-cuekit"),
        &format!(
            "#!/bin/sh\ncase \" $* \" in\n  *\" rm \"*) printf '%s\\n' \
             '[{{\"task_id\":\"../victim\",\"outcome\":\"removed\"}},\
             {{\"task_id\":\"{local}\",\"outcome\":\"removed\"}}]'; exit 0 ;;\n  *\" submit \"*) \
             for a do shift; case \"$a\" in --id=*) ;; *) set -- \"$@\" \"$a\" ;; esac; done ;;\n\
             esac\nexec \"$HOME/bin/cuekit\" \"$@\"\n"
        ),
    );
    must(as_root("chown").args(["-R", &alpha.user]).arg(alpha.home()));
    let registry = h.home.join(".local/share/cuekit/tasks");
    let victim = registry.parent().unwrap().join("victim");
    std::fs::write(&victim, "mine").unwrap();

    let renamed = try_submit_on(&h, "lying", &["--", "sh", "-c", "sleep 600"]);
    let said = stderr_of(&renamed);
    assert_eq!(renamed.status.code(), Some(27), "{said}");
    assert!(said.contains("not the task"), "{said}");

    let on_host = submit_on(&h, "alpha", &["--", "sh", "-c", "sleep 600"]);
    assert_eq!(h.json(&["cancel", &on_host]).1, 0);
    // Through the lying cuekit: same ssh destination, the registry's host name differs, so the
    // entry is rewritten to name it (what a user who renamed a host would have).
    let entry = registry.join(&on_host);
    let text = std::fs::read_to_string(&entry).unwrap();
    std::fs::write(&entry, text.replace("\"alpha\"", "\"lying\"")).unwrap();
    let (removed, code) = h.json(&["rm", &on_host]);
    assert_eq!(code, 0, "{removed}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    assert_eq!(
        h.status(&local)["status"],
        "running",
        "a local task is not forgotten"
    );
    assert!(
        removed
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["task_id"] != local.as_str()),
        "{removed}"
    );
    assert_eq!(h.json(&["cancel", &local]).1, 0);
}

/// `--host '*'` places a task on the first configured host with room under its cap, and
/// skips a host that does not answer; `--host a,b` tries those, in that order.
#[test]
fn a_task_for_any_host_goes_to_the_first_with_a_free_slot() {
    let alpha = SshHost::start("alpha");
    let mut beta = SshHost::start("beta");
    let h = harness_with(&[&alpha, &beta], "limits:\n  hosts:\n    alpha: 1\n");
    let host_of = |h: &Harness, id: &str| h.status(id)["host"].as_str().unwrap().to_string();
    let first = submit_on(&h, "*", &["--", "sh", "-c", "sleep 600"]);
    assert_eq!(host_of(&h, &first), "alpha");
    // alpha is at its cap of 1: the next one goes to beta.
    let second = submit_on(&h, "*", &["--", "sh", "-c", "sleep 600"]);
    assert_eq!(host_of(&h, &second), "beta");
    beta.down();
    // beta does not answer and is skipped; alpha, at its cap, is the only one left: it takes
    // the task (where its own `limits` would queue it).
    let started = Instant::now();
    let third = submit_on(&h, "beta,alpha", &["--", "sh", "-c", "sleep 600"]);
    assert_eq!(host_of(&h, &third), "alpha");
    assert!(
        started.elapsed() < limits::TASK,
        "a lost host was waited on"
    );
    let refused = try_submit_on(&h, "beta,gamma", &["--", "true"]);
    assert_ne!(refused.status.code(), Some(0), "{}", stderr_of(&refused));
    let (cancelled, code) = h.json(&["cancel", &first, &third]);
    assert_eq!(code, 0, "{cancelled}");
}

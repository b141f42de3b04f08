//! What a sandboxed child can reach beyond its work dir, as a blind re-audit of the sandbox
//! found it (issue 30): cuekit's tmux socket before its server exists, cuekit's data and the
//! user's runtime dir where the XDG variables put them outside HOME, the submitter's secrets
//! in variables, the machine's abstract unix sockets, other projects' agent state, and the
//! `.git` of repositories below an in-place work dir. Each child is a `command` task run in
//! bubblewrap on real tmux; what it reached it writes into its work dir.

use crate::harness::limits;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};

use crate::harness::{Harness, assert_refused, write_executable};

/// A folder outside HOME, /tmp and /run (the roots every sandbox hides): where a user's
/// `XDG_DATA_HOME` or `CUEKIT_TMUX_SOCKET` may point.
fn outside() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Ends the tmux server of a socket path the harness does not know of.
struct Server(PathBuf);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.0)
            .arg("kill-server")
            .output();
    }
}

fn seen(h: &Harness, name: &str) -> String {
    std::fs::read_to_string(h.project.join(name)).unwrap_or_default()
}

/// The first sandboxed task on a new tmux server, whose socket lies outside the hidden roots,
/// cannot drive that server (a `run-shell` would run as the user, outside bubblewrap); nor
/// read cuekit's data dir or the user's runtime dir when XDG puts them there too.
#[test]
fn cuekits_socket_data_and_runtime_dirs_are_out_of_reach_wherever_they_lie() {
    // Kept after the test: every sandbox another test starts meanwhile covers this test's
    // listening tmux socket, and bubblewrap fails making a cover whose file was removed
    // between the plan and the start (seen once in a full run). tmux leaves its socket file
    // when its server ends, so a kept folder keeps it; `target/tmp` holds it until `cargo clean`.
    let out = outside().keep();
    // The socket's folder is not there yet either: the first submit makes it.
    let (socket, data, runtime, config) = (
        out.join("fresh/tmux.sock"),
        out.join("data"),
        out.join("run"),
        out.join("config"),
    );
    std::fs::create_dir_all(runtime.join("cuekit")).unwrap();
    std::fs::write(runtime.join("secret"), "RUNTIME-SECRET").unwrap();
    // Another program's login in the user's settings folder (gh's token).
    std::fs::create_dir_all(config.join("gh")).unwrap();
    std::fs::write(config.join("gh/hosts.yml"), "oauth_token: GH-TOKEN").unwrap();
    let h = Harness::new()
        .env("CUEKIT_TMUX_SOCKET", socket.to_str().unwrap())
        .env("XDG_DATA_HOME", data.to_str().unwrap())
        .env("XDG_RUNTIME_DIR", runtime.to_str().unwrap())
        .env("XDG_CONFIG_HOME", config.to_str().unwrap());
    let _server = Server(socket.clone());
    let escaped = out.join("escaped");
    let script = format!(
        "tmux -S '{}' run-shell 'touch {}'; ls '{}/cuekit' > seen-data 2>&1; \
         cat '{}/secret' '{}/gh/hosts.yml' > seen-private 2>&1; echo done",
        socket.display(),
        escaped.display(),
        data.display(),
        runtime.display(),
        config.display()
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(
        !escaped.exists(),
        "the child ran a command through cuekit's tmux server"
    );
    // The registry (`tasks/`) and the task repositories are cuekit's data: not in sight.
    let data_seen = seen(&h, "seen-data");
    assert!(!data_seen.contains("tasks"), "{data_seen}");
    let private = seen(&h, "seen-private");
    assert!(
        !private.contains("RUNTIME-SECRET") && !private.contains("GH-TOKEN"),
        "{private}"
    );
    assert!(
        data.join("cuekit/tasks").is_dir(),
        "the data dir was the one used"
    );
}

/// A `PATH` folder that holds cuekit's data dir (`~/.local`) does not show it again.
#[test]
fn a_path_folder_above_cuekits_data_does_not_bring_it_back() {
    let h = Harness::new();
    let local = h.home.join(".local");
    std::fs::create_dir_all(&local).unwrap();
    let path = format!(
        "{}:{}:{}",
        h.bin.display(),
        local.display(),
        std::env::var("PATH").unwrap()
    );
    let h = h.env("PATH", &path);
    let script = format!("ls '{}/share/cuekit' > seen-data 2>&1", local.display());
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ended(&[&id], &limits::arg(limits::AGENT));
    assert!(h.data_dir().join("tasks").is_dir());
    let data_seen = seen(&h, "seen-data");
    assert!(!data_seen.contains("tasks"), "{data_seen}");
}

/// An in-place sandboxed child sees its own task folder, never another task's: a task's
/// `env.sh` (its submitter's whole environment) lies in `.cuekit/tasks/<id>/` until its pane
/// starts.
#[test]
fn an_in_place_child_reads_no_other_tasks_records() {
    let h = Harness::new();
    h.project_for_sandbox();
    let sibling = h.project.join(".cuekit/tasks/t_00000000000a");
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(
        sibling.join("env.sh"),
        "export SECRET_API_KEY='SIBLING-SECRET'\n",
    )
    .unwrap();
    let script = "cat .cuekit/tasks/t_00000000000a/env.sh > seen-sibling 2>&1; \
                  ls .cuekit/tasks/$CUEKIT_TASK_ID > seen-own 2>&1";
    let id = h.submit_sh(script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(!seen(&h, "seen-sibling").contains("SIBLING-SECRET"));
    let own = seen(&h, "seen-own");
    assert!(own.contains("prompt"), "{own}");
}

/// The submitter's variables whose names say secret stay out of a sandboxed task; the rest,
/// and what the user's own file gives the agent, come in.
#[test]
fn the_submitters_secrets_in_variables_stay_out_of_the_sandbox() {
    let h = Harness::new()
        .env("AWS_SECRET_ACCESS_KEY", "LEAKED-AWS")
        .env("GITHUB_TOKEN", "LEAKED-GH")
        .env("GITHUB_PAT", "LEAKED-PAT")
        .env("MYSQL_PWD", "LEAKED-PWD")
        .env("DATABASE_URL", "postgres://app:LEAKED-URL@db/app")
        .env("GIT_AUTHOR_NAME", "Kept Author")
        .env("CUEKIT_TEST_MARKER", "KEPT");
    h.project_for_sandbox();
    let id = h.submit_sh("env > seen-env", &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let env = seen(&h, "seen-env");
    assert!(env.contains("CUEKIT_TEST_MARKER=KEPT"), "{env}");
    assert!(env.contains("GIT_AUTHOR_NAME=Kept Author"), "{env}");
    assert!(!env.contains("LEAKED"), "{env}");
    // Without the sandbox the task has the submitter's whole environment, as always.
    let open = h.submit_sh("env > seen-open", &["--mode", "batch"]);
    h.wait_ok(&[&open], &limits::arg(limits::AGENT));
    assert!(seen(&h, "seen-open").contains("LEAKED-GH"));
}

/// A sandbox that keeps the network cannot connect to an abstract unix socket of the machine
/// (an X server's, a session bus's): they belong to the network namespace it shares.
#[test]
fn a_sandbox_with_the_network_cannot_reach_the_machines_abstract_sockets() {
    let name = format!("cuekit-test-abstract-{}", std::process::id());
    let listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let h = Harness::new();
    h.project_for_sandbox();
    let probe = format!(
        "/usr/bin/python3 -c 'import socket\ns = socket.socket(socket.AF_UNIX)\n\
         try:\n    s.connect(\"\\0{name}\"); print(\"CONNECTED\")\n\
         except OSError as e: print(\"REFUSED\", e)' > seen-socket 2>&1"
    );
    let id = h.submit_sh(&probe, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let said = seen(&h, "seen-socket");
    assert!(said.contains("REFUSED"), "{said}");
    // The same probe outside the sandbox reaches it: the listener was there.
    let open = h.submit_sh(
        &probe.replace("seen-socket", "seen-open"),
        &["--mode", "batch"],
    );
    h.wait_ok(&[&open], &limits::arg(limits::AGENT));
    assert!(seen(&h, "seen-open").contains("CONNECTED"));
    drop(listener);
}

/// A sandboxed agent's state (sessions, memory) is the task's own: what it writes there never
/// reaches the state the user's own runs of that agent read, in any project.
#[test]
fn a_sandboxed_agents_state_is_the_tasks_own() {
    let h = Harness::new().env("GEMINI_API_KEY", "offline-test-key");
    h.project_for_sandbox();
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\nmkdir -p \"$HOME/.gemini/tmp/other/memory\" && \
         echo INJECTED > \"$HOME/.gemini/tmp/other/memory/MEMORY.md\"\n\
         cat \"$HOME\"/.gemini/antigravity-cli/conversations/* > seen-conversations 2>&1\n\
         ls \"$HOME\"/.gemini/antigravity-cli > seen-antigravity 2>&1\n\
         echo '{\"type\":\"result\",\"status\":\"success\",\"stats\":{}}'\n",
    );
    std::fs::create_dir_all(h.home.join(".gemini/tmp")).unwrap();
    // Another agent's state in the same settings folder: Antigravity's conversations.
    let conversations = h.home.join(".gemini/antigravity-cli/conversations");
    std::fs::create_dir_all(&conversations).unwrap();
    std::fs::write(conversations.join("c.json"), "OTHER-CONVERSATION").unwrap();
    std::fs::write(h.home.join(".gemini/antigravity-cli/settings.json"), "{}").unwrap();
    let id = h.submit(&["--agent", "gemini", "--mode", "batch", "--sandbox", "do it"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(
        !h.home.join(".gemini/tmp/other/memory/MEMORY.md").exists(),
        "the child wrote into the user's own Gemini memory"
    );
    assert!(!seen(&h, "seen-conversations").contains("OTHER-CONVERSATION"));
    // Nor the rest of that folder: it is Antigravity's, none of a Gemini task's (issue 48, F14).
    assert!(!seen(&h, "seen-antigravity").contains("settings.json"));
    let own = h.data_dir().join("state").join(&id);
    let kept = walk(&own);
    assert!(
        kept.iter()
            .any(|path| path.ends_with("other/memory/MEMORY.md")),
        "{kept:?}"
    );
    h.ok(&["rm", &id]);
    assert!(!own.exists(), "rm leaves the task's state behind");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// An in-place sandbox over a folder that holds a repository is refused before anything
/// starts: the child could rewrite that repository's `.git` (a hook, an fsmonitor) for the
/// user's next `git status` there.
#[test]
fn an_in_place_sandbox_over_a_folder_of_repositories_is_refused() {
    let h = Harness::new();
    let clone = h.project.join("clones/app");
    std::fs::create_dir_all(&clone).unwrap();
    crate::harness::git::git(&clone, &["init", "-q"]);
    let mut args = vec!["submit", "--sandbox"];
    args.extend(crate::harness::sh_task(
        "git config core.fsmonitor 'touch pwned'",
        &[],
    ));
    let (answer, code) = h.json(&args);
    assert_refused(&answer, code, "sandbox_unavailable", 32);
    let said = answer["error"]["message"].as_str().unwrap();
    assert!(said.contains("clones/app"), "{answer}");
    // A bare repository is one too, whatever its name.
    std::fs::remove_dir_all(h.project.join("clones")).unwrap();
    let mirror = h.project.join("mirrors/app.git");
    std::fs::create_dir_all(&mirror).unwrap();
    crate::harness::git::git(&mirror, &["init", "-q", "--bare"]);
    let (answer, code) = h.json(&args);
    assert_refused(&answer, code, "sandbox_unavailable", 32);
    assert!(!h.project.join(".cuekit/tasks").is_dir() || list_is_empty(&h));
}

fn list_is_empty(h: &Harness) -> bool {
    let (list, _) = h.json(&["list"]);
    list["tasks"].as_array().is_none_or(Vec::is_empty)
}

/// Another project's task records, prompts and transcripts are out of a sandboxed child's
/// reach wherever that project lies: one outside HOME and /tmp (as under `/srv` or `/opt`) is
/// under no root a sandbox hides by itself; the registry knows it.
#[test]
fn a_sandboxed_child_reads_no_other_projects_records_outside_home() {
    let out = outside();
    let other = out.path().join("srv-project");
    std::fs::create_dir_all(&other).unwrap();
    let h = Harness::new();
    let theirs = h.submit(&crate::harness::sh_task(
        "echo OTHER-PROJECT-TRANSCRIPT",
        &["--cwd", other.to_str().unwrap(), "--mode", "batch"],
    ));
    h.wait_ok(&[&theirs], &limits::arg(limits::AGENT));
    let records = other.canonicalize().unwrap().join(".cuekit/tasks");
    let their_dir = records.join(&theirs);
    let transcript = std::fs::read_to_string(their_dir.join("transcript.txt")).unwrap();
    assert!(
        transcript.contains("OTHER-PROJECT-TRANSCRIPT"),
        "{transcript}"
    );
    let script = format!(
        "cat '{dir}/transcript.txt' '{dir}/prompt.txt' '{dir}/task.json' > seen-other 2>&1; \
         ls '{records}' > seen-list 2>&1; echo done",
        dir = their_dir.display(),
        records = records.display()
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let read = seen(&h, "seen-other");
    assert!(!read.contains("OTHER-PROJECT"), "{read}");
    assert!(!read.contains("created_at"), "{read}");
    let listed = seen(&h, "seen-list");
    assert!(!listed.contains(&theirs), "{listed}");
}

/// The submitter's environment for a pane is never written into a project's `.cuekit/`, where
/// a child could read it before the pane deletes it: at the moment tmux is asked for the
/// pane, the task folder holds no `env.sh`, and the pane still gets the variable.
#[test]
fn no_submitters_environment_waits_in_a_task_folder() {
    let h = Harness::new();
    let (shim_dir, calls) = h.tmux_shim(&format!(
        "$(cat '{}'/.cuekit/tasks/*/env.sh 2>/dev/null)",
        h.project.display()
    ));
    let path = format!(
        "{}:{}:{}",
        shim_dir.display(),
        h.bin.display(),
        std::env::var("PATH").unwrap()
    );
    let h = h
        .env("PATH", &path)
        .env("SIBLING_SECRET_TOKEN", "WAITING-SECRET");
    let id = h.submit_sh("echo \"got=$SIBLING_SECRET_TOKEN\"", &["--mode", "batch"]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(h.transcript(&id).contains("got=WAITING-SECRET"));
    let logged = std::fs::read_to_string(&calls).unwrap();
    assert!(!logged.is_empty(), "the shim was not used");
    assert!(!logged.contains("WAITING-SECRET"), "{logged}");
    assert!(!h.data_dir().join(format!("tasks/{id}.env.sh")).exists());
}

/// A child that floods its report drop delays no timeout: each look records a bounded batch of
/// its reports, so the first look after its 3 s `--timeout` is due records the ending, having
/// taken a batch at most (every report taken first, the ending would wait for all of them,
/// thousands recorded past the timeout). The flood is written from here, as the child would
/// write it, to have it all there well within the 3 s on a loaded machine.
#[test]
fn a_flood_of_dropped_reports_delays_no_timeout() {
    const FLOOD: usize = 5000;
    // A batch each for the monitor, the `wait` and the `status` that may look at once, and
    // one more.
    const PAST_DUE: usize = 4 * 16;
    let h = Harness::new();
    let id = h.submit_sh(
        "sleep 600",
        &["--sandbox", "--mode", "batch", "--timeout", "3s"],
    );
    let drop = h.data_dir().join("drop").join(&id);
    for i in 0..FLOOD {
        std::fs::write(
            drop.join(format!("{i:020}-1.json")),
            format!("{{\"kind\":\"progress\",\"message\":\"flood {i}\"}}"),
        )
        .unwrap();
    }
    let ended = h.wait_ended(&[&id], &limits::arg(limits::LONG));
    let status = h.status(&id);
    assert_eq!(status["status"], "timed_out", "{ended}\n{status}");
    let started = status["started_at"]
        .as_str()
        .or(status["created_at"].as_str())
        .unwrap();
    let due = humantime::parse_rfc3339(started).unwrap() + std::time::Duration::from_secs(3);
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    let reports: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["seq"].is_u64() && event["at"].is_string())
        .collect();
    let past_due = reports
        .iter()
        .filter(|report| humantime::parse_rfc3339(report["at"].as_str().unwrap()).unwrap() > due)
        .count();
    assert!(
        !reports.is_empty() && past_due <= PAST_DUE,
        "{past_due} of {} reports recorded were recorded after the timeout was due",
        reports.len()
    );
}

//! cuekit tried as a hostile repository and a faulty world would try it: crafted records, a
//! submit killed at any instant, a tmux server killed under live children, a broken socket,
//! corrupt files, huge prompts, odd bytes. Real tmux on a private socket, real /bin/sh.

use crate::harness::limits;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::{HANG_GUARD, Harness, poll, processes_of};
use serde_json::{Value, json};

/// A child that ignores TERM and HUP and forks a grandchild that does the same.
const STUBBORN: &str = "trap '' TERM HUP; (trap '' TERM HUP; sleep 600) & sleep 600; wait";

fn registry(h: &Harness) -> PathBuf {
    h.home.join(".local/share/cuekit")
}

/// Every file under `dir` whose name ends with `suffix`.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_ending(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    found
}

fn sessions(h: &Harness) -> Vec<String> {
    String::from_utf8_lossy(&h.tmux(&["list-sessions", "-F", "#{session_name}"]).stdout)
        .lines()
        .map(String::from)
        .collect()
}

/// A tmux server of somebody else's, with one session running `sleep`.
struct Victim {
    socket: PathBuf,
}

impl Victim {
    fn start(h: &Harness) -> Victim {
        let socket = h.root().join("victim.sock");
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["new-session", "-d", "-s", "victim", "sleep 600"])
            .status()
            .unwrap();
        assert!(status.success());
        Victim { socket }
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    fn alive(&self) -> bool {
        self.tmux(&["has-session", "-t", "=victim"])
            .status
            .success()
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "=victim:"]).stdout)
            .into_owned()
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// A task record as a cloned repository could carry it: running, long past a 1 s timeout, and
/// naming another server's session.
fn crafted_record(id: &str, task_dir: &Path, victim: &Victim, session: &str) -> Value {
    json!({
        "id": id,
        "spec": {"agent_kind": "gemini", "objective": "crafted"},
        "mode": "interactive",
        "cwd": task_dir.parent().unwrap(),
        "task_dir": task_dir,
        "launch_command": "gemini",
        "status": "running",
        "warnings": [],
        "tmux": {"socket": victim.socket, "session": session, "height": 50},
        "created_at": "2020-01-01T00:00:00Z",
        "timeout_secs": 1
    })
}

#[test]
fn a_record_the_registry_does_not_vouch_for_is_shown_untrusted_and_never_acted_on() {
    let h = Harness::new().with_fake_gemini();
    let victim = Victim::start(&h);

    // 1. A record nobody registered, planted in the project.
    let planted = "t_aaaaaaaaaaaa";
    let planted_dir = h.task_dir(planted);
    std::fs::create_dir_all(&planted_dir).unwrap();
    std::fs::write(
        planted_dir.join("task.json"),
        crafted_record(planted, &planted_dir, &victim, "victim").to_string(),
    )
    .unwrap();

    // 2. A real task whose record a child rewrote to point at the victim.
    let real = h.submit_sh("sleep 600", &[]);
    let record_path = h.task_dir(&real).join("task.json");
    let mut record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    record["tmux"]["socket"] = json!(victim.socket);
    record["tmux"]["session"] = json!("victim");
    record["timeout_secs"] = json!(1);
    record["created_at"] = json!("2020-01-01T00:00:00Z");
    std::fs::write(&record_path, record.to_string()).unwrap();

    // Listing, status and waiting show them, and kill nothing on "timeout".
    for args in [&["list"][..], &["list", "--all"][..]] {
        let (rows, code) = h.json(args);
        assert_eq!(code, 0, "{rows}");
        for id in [planted, real.as_str()] {
            let row = rows.as_array().unwrap().iter().find(|r| r["id"] == id);
            if args.len() == 2 && id == planted {
                // Not in the registry: `--all` lists registered tasks only.
                assert!(row.is_none(), "{rows}");
                continue;
            }
            let row = row.unwrap_or_else(|| panic!("{id} missing: {rows}"));
            assert_eq!(row["status"], "untrusted", "{row}");
            assert!(
                row["hint"]
                    .as_str()
                    .unwrap()
                    .contains("acts only on tasks it started")
            );
            assert!(row.get("attach_hint").is_none(), "{row}");
        }
    }
    for id in [planted, real.as_str()] {
        let (view, code) = h.json(&["status", id]);
        assert_eq!(
            (code, view["status"].as_str()),
            (0, Some("untrusted")),
            "{view}"
        );
        for args in [
            vec!["cancel", id],
            vec!["steer", id, "rm -rf ~"],
            vec!["wait", id, "--timeout", "1s"],
            vec!["attach", id],
            vec!["logs", id],
            vec!["result", id],
        ] {
            let (error, code) = h.json(&args);
            assert_eq!(code, 13, "{args:?}: {error}");
            assert_eq!(error["error"]["code"], "untrusted");
        }
    }
    assert!(victim.alive(), "the victim's session was killed");
    assert!(
        !victim.screen().contains("rm -rf"),
        "keys reached the victim"
    );
    // The real task itself is left alone too: still running in its own session.
    assert!(sessions(&h).contains(&format!("cuekit-task-{real}")));
}

#[test]
fn a_submit_killed_at_any_instant_leaves_no_agent_without_a_record() {
    let h = Harness::new();
    // A fixed pseudo-random walk over 0–50 ms, so a failure can be replayed.
    let mut seed: u64 = 0x5eed_cafe;
    let mut delays = Vec::new();
    for _ in 0..40 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        delays.push((seed >> 33) % 51);
    }
    for delay in &delays {
        let mut child = h
            .cuekit()
            .args(["submit", "--agent", "command", "--", "sleep", "600"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(*delay));
        let _ = child.kill();
        let _ = child.wait();
    }
    // A tmux client orphaned by the kill finishes within milliseconds.
    h.tmux_clients_gone();
    let (_, code) = h.json(&["list"]);
    assert_eq!(code, 0);

    let registered = |id: &str| registry(&h).join("tasks").join(id).is_file();
    let unowned: Vec<String> = sessions(&h)
        .into_iter()
        .filter(|s| !registered(s.trim_start_matches("cuekit-task-")))
        .collect();
    assert!(unowned.is_empty(), "sessions without a record: {unowned:?}");
    // No agent runs for a task that is not recorded.
    for entry in std::fs::read_dir(h.project.join(".cuekit/tasks"))
        .unwrap()
        .flatten()
    {
        let id = entry.file_name().to_string_lossy().into_owned();
        if !registered(&id) {
            assert!(processes_of(&id).is_empty(), "{id} runs without a record");
        }
    }
    let leftovers: Vec<PathBuf> = [h.project.join(".cuekit"), registry(&h)]
        .iter()
        .flat_map(|dir| {
            let mut found = files_ending(dir, "env.sh");
            found.extend(files_ending(dir, ".tmp"));
            found
        })
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
    let pending = std::fs::read_dir(registry(&h).join("pending"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(pending, 0);
    // Every task that is recorded really runs.
    let (rows, _) = h.json(&["list"]);
    for row in rows.as_array().unwrap() {
        assert_eq!(row["status"], "running", "{row}");
    }
}

#[test]
fn a_submit_that_cannot_register_starts_nothing() {
    let h = Harness::new();
    std::fs::create_dir_all(registry(&h)).unwrap();
    // Where the registry's pending entries go, a file: every write there fails.
    std::fs::write(registry(&h).join("pending"), "not a directory").unwrap();
    let (error, code) = h.json(&["submit", "--agent", "command", "--", "sleep", "600"]);
    assert_eq!(
        (code, error["error"]["code"].as_str()),
        (11, Some("io")),
        "{error}"
    );
    assert!(sessions(&h).is_empty(), "a session was started");
    let tasks = h.project.join(".cuekit/tasks");
    let left = std::fs::read_dir(&tasks).map(|e| e.count()).unwrap_or(0);
    assert_eq!(left, 0, "a task directory was left behind");
}

#[test]
fn the_socket_is_stored_absolute_so_any_directory_and_environment_reaches_it() {
    let h = Harness::new();
    // A private TMUX_TMPDIR at submit, none later; a relative -S path, read from elsewhere.
    let tmpdir = h.root().join("tmuxdir");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let by_name = h
        .cuekit()
        .env("TMUX_TMPDIR", &tmpdir)
        .env("CUEKIT_TMUX_SOCKET", "named")
        .args([
            "--json", "submit", "--agent", "command", "--", "sleep", "600",
        ])
        .output()
        .unwrap();
    let by_name: Value = serde_json::from_slice(&by_name.stdout).unwrap();
    let relative = h
        .cuekit()
        .env("CUEKIT_TMUX_SOCKET", "./rel.sock")
        .args([
            "--json", "submit", "--agent", "command", "--", "sleep", "600",
        ])
        .output()
        .unwrap();
    let relative: Value = serde_json::from_slice(&relative.stdout).unwrap();
    let elsewhere = h.root().join("tmp");
    for task in [&by_name, &relative] {
        let id = task["id"].as_str().unwrap_or_else(|| panic!("{task}"));
        let status = h
            .cuekit()
            .current_dir(&elsewhere)
            .env_remove("TMUX_TMPDIR")
            .args(["--json", "status", id])
            .output()
            .unwrap();
        let status: Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(status["status"], "running", "{status}");
        let (cancelled, code) = h.json(&["cancel", id]);
        assert_eq!(
            (code, cancelled[0]["status"].as_str()),
            (0, Some("cancelled"))
        );
    }
    let _ = Command::new("tmux")
        .arg("-S")
        .arg(
            tmpdir
                .join(format!("tmux-{}", unsafe { libc::getuid() }))
                .join("named"),
        )
        .arg("kill-server")
        .output();
    let _ = Command::new("tmux")
        .arg("-S")
        .arg(h.project.join("rel.sock"))
        .arg("kill-server")
        .output();
}

#[test]
fn a_tmux_failure_that_is_not_a_missing_server_is_never_an_ending() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);
    let socket = PathBuf::from(format!(
        "/tmp/tmux-{}/{}",
        unsafe { libc::getuid() },
        h.socket
    ));
    let aside = socket.with_extension("aside");
    // The socket becomes a symlink loop: tmux cannot connect, and says so ("Too many levels of
    // symbolic links"), which says nothing about the pane.
    std::fs::rename(&socket, &aside).unwrap();
    std::os::unix::fs::symlink(&socket, &socket).unwrap();
    let (view, code) = h.json(&["status", &id]);
    let (list, list_code) = h.json(&["list"]);
    std::fs::remove_file(&socket).unwrap();
    std::fs::rename(&aside, &socket).unwrap();
    assert_eq!(code, 0, "{view}");
    assert_eq!(view["status"], "unknown", "{view}");
    assert_eq!(view["reason"], "tmux_unavailable");
    assert_eq!(list_code, 0);
    assert_eq!(list[0]["status"], "unknown", "{list}");
    // Nothing was recorded: with the socket back, the task is running as it always was.
    assert_eq!(h.status(&id)["status"], "running");
}

#[test]
fn cancelling_a_task_that_already_ended_records_its_real_ending() {
    let h = Harness::new();
    let id = h.submit_sh("exit 3", &[]);
    let sentinel = h.task_dir(&id).join("exit-code");
    assert!(poll(limits::SHORT, || sentinel.exists()));
    let (views, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{views}");
    assert_eq!(views[0]["status"], "failed", "{views}");
    assert_eq!(views[0]["exit_code"], 3);
}

#[test]
fn cancel_ends_processes_that_outlived_their_tmux_server() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &[]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let (_, pane_pid) = h.pane(&id);
    h.tmux(&["kill-server"]);
    // The pane's shell dies with the server; the stubborn child and grandchild do not.
    assert!(poll(Duration::from_secs(5), || !Path::new(&format!(
        "/proc/{pane_pid}"
    ))
    .exists()));
    let survivors = processes_of(&id);
    assert!(survivors.len() >= 2, "{survivors:?}");

    let view = h.assert_status(&id, "failed");
    assert_eq!(view["reason"], "pane_disappeared");
    let mut shown: Vec<u64> = view["survivors"]
        .as_array()
        .unwrap_or_else(|| panic!("{view}"))
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    shown.sort();
    let mut expected: Vec<u64> = survivors.iter().map(|&p| p as u64).collect();
    expected.sort();
    assert_eq!(shown, expected);

    let (_, code) = h.json(&["cancel", &id, "--grace", "1s"]);
    assert_eq!(code, 0);
    assert_eq!(processes_of(&id), Vec::<u32>::new());
    assert_eq!(h.status(&id)["survivors"], json!([]));
}

#[test]
fn a_timeout_ends_survivors_of_a_killed_server_with_nobody_waiting() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &["--timeout", "3s"]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    h.tmux(&["kill-server"]);
    // Nobody calls cuekit: the timeout alone must end what is left.
    assert!(
        poll(limits::TASK, || processes_of(&id).is_empty()),
        "survivors: {:?}",
        processes_of(&id)
    );
}

#[test]
fn a_timeout_holds_when_the_task_directory_was_deleted() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &["--timeout", "3s"]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    // What `git clean -fdx` run by the agent does to cuekit's files (again if the monitor
    // wrote into the directory meanwhile).
    let dir = h.task_dir(&id);
    assert!(poll(Duration::from_secs(5), || {
        let _ = std::fs::remove_dir_all(&dir);
        !dir.exists()
    }));
    let (view, code) = h.json(&["status", &id]);
    assert_eq!(
        (code, view["status"].as_str()),
        (0, Some("unknown")),
        "{view}"
    );
    assert_eq!(view["reason"], "store_corrupt");
    assert!(
        poll(limits::TASK, || processes_of(&id).is_empty()),
        "survivors: {:?}",
        processes_of(&id)
    );
    assert!(poll(limits::SHORT, || !sessions(&h)
        .contains(&format!("cuekit-task-{id}"))));
}

#[test]
fn cancel_ends_a_task_whose_directory_was_deleted() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &[]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let dir = h.task_dir(&id);
    assert!(poll(Duration::from_secs(5), || {
        let _ = std::fs::remove_dir_all(&dir);
        !dir.exists()
    }));
    let (views, code) = h.json(&["cancel", &id, "--grace", "1s"]);
    assert_eq!(code, 0, "{views}");
    assert_eq!(views[0]["survivors"], json!([]));
    assert_eq!(processes_of(&id), Vec::<u32>::new());
    assert!(!sessions(&h).contains(&format!("cuekit-task-{id}")));
}

#[test]
fn a_task_cancels_itself_from_inside_its_own_pane() {
    let h = Harness::new();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cuekit"), h.bin.join("cuekit")).unwrap();
    let out = h.root().join("inside.txt");
    let script = format!(
        "sleep 1; cuekit --json cancel \"$CUEKIT_TASK_ID\" > '{0}' 2>/dev/null; {STUBBORN}",
        out.display()
    );
    let id = h.submit_sh(&script, &[]);
    // It answers in full before the task (its own shell included) is ended: a whole JSON
    // answer. (Its exit status cannot be read from inside: the shell that would print it is
    // part of the task being ended.)
    let answer = || {
        std::fs::read_to_string(&out)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    };
    assert!(poll(limits::TASK, || answer().is_some()));
    let answer = answer().unwrap();
    assert_eq!(answer[0]["id"], id.as_str(), "{answer}");
    assert_eq!(answer[0]["status"], "cancelled", "{answer}");
    assert_eq!(h.status(&id)["status"], "cancelled");
    assert!(
        poll(limits::SHORT, || processes_of(&id).is_empty()),
        "survivors: {:?}",
        processes_of(&id)
    );
    assert!(poll(Duration::from_secs(5), || !sessions(&h)
        .contains(&format!("cuekit-task-{id}"))));
}

#[test]
fn a_task_sees_its_own_submitters_environment_and_no_other() {
    let h = Harness::new();
    let dump = |name: &str| h.root().join(name);
    let first = h
        .cuekit()
        .env("CUEKIT_FIRST_ONLY", "from the first submitter")
        .args(["--json", "submit", "--agent", "command", "--", "sh", "-c"])
        .arg(format!("env > '{}'", dump("first.env").display()))
        .output()
        .unwrap();
    assert!(first.status.success());
    let second = h.submit_sh(&format!("env > '{}'", dump("second.env").display()), &[]);
    h.json(&["wait", &second, "--timeout", "10s"]);
    assert!(poll(Duration::from_secs(5), || dump("first.env").exists()));
    let first = std::fs::read_to_string(dump("first.env")).unwrap();
    let second = std::fs::read_to_string(dump("second.env")).unwrap();
    assert!(first.contains("CUEKIT_FIRST_ONLY=from the first submitter"));
    assert!(!second.contains("CUEKIT_FIRST_ONLY"), "{second}");
    assert!(second.contains(&format!(
        "CUEKIT_TASK_ID={second_id}",
        second_id = second_id(&second)
    )));
}

fn second_id(env: &str) -> String {
    env.lines()
        .find_map(|line| line.strip_prefix("CUEKIT_TASK_ID="))
        .unwrap()
        .to_string()
}

#[test]
fn one_unreadable_record_never_hides_the_others() {
    let h = Harness::new();
    let good = h.submit_sh("exit 0", &[]);
    let bad = h.submit_sh("exit 0", &[]);
    h.json(&["wait", &good, &bad, "--timeout", "10s"]);
    // The monitor may still be writing the endings it judged (a write that read the record
    // before the damage below lands after it, whole: once so under a loaded run); it leaves
    // once both are announced.
    assert!(
        poll(limits::TASK, || h.monitors().is_empty()),
        "the monitor stayed"
    );
    let record = h.task_dir(&bad).join("task.json");
    let text = std::fs::read(&record).unwrap();
    std::fs::write(&record, &text[..text.len() / 2]).unwrap();
    for args in [&["list"][..], &["list", "--all"][..]] {
        let (rows, code) = h.json(args);
        assert_eq!(code, 0, "{rows}");
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 2, "{rows:?}");
        let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
        assert_eq!(row(&good)["status"], "completed");
        assert_eq!(row(&bad)["status"], "unknown");
        assert_eq!(row(&bad)["reason"], "store_corrupt");
        assert!(row(&bad)["hint"].as_str().unwrap().contains("task.json"));
    }
    let text = h.ok(&["list"]);
    assert!(text.contains(&good) && text.contains(&bad), "{text}");
    let (view, code) = h.json(&["status", &bad]);
    assert_eq!((code, view["reason"].as_str()), (0, Some("store_corrupt")));
}

#[test]
fn odd_inputs_are_clear_errors() {
    let h = Harness::new();
    // An argument that is not UTF-8: a usage error, never a panic.
    let output = h
        .cuekit()
        .arg("submit")
        .arg(std::ffi::OsStr::from_bytes(b"fix \xff\xfe"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("UTF-8"));

    let (error, code) = h.json(&["submit", "--agent", "command", "--", ""]);
    assert_eq!(
        (code, error["error"]["code"].as_str()),
        (3, Some("invalid_input"))
    );

    // A prompt too big for one argv word, for an agent that takes it on argv.
    let big = h.root().join("big.txt");
    std::fs::write(&big, "x".repeat(200 * 1024)).unwrap();
    let (error, code) = h.json(&[
        "submit",
        "--mode",
        "interactive",
        "--file",
        big.to_str().unwrap(),
    ]);
    assert_eq!(
        (code, error["error"]["code"].as_str()),
        (3, Some("invalid_input"))
    );
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("128 KiB")
    );
    assert!(
        !h.project.join(".cuekit/tasks").exists(),
        "something was created"
    );
}

#[test]
fn cuekits_files_stay_out_of_the_childs_commits() {
    let h = Harness::new();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&h.project)
            .env("HOME", &h.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    std::fs::write(h.project.join("work.txt"), "work").unwrap();
    // No `cuekit init`: the first submit is enough.
    let id = h.submit_sh("git add -A", &[]);
    h.json(&["wait", &id, "--timeout", "10s"]);
    let staged = git(&["diff", "--cached", "--name-only"]);
    assert_eq!(staged.trim(), "work.txt", "{staged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join(".cuekit/.gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );
}

/// Pane ids are numbered per tmux server, so two servers' first panes are both `%0`: each
/// task is judged by its own screen. A task waiting on a permission dialog on one server and a
/// busy one on another are listed as they are.
#[test]
fn tasks_on_two_servers_with_the_same_pane_id_are_judged_by_their_own_screens() {
    let h = Harness::new();
    let screens = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens");
    crate::harness::write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\nprintf '\\033[H\\033[2J'; cat \"$FIXTURE_SCREEN\"; exec sleep 600\n",
    );
    let other = format!("{}-other", h.socket);
    struct OtherServer(String);
    impl Drop for OtherServer {
        fn drop(&mut self) {
            let panes = Command::new("tmux")
                .args(["-L", &self.0, "list-panes", "-a", "-F", "#{pane_pid}"])
                .output()
                .unwrap();
            for pid in String::from_utf8_lossy(&panes.stdout)
                .lines()
                .filter_map(|pid| pid.parse().ok())
            {
                cuekit::effects::process::terminate_tree(pid, Duration::from_millis(500));
            }
            let _ = Command::new("tmux")
                .args(["-L", &self.0, "kill-server"])
                .output();
        }
    }
    let _other = OtherServer(other.clone());
    let submit = |socket: &str, screen: &str| -> String {
        let output = h
            .cuekit()
            .env("CUEKIT_TMUX_SOCKET", socket)
            .env("FIXTURE_SCREEN", screens.join(screen))
            .args(["--json", "submit", "the task"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let view: Value = serde_json::from_slice(&output.stdout).unwrap();
        view["id"].as_str().unwrap().to_string()
    };
    let waiting = submit(&h.socket, "gemini-permission.txt");
    let busy = submit(&other, "gemini-busy.txt");
    let first_pane = |socket: &str| {
        let out = Command::new("tmux")
            .args(["-L", socket, "list-panes", "-a", "-F", "#{pane_id}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(first_pane(&h.socket), first_pane(&other), "both are %0");
    let status_of = |list: &Value, id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|row| row["id"] == id)
            .map(|row| (row["status"].clone(), row["reason"].clone()))
            .unwrap()
    };
    let mut last = Value::Null;
    let judged = poll(limits::SHORT, || {
        last = h.json(&["list", "--all"]).0;
        status_of(&last, &waiting).0 == "input_required"
            && h.transcript(&busy).contains("esc to cancel")
    });
    assert!(judged, "{last}");
    let list = h.json(&["list", "--all"]).0;
    assert_eq!(
        status_of(&list, &waiting),
        (json!("input_required"), json!("permission_prompt")),
        "{list}"
    );
    assert_eq!(status_of(&list, &busy).0, json!("running"), "{list}");
}

/// A small tmpfs of the test's own, mounted over a directory (root, or `sudo -n`, needed).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let root = unsafe { libc::geteuid() } == 0;
        let mut mount = Command::new(if root { "mount" } else { "sudo" });
        if !root {
            mount.args(["-n", "mount"]);
        }
        let mounted = mount
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=700"),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .unwrap();
        assert!(
            mounted.success(),
            "this test mounts a tmpfs: it needs root or sudo -n"
        );
        Tmpfs(dir.to_path_buf())
    }

    /// Fills it: a file grows until the device has no space left.
    fn fill(&self) -> PathBuf {
        self.fill_with("filler")
    }

    /// Takes whatever room came back since the disk was filled (a page the filesystem let go).
    fn fill_with(&self, name: &str) -> PathBuf {
        use std::io::Write;
        let filler = self.0.join(name);
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = [0u8; 4096];
        while file.write_all(&block).is_ok() {}
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let root = unsafe { libc::geteuid() } == 0;
        let mut umount = Command::new(if root { "umount" } else { "sudo" });
        if !root {
            umount.args(["-n", "umount"]);
        }
        let _ = umount.arg("-l").arg(&self.0).status();
    }
}

/// Waits until each task's pane started: its launch read and removed the env file. Removed
/// after the disk is filled, it would free the room the test means to take away.
fn panes_started(h: &Harness, ids: &[&str]) {
    for id in ids {
        let env = registry(h).join(format!("tasks/{id}.env.sh"));
        h.wait_until(id, "its launch to read env.sh", HANG_GUARD, || {
            !env.exists()
        });
    }
}

/// A full disk loses nothing and hides nothing: a task that ends while its ending cannot be
/// written is listed as judged (its exit code from tmux, with a warning), every other task still
/// shows, a new submit fails cleanly, and once there is room the ending is recorded.
#[test]
fn a_full_disk_hides_no_task_and_loses_no_exit_code() {
    let h = Harness::new();
    let disk = Tmpfs::mount(&h.project.join(".cuekit"), "256k");
    let other = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    // It ends once the disk is full (its gate is outside the small disk).
    let gate = h.root().join("go");
    let id = h.submit_batch_sh(&format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exit 7",
        gate.display()
    ));
    panes_started(&h, &[&other, &id]);
    let filler = disk.fill();
    std::fs::write(&gate, "").unwrap();

    let mut last = Value::Null;
    // A hang guard: the pane's script first waits out its end marker (300 looks), which a full
    // disk never lets into the transcript; on a loaded machine that takes many seconds.
    let listed = poll(HANG_GUARD, || {
        let (list, code) = h.json(&["list"]);
        last = list.clone();
        code == 0
            && list
                .as_array()
                .unwrap()
                .iter()
                .any(|row| row["id"] == id.as_str() && row["status"] == "failed")
    });
    assert!(listed, "{last}");
    let row = |list: &Value, id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|row| row["id"] == id)
            .unwrap()
            .clone()
    };
    let ended = row(&last, &id);
    assert_eq!(ended["exit_code"], 7, "{ended}");
    shown_recorded_or_warned(&ended);
    assert_eq!(row(&last, &other)["status"], "running");
    // Whatever room came back is taken again: the submit below must meet a full disk.
    let topped = disk.fill_with("filler-again");

    let sessions = || {
        h.tmux(&["list-sessions", "-F", "#{session_name}"])
            .stdout
            .len()
    };
    let before = sessions();
    let (refused, code) = h.json(&["submit", "--agent", "command", "--", "true"]);
    assert_eq!((refused["error"]["code"].as_str(), code), (Some("io"), 11));
    assert_eq!(sessions(), before, "a failed submit leaves no session");

    std::fs::remove_file(filler).unwrap();
    std::fs::remove_file(topped).unwrap();
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("failed"), Some(7)),
        "{status}"
    );
    assert_eq!(status["warnings"], json!([]), "{status}");
    // The task's own task.json, on the disk that was full, says it too once the monitor wrote it.
    let mirror = || mirrored(&h, &id);
    assert!(
        poll(HANG_GUARD, || mirror()["status"] == "failed"),
        "{}",
        mirror()
    );
    assert_eq!(mirror()["exit_code"], 7, "{}", mirror());
    assert_eq!(h.json(&["cancel", &other]).1, 0);
}

/// A task's own `task.json`: the mirror of the lifecycle the registry keeps.
fn mirrored(h: &Harness, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(h.task_dir(id).join("task.json")).unwrap()).unwrap()
}

/// An ending judged while the task's disk is full is on record in the registry (its disk has
/// room), or, when that write failed too, shown with a warning that the next look records it.
fn shown_recorded_or_warned(view: &Value) {
    let warnings = view["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings.is_empty()
            || warnings
                .iter()
                .all(|w| w.as_str().is_some_and(|w| w.contains("not recorded yet"))),
        "{view}"
    );
}

/// A task that exits 0 while its disk is full cannot write its exit-code file: the exit status
/// tmux keeps for the dead pane is its ending (completed, never `pane_disappeared`), shown at
/// once and recorded by the monitor as soon as there is room, with nobody asking.
#[test]
fn a_task_that_succeeds_on_a_full_disk_is_recorded_completed() {
    let h = Harness::new();
    let disk = Tmpfs::mount(&h.project.join(".cuekit"), "256k");
    // It ends once the disk is full (its gate is outside the small disk).
    let gate = h.root().join("go");
    let id = h.submit_batch_sh(&format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exit 0",
        gate.display()
    ));
    panes_started(&h, &[&id]);
    let filler = disk.fill();
    std::fs::write(&gate, "").unwrap();
    let mut last = Value::Null;
    // A hang guard: the pane's script first waits out its end marker (300 looks), which a full
    // disk never lets into the transcript; on a loaded machine that takes many seconds.
    let shown = poll(HANG_GUARD, || {
        let (view, code) = h.json(&["status", &id]);
        last = view.clone();
        code == 0 && view["status"] != "running"
    });
    assert!(shown, "{last}");
    assert_eq!(
        (last["status"].as_str(), last["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{last}"
    );
    shown_recorded_or_warned(&last);
    assert!(!h.task_dir(&id).join("exit-code").exists());
    std::fs::remove_file(filler).unwrap();
    // Nobody calls cuekit: the monitor records it, in the registry and in the task's own file.
    let record = || mirrored(&h, &id);
    assert!(
        poll(HANG_GUARD, || record()["status"] != "running"),
        "{}",
        record()
    );
    let record = record();
    assert_eq!(
        (record["status"].as_str(), record["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{record}"
    );
    let view = h.assert_status(&id, "completed");
    assert_eq!(view["warnings"], json!([]), "{view}");
}

/// A tmux server whose socket file a /tmp cleaner deleted: it still runs, its panes too, but no
/// client reaches it. Ended when dropped, with the task's processes (which ignore its hang-up).
struct Unreachable {
    server: u32,
    task: String,
}

impl Drop for Unreachable {
    fn drop(&mut self) {
        unsafe { libc::kill(self.server as i32, libc::SIGTERM) };
        cuekit::effects::process::terminate(
            cuekit::effects::process::task_processes(&self.task, None),
            Duration::from_millis(500),
        );
    }
}

/// tmux says "no server" when its socket file is gone, though the server and the task's pane
/// still run: cuekit checks the recorded pane process before it believes it, and records
/// nothing (status `unknown`, `tmux_socket_missing`), also when a new server took the path.
#[test]
fn a_deleted_tmux_socket_is_never_taken_for_an_ending() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &[]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let server: u32 = String::from_utf8_lossy(&h.tmux(&["display-message", "-p", "#{pid}"]).stdout)
        .trim()
        .parse()
        .unwrap();
    let _server = Unreachable {
        server,
        task: id.clone(),
    };
    let socket = PathBuf::from(format!(
        "/tmp/tmux-{}/{}",
        unsafe { libc::getuid() },
        h.socket
    ));
    std::fs::remove_file(&socket).unwrap();
    let unknown = |view: &Value| {
        assert_eq!(view["status"], "unknown", "{view}");
        assert_eq!(view["reason"], "tmux_socket_missing", "{view}");
        assert!(
            view["hint"].as_str().unwrap().contains("kill -USR1"),
            "{view}"
        );
    };
    unknown(&h.status(&id));
    let (list, code) = h.json(&["list"]);
    assert_eq!(code, 0, "{list}");
    unknown(&list[0]);
    // Three of the monitor's ticks (or its end): it records nothing either.
    h.monitor_ticks_pass(3);
    let record: Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(&id).join("task.json")).unwrap()).unwrap();
    assert_eq!(record["status"], "running", "{record}");
    // A new submit starts a new server on the same path; the old task is still not gone.
    let other = h.submit_sh("sleep 600", &[]);
    unknown(&h.status(&id));
    assert_eq!(h.status(&other)["status"], "running");
    assert!(processes_of(&id).len() >= 3, "{:?}", processes_of(&id));
    // Cancel still reaches it, through its recorded process group.
    let (views, code) = h.json(&["cancel", &id, "--grace", "1s"]);
    assert_eq!(
        (code, views[0]["status"].as_str()),
        (0, Some("cancelled")),
        "{views}"
    );
    assert_eq!(processes_of(&id), Vec::<u32>::new());
    h.json(&["cancel", &other]);
}

/// The same with a `--timeout` and nobody watching: the deadline holds without tmux (the task's
/// processes are found by their group and environment) and is recorded as a timeout.
#[test]
fn a_timeout_holds_when_the_tmux_socket_was_deleted() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &["--timeout", "3s"]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let server: u32 = String::from_utf8_lossy(&h.tmux(&["display-message", "-p", "#{pid}"]).stdout)
        .trim()
        .parse()
        .unwrap();
    let _server = Unreachable {
        server,
        task: id.clone(),
    };
    std::fs::remove_file(format!(
        "/tmp/tmux-{}/{}",
        unsafe { libc::getuid() },
        h.socket
    ))
    .unwrap();
    assert!(
        poll(limits::TASK, || processes_of(&id).is_empty()),
        "survivors: {:?}",
        processes_of(&id)
    );
    let record: Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(&id).join("task.json")).unwrap()).unwrap();
    assert_eq!(
        (record["status"].as_str(), record["reason"].as_str()),
        (Some("timed_out"), Some("timeout")),
        "{record}"
    );
}

fn record_of(h: &Harness, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(h.task_dir(id).join("task.json")).unwrap()).unwrap()
}

/// A cancel killed at any instant after it recorded the ending (SIGKILL, a parent's SIGTERM, a
/// closed terminal's SIGHUP) still ends its task: someone finishes the stopping, and until then
/// the task never reads as a plain `cancelled`. Killed before it recorded, the task runs on and
/// a later cancel ends it.
#[test]
fn a_cancel_cut_short_at_any_instant_is_finished_by_someone() {
    let h = Harness::new();
    let ids: Vec<String> = (0..12).map(|_| h.submit_sh(STUBBORN, &[])).collect();
    for id in &ids {
        assert!(poll(limits::SHORT, || processes_of(id).len() >= 3));
    }
    let signals = [libc::SIGKILL, libc::SIGTERM, libc::SIGHUP];
    let mut seed: u64 = 0xcafe_f00d;
    for (i, id) in ids.iter().enumerate() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_millis((seed >> 33) % 40);
        let mut child = h
            .cuekit()
            .args(["cancel", id])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if i % 4 == 3 {
            // Any instant, maybe before the cancel was recorded.
            std::thread::sleep(delay);
        } else {
            assert!(
                poll(limits::SHORT, || record_of(&h, id)["status"] == "cancelled"),
                "{}",
                record_of(&h, id)
            );
            // Now within the grace period the cancel gives the stubborn tree.
            std::thread::sleep(delay * (i as u32 % 3 * 20 + 1));
        }
        unsafe { libc::kill(child.id() as i32, signals[i % 3]) };
        let _ = child.wait();
    }
    for id in &ids {
        if record_of(&h, id)["status"] == "running" {
            // Cut short before it recorded: nothing was stopped, and a cancel still works.
            assert!(processes_of(id).len() >= 3, "{id}: {:?}", processes_of(id));
            let (views, code) = h.json(&["cancel", id, "--grace", "1s"]);
            assert_eq!(code, 0, "{views}");
        }
    }
    let session = |id: &str| format!("cuekit-task-{id}");
    for id in &ids {
        let mut last = Value::Null;
        let finished = poll(limits::TASK, || {
            let view = h.status(id);
            // Read before the processes: a stop that is over stays over.
            let plain = view["status"] == "cancelled" && view.get("stopping").is_none();
            let alive = processes_of(id);
            assert!(
                !plain || alive.is_empty(),
                "{id} reads a plain cancelled while {alive:?} run: {view}"
            );
            last = view;
            plain && alive.is_empty() && !sessions(&h).contains(&session(id))
        });
        assert!(
            finished,
            "{id}: {:?} still run, sessions {:?}: {last}",
            processes_of(id),
            sessions(&h)
        );
        assert_eq!(last["survivors"], json!([]), "{last}");
    }
}

/// `rm` right after a cancel was killed in its grace period finishes the stop before it removes
/// the task: no process is left to nobody.
#[test]
fn rm_after_a_cancel_cut_short_finishes_the_stop_first() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &[]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let mut cancel = h
        .cuekit()
        .args(["cancel", &id, "--grace", "4s"])
        .spawn()
        .unwrap();
    assert!(poll(limits::SHORT, || record_of(&h, &id)["status"]
        == "cancelled"));
    unsafe { libc::kill(cancel.id() as i32, libc::SIGKILL) };
    let _ = cancel.wait();
    let (removed, code) = h.json(&["rm", &id]);
    assert_eq!(
        (code, removed[0]["outcome"].as_str()),
        (0, Some("removed")),
        "{removed}"
    );
    assert_eq!(processes_of(&id), Vec::<u32>::new());
    assert!(!sessions(&h).contains(&format!("cuekit-task-{id}")));
}

/// The cancel and its detached stopper both killed (everything of cuekit's but the monitor): the
/// monitor resumes the stop at its next tick, with nobody calling cuekit.
#[test]
fn the_monitor_finishes_a_stop_whose_cancel_and_stopper_were_killed() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &[]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let mut cancel = h.cuekit().args(["cancel", &id]).spawn().unwrap();
    assert!(poll(limits::SHORT, || record_of(&h, &id)["status"]
        == "cancelled"));
    let stoppers: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            words.contains(&&b"__stop"[..]) && words.contains(&id.as_bytes())
        })
        .collect();
    for pid in stoppers.iter().chain([&cancel.id()]) {
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    let _ = cancel.wait();
    assert!(
        poll(limits::TASK, || processes_of(&id).is_empty()
            && !sessions(&h).contains(&format!("cuekit-task-{id}"))),
        "survivors: {:?}",
        processes_of(&id)
    );
    // The monitor records the stop finished just after its last process is gone: under load
    // a look in between still read `stopping` (once, in a clean-clone run).
    assert!(
        poll(limits::SHORT, || h.status(&id).get("stopping").is_none()),
        "{}",
        h.status(&id)
    );
    h.assert_status(&id, "cancelled");
}

/// `rm` of a task a `wait` is waiting on (with others) ends nothing badly: the removed task
/// keeps the ending the wait saw, and the wait goes on for the others.
#[test]
fn a_wait_keeps_the_ending_of_a_task_removed_while_it_waits() {
    let h = Harness::new();
    let done = h.submit_sh("exit 0", &[]);
    let go = h.root().join("go");
    let waits = h.submit_sh(
        &format!("while [ ! -e '{}' ]; do sleep 0.05; done", go.display()),
        &[],
    );
    // The wait's tmux calls, one list each refresh, tell when it looked again.
    let (shim_dir, calls) = h.tmux_shim("$PPID");
    let path = format!("{}:{}", shim_dir.display(), std::env::var("PATH").unwrap());
    let wait = h
        .cuekit()
        .env("PATH", format!("{}:{path}", h.bin.display()))
        .args(["--json", "wait", &done, &waits, "--timeout", "60s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiter = wait.id().to_string();
    let refreshes = || {
        std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .filter(|caller| *caller == waiter)
            .count()
    };
    let two_more_refreshes = || {
        let from = refreshes();
        assert!(
            poll(HANG_GUARD, || refreshes() >= from + 2),
            "the wait stopped refreshing"
        );
    };
    assert!(poll(limits::SHORT, || record_of(&h, &done)["status"]
        == "completed"));
    // Past a full refresh of the wait's, so it has seen the ending.
    two_more_refreshes();
    let (removed, code) = h.json(&["rm", &done]);
    assert_eq!(code, 0, "{removed}");
    // And past one after the removal.
    two_more_refreshes();
    std::fs::write(&go, "").unwrap();
    let output = wait.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(output.status.code(), Some(0), "{answer}");
    assert_eq!(answer["tasks"][0]["id"], done.as_str(), "{answer}");
    assert_eq!(answer["tasks"][0]["status"], "completed", "{answer}");
    assert_eq!(answer["tasks"][1]["status"], "completed", "{answer}");
}

/// A task cancelled and removed before the wait saw it end: the wait says the task is gone
/// (`task_not_found`, exit 4, with why), or its ending if it saw it (exit 20), never an I/O
/// error.
#[test]
fn a_wait_on_a_task_removed_before_it_saw_the_end_says_so() {
    let h = Harness::new();
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        let id = h.submit_sh("sleep 600", &[]);
        let wait = h
            .cuekit()
            .args(["--json", "wait", &id, "--timeout", "60s"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        h.json(&["cancel", &id, "--grace", "1s"]);
        let (removed, code) = h.json(&["rm", &id]);
        assert_eq!(code, 0, "{removed}");
        let output = wait.wait_with_output().unwrap();
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        let code = output.status.code();
        match code {
            Some(20) => assert_eq!(answer["tasks"][0]["status"], "cancelled", "{answer}"),
            Some(4) => {
                assert_eq!(answer["error"]["code"], "task_not_found", "{answer}");
                assert!(
                    answer["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("removed"),
                    "{answer}"
                );
            }
            _ => panic!("wait exited {code:?}: {answer}"),
        }
        outcomes.push(code);
    }
    eprintln!("wait outcomes: {outcomes:?}");
}

/// Every listing undoes killed submits, also when it comes at once, while the killed submit's
/// tmux client is still creating the session: afterwards no session, pending entry or task
/// directory is left without a registered task.
#[test]
fn every_listing_undoes_killed_submits_even_at_once() {
    let h = Harness::new();
    let listings: [&[&str]; 3] = [&["list", "--all"], &["list"], &["status", "t_000000000000"]];
    let mut seed: u64 = 0x0dd_ba11;
    for i in 0..30 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut child = h
            .cuekit()
            .args(["submit", "--agent", "command", "--", "sleep", "600"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(1000 + (seed >> 33) % 7000));
        let _ = child.kill();
        let _ = child.wait();
        let _ = h.json(listings[i % 3]);
    }
    let registered = |id: &str| registry(&h).join("tasks").join(id).is_file();
    let unowned = || -> Vec<String> {
        sessions(&h)
            .into_iter()
            .filter(|s| !registered(s.trim_start_matches("cuekit-task-")))
            .collect()
    };
    assert!(
        poll(Duration::from_secs(5), || unowned().is_empty()),
        "sessions without a record: {:?}",
        unowned()
    );
    let pending = std::fs::read_dir(registry(&h).join("pending"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(pending, 0);
    // Every submit may have been killed before it made the tasks folder.
    for entry in std::fs::read_dir(h.project.join(".cuekit/tasks"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let id = entry.file_name().to_string_lossy().into_owned();
        assert!(registered(&id), "{id} left without a record");
    }
}

/// What a killed `rm` leaves (its task directory removed, wholly or in part, but not yet its
/// registry entry) is finished by the next `rm`: the entry and the session go, and nothing else
/// is touched. A task whose record is gone but whose processes run is not removed.
#[test]
fn rm_finishes_what_a_killed_rm_left() {
    let h = Harness::new();
    let whole = h.submit_sh("exit 0", &[]);
    let partial = h.submit_sh("exit 0", &[]);
    let live = h.submit_sh("sleep 600", &[]);
    h.json(&["wait", &whole, &partial, "--timeout", "10s"]);
    assert!(poll(limits::SHORT, || processes_of(&live).len() == 2));
    std::fs::remove_dir_all(h.task_dir(&whole)).unwrap();
    std::fs::remove_file(h.task_dir(&partial).join("task.json")).unwrap();
    std::fs::remove_dir_all(h.task_dir(&live)).unwrap();
    let entry = |id: &str| registry(&h).join("tasks").join(id);
    for id in [&whole, &partial] {
        let (removed, code) = h.json(&["rm", id]);
        assert_eq!(
            (code, removed[0]["outcome"].as_str()),
            (0, Some("removed")),
            "{removed}"
        );
        assert!(!entry(id).exists() && !h.task_dir(id).exists());
        assert!(!sessions(&h).contains(&format!("cuekit-task-{id}")));
        let (again, code) = h.json(&["rm", id]);
        assert_eq!(
            (code, again["error"]["code"].as_str()),
            (4, Some("task_not_found"))
        );
    }
    let (refused, code) = h.json(&["rm", &live]);
    assert_eq!(
        (code, refused["error"]["code"].as_str()),
        (5, Some("invalid_state")),
        "{refused}"
    );
    assert!(entry(&live).exists());
    assert_eq!(processes_of(&live).len(), 2);
    assert_eq!(h.json(&["cancel", &live]).1, 0);
}

/// `rm` killed at varied instants, then run again: the task ends removed, with nothing of it
/// left behind.
#[test]
fn rm_killed_at_any_instant_is_finished_by_the_next_rm() {
    let h = Harness::new();
    let ids: Vec<String> = (0..10).map(|_| h.submit_sh("exit 0", &[])).collect();
    let mut args = vec!["wait", "--timeout", "20s"];
    args.extend(ids.iter().map(String::as_str));
    h.json(&args);
    for (i, id) in ids.iter().enumerate() {
        let mut child = h
            .cuekit()
            .args(["rm", id])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(i as u64 * 3));
        let _ = child.kill();
        let _ = child.wait();
        let (_, code) = h.json(&["rm", id]);
        assert!(code == 0 || code == 4, "rm {id} exited {code}");
        assert!(!registry(&h).join("tasks").join(id).exists(), "{id}");
        assert!(!h.task_dir(id).exists(), "{id}");
    }
    assert!(sessions(&h).is_empty(), "{:?}", sessions(&h));
}

/// A cancel on record with no stop claimed (an older cuekit's, killed before it ended anything)
/// while the pane's process runs: the next look ends the task, and never shows it as a plain
/// `cancelled` meanwhile.
#[test]
fn a_cancel_on_record_whose_pane_still_runs_is_finished() {
    let h = Harness::new();
    let id = h.submit_sh(STUBBORN, &[]);
    assert!(poll(limits::SHORT, || processes_of(&id).len() >= 3));
    let path = h.task_dir(&id).join("task.json");
    let mut record = record_of(&h, &id);
    record["status"] = json!("cancelled");
    record["reason"] = json!("cancelled");
    record["ended_at"] = json!("2026-01-01T00:00:00Z");
    std::fs::write(&path, record.to_string()).unwrap();
    // Where an ending is on record: the registry's lifecycle (the record only mirrors it).
    let state = registry(&h).join("tasks").join(format!("{id}.state"));
    let mut lifecycle: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    lifecycle["status"] = json!("cancelled");
    lifecycle["reason"] = json!("cancelled");
    lifecycle["ended_at"] = json!("2026-01-01T00:00:00Z");
    std::fs::write(&state, lifecycle.to_string()).unwrap();
    let mut last = Value::Null;
    let finished = poll(limits::TASK, || {
        let view = h.status(&id);
        let plain = view.get("stopping").is_none();
        let alive = processes_of(&id);
        assert!(
            !plain || alive.is_empty(),
            "plain while {alive:?} run: {view}"
        );
        last = view;
        plain && alive.is_empty()
    });
    assert!(finished, "{:?} still run: {last}", processes_of(&id));
    assert!(poll(Duration::from_secs(5), || !sessions(&h)
        .contains(&format!("cuekit-task-{id}"))));
}

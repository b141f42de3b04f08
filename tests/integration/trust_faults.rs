//! Issue 31, items 4–7: projects never loosen the user, cuekit owns only its own sessions,
//! bounded reads that never block, and faults (a full disk, a partial config, killed submits).
//! Real binary, real tmux (a private server per test), real /bin/sh; each test names the audit's
//! defect it holds shut.

use crate::harness::limits;
use std::path::Path;
use std::process::Command;

use crate::harness::assert_refused;
use crate::harness::{HANG_GUARD, Harness};
use serde_json::Value;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The argv the fake Gemini CLI was started with (it writes it NUL-separated), once it has.
fn argv_of_fake_gemini(h: &Harness, id: &str, file: &Path) -> Vec<String> {
    h.wait_until(id, "the agent to start", limits::TASK, || {
        std::fs::metadata(file).is_ok_and(|m| m.len() > 0)
    });
    std::fs::read_to_string(file)
        .unwrap()
        .split('\0')
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

/// Audit H5: a committed `.cuekit/agents/reviewer.md` (overriding the built-in, plan-only
/// reviewer) or a project `.cuekit.yaml` with `approval_mode: yolo` silently beat the user's
/// `--no-skip-permissions`: the agent ran with yolo, `warnings: []`. The user's flag is the
/// ceiling for every less specific source; what is ignored is named in the warnings.
#[test]
fn a_project_role_or_file_never_loosens_the_users_no_skip_permissions() {
    let h = Harness::new().with_fake_gemini();
    let argv_file = h.root().join("argv");
    let h = h.env("FAKE_GEMINI_ARGV", &argv_file.to_string_lossy());
    write(
        &h.project.join(".cuekit/agents/reviewer.md"),
        "---\napproval_mode: yolo\n---\nReview fast.\n",
    );
    let (answer, code) = h.json(&[
        "submit",
        "--role",
        "reviewer",
        "--no-skip-permissions",
        // The fake writes its argv where a sandbox hides: this case is about the flag.
        "--sandbox=none",
        "--mode",
        "batch",
        "review the change",
    ]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["id"].as_str().unwrap();
    let argv = argv_of_fake_gemini(&h, id, &argv_file);
    assert!(
        !argv
            .iter()
            .any(|w| w == "yolo" || w == "-y" || w == "--yolo"),
        "the project's role undid --no-skip-permissions: {argv:?}"
    );
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("yolo") && warnings.contains("ignored"),
        "the user is told what was ignored: {answer}"
    );
    h.ok(&["wait", id, "--timeout", "60s"]);

    // The same from the project's own file.
    std::fs::remove_file(&argv_file).unwrap();
    std::fs::remove_dir_all(h.project.join(".cuekit/agents")).unwrap();
    write(
        &h.project.join(".cuekit.yaml"),
        "defaults:\n  approval_mode: yolo\n",
    );
    let (answer, code) = h.json(&[
        "submit",
        "--no-skip-permissions",
        "--sandbox=none",
        "--mode",
        "batch",
        "fix it",
    ]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["id"].as_str().unwrap();
    let argv = argv_of_fake_gemini(&h, id, &argv_file);
    assert!(
        !argv
            .iter()
            .any(|w| w == "yolo" || w == "-y" || w == "--yolo"),
        "the project's file undid --no-skip-permissions: {argv:?}"
    );
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("approval_mode") && warnings.contains("ignored"),
        "{answer}"
    );
    // A stricter choice of the project's still applies under the flag.
    write(
        &h.project.join(".cuekit.yaml"),
        "defaults:\n  approval_mode: plan\n",
    );
    let (dry, _) = h.json(&["submit", "--no-skip-permissions", "--dry-run", "x"]);
    assert!(
        dry["launch_command"]
            .as_str()
            .unwrap()
            .contains("--approval-mode plan"),
        "{dry}"
    );
}

/// Audit H6: with `defaults.agent: command` in the user's own config, an untrusted
/// repository's team spec member `argv` ran on `cuekit team submit`. A member's own program
/// needs the spec trusted whatever agent the member ends with.
#[test]
fn a_team_members_argv_needs_trust_whatever_agent_it_ends_with() {
    let h = Harness::new();
    h.user_config("defaults:\n  agent: command\n");
    let pwned = h.root().join("PWNED");
    write(
        &h.project.join("team.yaml"),
        &format!(
            "- objective: review\n  mode: batch\n  argv: [touch, '{}']\n",
            pwned.display()
        ),
    );
    let (answer, code) = h.json(&["team", "submit", "rev", "--spec", "team.yaml"]);
    assert_refused(&answer, code, "config_untrusted", 14);
    let (listed, _) = h.json(&["list", "--all"]);
    assert_eq!(listed, serde_json::json!([]), "a member was started");
    assert!(!pwned.exists(), "the repository chose what ran");
    // Trusted by the user, the same spec runs.
    h.trust(&["team.yaml"]);
    let (answer, code) = h.json(&["team", "submit", "rev", "--spec", "team.yaml"]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["tasks"][0]["id"].as_str().unwrap();
    h.ok(&["wait", id, "--timeout", "60s"]);
    assert!(pwned.exists());
}

/// A small tmpfs mounted on `dir` for one test, unmounted when dropped.
struct Tmpfs {
    dir: std::path::PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "mounting a tmpfs needs root");
        Tmpfs {
            dir: dir.to_path_buf(),
        }
    }

    /// Fills it until the kernel says there is no room (ENOSPC); the filler's path.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.dir.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 4096];
        loop {
            match file.write_all(&chunk).and_then(|_| file.sync_all()) {
                Ok(()) => {}
                Err(err) if err.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(err) => panic!("filling the tmpfs: {err}"),
            }
        }
        // The record's own update must meet no room either.
        assert_eq!(
            std::fs::write(self.dir.join("probe"), b"x")
                .err()
                .and_then(|e| e.raw_os_error()),
            Some(libc::ENOSPC)
        );
        path
    }
}

impl Tmpfs {
    /// Fills it, then gives back `room` bytes: enough for a small write, not a large one.
    fn fill_but(&self, room: u64) -> std::path::PathBuf {
        let path = self.fill();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        file.set_len(len.saturating_sub(room)).unwrap();
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Audit L3: on a full disk `cancel` failed with `io` (11) and the task kept running. Now it
/// ends the task's processes first, and the ending is recorded once there is room.
#[test]
fn cancel_on_a_full_disk_ends_the_task_and_records_it_once_there_is_room() {
    let h = Harness::new();
    // The project (and so the task's folder and record) on a small filesystem of its own.
    let disk = Tmpfs::mount(&h.project, "4m");
    let id = h.submit_sh("sleep 600", &[]);
    h.wait_until(&id, "the task's sleep", limits::TASK, || {
        crate::harness::runs(&id, "sleep 600")
    });
    let filler = disk.fill();
    let (answer, code) = h.json(&["cancel", &id]);
    crate::harness::assert_nothing_left(&id);
    assert_eq!(code, 0, "{answer}");
    assert_eq!(answer[0]["status"], "cancelled", "{answer}");
    // Room again: the next look records the cancel (not the ended pane's exit).
    std::fs::remove_file(filler).unwrap();
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["reason"].as_str()),
        (Some("cancelled"), Some("cancelled")),
        "{status}"
    );
    let record: Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(&id).join("task.json")).unwrap()).unwrap();
    assert_eq!(record["status"], "cancelled", "{record}");
    drop(h);
    drop(disk);
}

/// Also seen in the audit: a config `retry:` section without `max` was refused (`missing
/// field max`). Every key is optional: so is a host's `ssh` (its name is the destination).
#[test]
fn every_config_key_is_optional() {
    let h = Harness::new();
    h.user_config("retry:\n  on: [rate_limited]\nhosts:\n  build1: {}\n");
    let (answer, code) = h.json(&["config"]);
    assert_eq!(code, 0, "{answer}");
    let (answer, code) = h.json(&["submit", "--dry-run", "--agent", "command", "--", "true"]);
    assert_eq!(code, 0, "{answer}");
    // The host is read (ssh to it fails here: no such machine), its destination its name.
    let (hosts, _) = h.json(&["hosts"]);
    assert_eq!(hosts[0]["ssh"], "build1", "{hosts}");
}

/// The task sessions on the test's tmux server.
fn task_sessions(h: &Harness) -> Vec<String> {
    let listed = h.tmux(&["list-sessions", "-F", "#{session_name}"]);
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|name| name.starts_with("cuekit-task-"))
        .map(str::to_string)
        .collect()
}

/// `cuekit ARGS…` with another data directory (another registry) on the same tmux server.
fn with_registry(h: &Harness, data: &Path, args: &[&str]) -> std::process::Output {
    h.cuekit()
        .env("XDG_DATA_HOME", data)
        .args(args)
        .output()
        .unwrap()
}

/// Audit M4: `doctor --fix` run with another data dir on the same tmux server ended a running
/// task of the first, and a hand-made session named like a task. It ends only the sessions its
/// own registry started.
#[test]
fn doctor_fix_ends_only_sessions_its_own_registry_started() {
    let h = Harness::new();
    let first = h.submit_sh("sleep 600", &[]);
    let by_hand = "cuekit-task-t_0123456789ab";
    let made = h.tmux(&["new-session", "-d", "-s", by_hand, "sleep", "600"]);
    assert!(made.status.success(), "{made:?}");
    // A second registry's own orphan: a task of its whose registry entry is gone.
    let other = h.root().join("other-data");
    std::fs::create_dir_all(&other).unwrap();
    let submitted = with_registry(
        &h,
        &other,
        &[
            "--json", "submit", "--agent", "command", "--", "sleep", "600",
        ],
    );
    assert!(submitted.status.success(), "{submitted:?}");
    let second: Value = serde_json::from_slice(&submitted.stdout).unwrap();
    let second = second["id"].as_str().unwrap().to_string();
    std::fs::remove_file(other.join("cuekit/tasks").join(&second)).unwrap();
    let fixed = with_registry(&h, &other, &["doctor", "--fix"]);
    let said = String::from_utf8_lossy(&fixed.stdout);
    let sessions = task_sessions(&h);
    assert!(
        sessions.contains(&format!("cuekit-task-{first}")),
        "another registry's running task was ended: {sessions:?}\n{said}"
    );
    assert!(
        sessions.contains(&by_hand.to_string()),
        "a hand-made session was ended: {sessions:?}\n{said}"
    );
    assert!(
        !sessions.contains(&format!("cuekit-task-{second}")),
        "its own orphan was kept: {sessions:?}\n{said}"
    );
    assert_eq!(h.status(&first)["status"], "running");
}

/// Audit M3 (the drop half): report files swapped for FIFOs in a sandboxed task's drop folder
/// between cuekit's `lstat` and its read blocked the monitor for good (a `--timeout 5s` task
/// lived on). Every drop is opened once, without blocking, and refused unless it is a regular
/// file: the monitor keeps its pace and the timeout ends the task.
#[test]
fn fifos_swapped_into_a_drop_folder_never_block_the_monitor() {
    let h = Harness::new();
    h.user_config("monitor:\n  interval: 100ms\n");
    let id = h.submit_sh("sleep 600", &["--sandbox", "--timeout", "20s"]);
    h.wait_until(&id, "the task's sleep", limits::TASK, || {
        crate::harness::runs(&id, "sleep 600")
    });
    let drop = h.home.join(".local/share/cuekit/drop").join(&id);
    assert!(drop.is_dir(), "no drop folder at {}", drop.display());
    // Forty reports, each a FIFO for a moment and then a regular file again, as fast as links
    // go, until the task's timeout has ended it (the monitor's doing: nobody else looks). A
    // reader that looked (`lstat`) at the regular file and then opens the name meets the FIFO.
    let regular = h.root().join("report.json");
    std::fs::write(&regular, br#"{"kind":"progress","message":"step"}"#).unwrap();
    let fifo = h.root().join("report.fifo");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, drop) = (stop.clone(), drop.clone());
        std::thread::spawn(move || {
            let mut round = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for n in 0..40 {
                    let name = drop.join(format!("{n:02}.json"));
                    let staged = drop.join(format!(".{n}.tmp"));
                    let _ = std::fs::hard_link(&fifo, &staged);
                    let _ = std::fs::rename(&staged, &name);
                    let _ = std::fs::hard_link(&regular, &staged);
                    let _ = std::fs::rename(&staged, &name);
                }
                round += 1;
            }
            round
        })
    };
    let ended = crate::harness::poll(limits::AGENT, || {
        crate::harness::processes_of(&id).is_empty()
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = swapper.join().unwrap();
    assert!(rounds > 0);
    assert!(
        ended,
        "the task outlived its 20s timeout by 40s: the monitor is blocked"
    );
    h.assert_status(&id, "timed_out");
}

/// Audit L4: child-written files were read whole: a 573 MB `task.json` cost each `list` its
/// size in memory. A record past the limit is refused by its size, unread.
#[test]
fn a_huge_record_is_refused_unread() {
    let h = Harness::new();
    let id = h.submit_batch_sh("true");
    h.ok(&["wait", &id, "--timeout", "60s"]);
    // The ending is in the registry before its mirror: the mirror's own write (a rename) must
    // be over before the record is grown, or it replaces the grown one.
    let mirror = h.task_dir(&id).join("task.json");
    h.wait_until(&id, "the mirror's ending", HANG_GUARD, || {
        std::fs::read_to_string(&mirror).is_ok_and(|text| text.contains("\"completed\""))
    });
    // 512 MiB, sparse: costs the disk nothing, but a reader of it its whole size.
    let record = std::fs::OpenOptions::new()
        .write(true)
        .open(h.task_dir(&id).join("task.json"))
        .unwrap();
    record.set_len(512 * 1024 * 1024).unwrap();
    drop(record);
    // Its peak memory, from the kernel's accounting as it is reaped (`wait4`), by a small
    // python3 parent: a child this process forked would start its peak at this process's own
    // size (Linux keeps the larger across exec), and under `cargo test` every test of the crate
    // shares this process.
    let peak = h.root().join("peak-kib");
    let measured = h
        .program(std::path::Path::new("python3"))
        .args([
            "-c",
            "import os, sys\n\
             pid = os.fork()\n\
             if pid == 0:\n    os.execv(sys.argv[2], sys.argv[2:])\n\
             _, status, usage = os.wait4(pid, 0)\n\
             open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n\
             sys.exit(os.waitstatus_to_exitcode(status))\n",
        ])
        .arg(&peak)
        .arg(env!("CARGO_BIN_EXE_cuekit"))
        .args(["--json", "list", "--all"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&measured.stdout).into_owned();
    let peak_kib: u64 = std::fs::read_to_string(&peak)
        .unwrap_or_else(|err| panic!("no peak measured ({err}): {measured:?}"))
        .parse()
        .unwrap();
    let rows: Value = serde_json::from_str(&listed).unwrap();
    assert!(
        rows[0]["hint"]
            .as_str()
            .unwrap_or("")
            .contains("larger than"),
        "{rows}"
    );
    assert!(
        peak_kib < 128 * 1024,
        "listing one task took {peak_kib} KiB: the record was read whole"
    );
}

/// Audit L4, the monitor: it re-read a child's huge record for ever, even after its tmux
/// server was gone. A monitor whose server is gone exits.
#[test]
fn a_monitor_whose_tmux_server_is_gone_exits() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);
    let home = format!("HOME={}", h.home.display());
    let monitors = || {
        processes_with(&["__monitor"])
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|entry| entry == home.as_bytes()))
            })
            .collect::<Vec<u32>>()
    };
    assert!(
        crate::harness::poll(limits::TASK, || !monitors().is_empty()),
        "no monitor started"
    );
    // The child makes its record unreadable (past the limit, or not JSON at all).
    std::fs::write(h.task_dir(&id).join("task.json"), b"{ not a record").unwrap();
    h.tmux(&["kill-server"]);
    crate::harness::assert_nothing_left(&id);
    assert!(
        crate::harness::poll(limits::TASK, || monitors().is_empty()),
        "the monitor outlived its tmux server: {:?}",
        monitors()
    );
}

/// Whether a process's argv holds every one of `words`: their pids.
fn processes_with(words: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                let argv: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
                words.iter().all(|word| argv.contains(&word.as_bytes()))
            })
        })
        .collect()
}

/// Audit L2: a nested-bracket `.cuekit.yaml` under 4 MiB parsed in quadratic time (100 000
/// deep: 28 s). It is refused by its nesting before it is parsed, with where it goes too deep.
#[test]
fn a_deeply_nested_project_file_is_refused_before_it_is_parsed() {
    let h = Harness::new();
    let deep = format!(
        "defaults:\n  model: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    write(&h.project.join(".cuekit.yaml"), &deep);
    let (answer, code) = h.json(&["submit", "--dry-run", "--agent", "command", "--", "true"]);
    assert_refused(&answer, code, "config_invalid", 12);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(".cuekit.yaml:2:") && message.contains("levels deep"),
        "{answer}"
    );
    // A team spec and a role profile the same.
    std::fs::remove_file(h.project.join(".cuekit.yaml")).unwrap();
    write(
        &h.project.join("team.yaml"),
        &format!("- objective: {}\n", "[".repeat(100_000)),
    );
    let (answer, _) = h.json(&["team", "submit", "t", "--spec", "team.yaml"]);
    assert!(answer.to_string().contains("levels deep"), "{answer}");
    write(
        &h.project.join(".cuekit/agents/deep.md"),
        &format!("---\ndescription: {}\n---\nx\n", "{".repeat(100_000)),
    );
    let (answer, _) = h.json(&["submit", "--role", "deep", "--dry-run", "x"]);
    assert!(answer.to_string().contains("levels deep"), "{answer}");
}

/// Audit H5 with the real Gemini CLI (offline, canned replies): the model asks for a shell call;
/// with the user's `--no-skip-permissions` and a project role overriding the built-in reviewer
/// with `approval_mode: yolo`, the call ran unasked. It must not run.
#[test]
fn a_project_role_cannot_make_real_gemini_run_a_shell_call_the_user_kept_asked() {
    let pwned = "PWNED";
    let h = Harness::new().with_real_gemini(&[
        crate::harness::canned_shell_call(&format!("touch {pwned}")),
        crate::harness::canned_text("Reviewed."),
        crate::harness::canned_text("Reviewed."),
    ]);
    write(
        &h.project.join(".cuekit/agents/reviewer.md"),
        "---\napproval_mode: yolo\n---\nReview fast.\n",
    );
    // It asks for approvals: sandboxed by default.
    h.show_real_gemini_to_sandbox();
    let (answer, code) = h.json(&[
        "submit",
        "--role",
        "reviewer",
        "--no-skip-permissions",
        "--mode",
        "batch",
        "--model",
        crate::harness::MODEL,
        "review the change",
    ]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["id"].as_str().unwrap();
    let (waited, _) = h.json(&["wait", id, "--timeout", "120s"]);
    assert!(
        waited.to_string().contains(id),
        "the task did not end: {waited}"
    );
    assert!(
        !h.project.join(pwned).exists(),
        "the shell call ran unasked; transcript:\n{}",
        h.transcript(id)
    );
    // The model was asked and answered (the call was refused, not the run).
    let (result, _) = h.json(&["result", id]);
    assert!(result.to_string().contains("Reviewed."), "{result}");
}

/// Also seen in the audit: after killed submits, sessions outlived the next `list --all` by
/// about 3 s. The killed submit's tmux client outlives it; one slower than the look's wait
/// made the session after the look had ended it. Here the client (a `tmux` on PATH that holds
/// `new-session` until told to go on) is held past the look: the look ends it, and no session
/// is made once it is told to go on.
#[test]
fn the_first_look_after_killed_submits_leaves_no_session_behind() {
    let h = Harness::new();
    let real = crate::harness::real_tmux();
    let marks = h.root().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    crate::harness::write_executable(
        &h.bin.join("tmux"),
        &format!(
            "#!/bin/sh\ncase \" $* \" in *\" new-session \"*)\n  touch '{m}/asking'\n  while [ ! -e '{m}/go' ]; do sleep 0.02; done ;;\nesac\nexec '{real}' \"$@\"\n",
            m = marks.display(),
            real = real.display()
        ),
    );
    // A server already up, as it is for a user with tasks.
    h.tmux(&["new-session", "-d", "-s", "keep", "sleep", "600"]);
    let mut submit = h
        .cuekit()
        .args(["submit", "--agent", "command", "--", "sleep", "600"])
        .spawn()
        .unwrap();
    assert!(
        crate::harness::poll(limits::TASK, || marks.join("asking").exists()),
        "the submit never asked tmux for its session"
    );
    submit.kill().unwrap();
    submit.wait().unwrap();
    h.ok(&["list", "--all"]);
    assert_eq!(
        task_sessions(&h),
        Vec::<String>::new(),
        "right after the look"
    );
    // The held client is let go; once no client is left, still no session.
    std::fs::write(marks.join("go"), b"").unwrap();
    // cuekit's clients name the server by its path (the wrapper, then the real tmux).
    let socket = format!("/tmp/tmux-{}/{}", unsafe { libc::getuid() }, h.socket);
    assert!(
        crate::harness::poll(limits::TASK, || processes_with(&[&socket, "new-session"])
            .is_empty()),
        "a client is left: {:?}",
        processes_with(&[&socket, "new-session"])
    );
    assert_eq!(
        task_sessions(&h),
        Vec::<String>::new(),
        "once the client is gone"
    );
}

/// Item 4, the sandbox: a project file's looser sandbox never applied (the strictest wins),
/// but silently. What was ignored is named in the submit's warnings.
#[test]
fn a_projects_looser_sandbox_is_ignored_with_a_warning() {
    let h = Harness::new();
    h.user_config("sandbox:\n  mode: bwrap\n  network: off\n");
    write(
        &h.project.join(".cuekit.yaml"),
        "sandbox:\n  mode: none\n  network: on\n",
    );
    let (dry, code) = h.json(&["submit", "--dry-run", "--agent", "command", "--", "true"]);
    assert_eq!(code, 0, "{dry}");
    let warnings = dry["warnings"].to_string();
    assert!(
        warnings.contains("sandbox.mode") && warnings.contains("sandbox.network"),
        "{dry}"
    );
}

/// Audit 48 F10: a merge on a full disk moved the branch, its checkout could not follow, the
/// branch could not be put back either, and the answer said "nothing was changed" while the
/// journal the recovery rule needs was dropped: the retry refused. Now the journal stays while
/// the branch is at the merge, the answer says where things are, and the next merge with room
/// brings the checkout up (what the failed `read-tree` wrote cleared first).
#[test]
fn a_merge_on_a_full_disk_says_where_it_stopped_and_the_next_merge_finishes_it() {
    let h = Harness::new();
    let disk = Tmpfs::mount(&h.project, "24m");
    crate::harness::git::project_repo(&h.project, "base\n");
    let id = h.submit_worktree_sh(
        &[],
        "head -c 3000000 /dev/urandom | base64 > big.txt; git add -A; git commit -qm big; \
         echo more > more.txt",
    );
    h.wait_ok(&[&id], &limits::arg(limits::TASK));
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&h.project)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let old = git(&["rev-parse", "HEAD"]);
    let filler = disk.fill_but(200 * 1024);
    let (answer, code) = h.json(&["merge", &id]);
    eprintln!("the merge on a full disk: {answer}");
    assert_ne!(code, 0, "the merge cannot have landed: {answer}");
    let journal = h.project.join(".git/cuekit-landing");
    if git(&["rev-parse", "HEAD"]) != old {
        assert!(
            journal.exists(),
            "the branch moved and the journal went: {answer}"
        );
        let said = answer.to_string();
        assert!(!said.contains("nothing was changed"), "{said}");
        assert!(said.contains("could not be put back"), "{said}");
    }
    std::fs::remove_file(filler).unwrap();
    let _ = std::fs::remove_file(h.project.join("probe"));
    let (answer, code) = h.json(&["merge", &id]);
    assert_eq!(code, 0, "the merge with room: {answer}");
    assert!(!git(&["ls-tree", "HEAD", "big.txt"]).is_empty(), "{answer}");
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        status.lines().all(|line| line.contains(".cuekit")),
        "the checkout does not show the branch: {status}"
    );
    assert!(!journal.exists());
    drop(h);
    drop(disk);
}

/// Audit 48 F11: `submit --worktree` on a full repository disk failed (right), but git had made
/// the task's branch before its checkout failed, and the branch stayed with no record naming
/// it. What the failed `worktree add` made goes; the answer is the error.
#[test]
fn a_worktree_submit_that_fails_on_a_full_disk_leaves_no_branch() {
    let h = Harness::new();
    let disk = Tmpfs::mount(&h.project, "8m");
    crate::harness::git::project_repo(&h.project, "base\n");
    for n in 0..300 {
        std::fs::write(h.project.join(format!("f{n}.txt")), format!("file {n}\n")).unwrap();
    }
    crate::harness::git::commit_all(&h.project, "many");
    let filler = disk.fill_but(20 * 1024);
    let (answer, code) = h.json(&[
        "submit",
        "--worktree",
        "--agent",
        "command",
        "--mode",
        "batch",
        "--",
        "true",
    ]);
    let branches = Command::new("git")
        .arg("-C")
        .arg(&h.project)
        .args(["for-each-ref", "--format=%(refname)", "refs/heads/cuekit/"])
        .output()
        .unwrap();
    let branches = String::from_utf8_lossy(&branches.stdout).to_string();
    std::fs::remove_file(filler).unwrap();
    assert_ne!(code, 0, "the submit on a full disk went ahead: {answer}");
    assert_eq!(branches, "", "a branch no record names was left: {answer}");
    drop(h);
    drop(disk);
}

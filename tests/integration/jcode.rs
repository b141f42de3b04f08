//! The jcode adapter through the real runtime (tmux, /bin/sh, transcript, sentinel, steering),
//! with a stand-in for jcode (tests/fixtures/fake-jcode): jcode is on no package registry here.

use crate::harness::limits;
use std::path::{Path, PathBuf};

use crate::harness::Harness;

fn with_fake_jcode() -> Harness {
    let h = Harness::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-jcode");
    crate::harness::install_executable(&fixture, &h.bin.join("jcode"));
    h
}

fn markers(h: &Harness) -> PathBuf {
    h.home.join(".jcode/active_pids")
}

fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

/// The fake REPL's own markers (it names them `session_<pid>_fake`): name and content.
fn own_markers(h: &Harness) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(markers(h)) else {
        return Vec::new();
    };
    entries
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("session_"))
        .map(|entry| {
            let content = std::fs::read_to_string(entry.path()).unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                content.trim().to_string(),
            )
        })
        .collect()
}

#[test]
fn interactive_answers_the_prompt_takes_a_steer_and_cleans_only_its_own_marker() {
    let h = with_fake_jcode();
    // Markers of other jcode processes: one alive, one long gone. Neither is this task's.
    let mut other = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    std::fs::create_dir_all(markers(&h)).unwrap();
    std::fs::write(markers(&h).join("other-live"), format!("{}\n", other.id())).unwrap();
    std::fs::write(markers(&h).join("other-dead"), format!("{gone_pid}\n")).unwrap();

    let objective = "-first: don't \"stop\" $HOME `x`";
    let id = h.submit(&[
        "--agent",
        "jcode",
        "--constraint",
        "keep it short",
        "--",
        objective,
    ]);
    // The rendered prompt (objective, then a Constraints section) arrives as one turn.
    let first = format!("JCODE-REPLY 1: {objective}  Constraints: - keep it short");
    h.wait_until(&id, "the first answer", limits::TASK, || {
        h.transcript(&id).contains(&first)
    });
    assert!(!h.transcript(&id).contains("JCODE-REPLY 2"));
    assert_eq!(h.status(&id)["status"], "running");

    let own = own_markers(&h);
    assert_eq!(own.len(), 1, "{own:?}");
    let repl_pid = own[0].1.clone();
    assert!(alive(&repl_pid), "the marker names the running REPL");

    let (receipt, code) = h.json(&["steer", &id, "and a 'second' message"]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("submitted"), 0),
        "{receipt}"
    );
    h.wait_until(&id, "the second answer", limits::TASK, || {
        h.transcript(&id)
            .contains("JCODE-REPLY 2: and a 'second' message")
    });

    let (receipt, code) = h.json(&["steer", &id, "/quit"]);
    assert_eq!(code, 0, "{receipt}");
    let (waited, code) = h.json(&["wait", &id, "--until", "ended", "--timeout", "20s"]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{status}"
    );
    assert!(h.transcript(&id).contains("JCODE-BYE"));

    assert!(!alive(&repl_pid));
    assert_eq!(
        own_markers(&h),
        Vec::new(),
        "the REPL's own marker is removed"
    );
    assert!(
        markers(&h).join("other-live").exists(),
        "a live process's marker survives"
    );
    assert!(
        markers(&h).join("other-dead").exists(),
        "another REPL's marker is not this task's to remove"
    );
    assert!(!h.task_dir(&id).join("jcode-stdin").exists());
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn a_cancelled_repl_leaves_no_marker_of_its_own_either() {
    let h = with_fake_jcode();
    let id = h.submit(&["--agent", "jcode", "wait for me"]);
    h.wait_until(&id, "the first answer", limits::TASK, || {
        h.transcript(&id).contains("JCODE-REPLY 1: wait for me")
    });
    let own = own_markers(&h);
    assert_eq!(own.len(), 1, "{own:?}");
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(h.status(&id)["status"], "cancelled");
    h.wait_until(&id, "the REPL to end", limits::SHORT, || !alive(&own[0].1));
    h.wait_until(&id, "the marker cleanup", limits::SHORT, || {
        own_markers(&h).is_empty()
    });
}

#[test]
fn batch_completes_with_the_prompt_intact_and_refuses_steering() {
    let h = with_fake_jcode();
    let argv_file = h.root().join("argv");
    let h = h.env("FAKE_JCODE_ARGV", argv_file.to_str().unwrap());
    let prompt = "-v keeps 'quotes', \"double\", $(subshells) and spaces";
    let id = h.submit(&[
        "--agent",
        "jcode",
        "--mode",
        "batch",
        "--provider-profile",
        "work",
        "--model",
        "m1",
        "--no-skip-permissions",
        "--",
        prompt,
    ]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", "20s"]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let status = h.status(&id);
    assert_eq!(status["status"], "completed");
    assert!(
        status["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("has no effect")),
        "{status}"
    );
    let argv: Vec<String> = std::fs::read_to_string(&argv_file)
        .unwrap()
        .split_terminator('\0')
        .map(String::from)
        .collect();
    assert_eq!(
        argv,
        [
            "run",
            "--no-update",
            "--provider-profile",
            "work",
            "--model",
            "m1",
            "--",
            prompt
        ]
    );
    assert!(
        h.ok(&["logs", &id])
            .contains(&format!("JCODE-RUN-REPLY profile=work model=m1: {prompt}"))
    );

    let (error, code) = h.json(&["steer", &id, "more"]);
    assert_eq!(code, 6, "{error}");
    assert_eq!(error["error"]["code"], "steering_unsupported");
}

#[test]
fn provider_profile_comes_from_the_config_unless_the_task_names_one() {
    let h = with_fake_jcode();
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        "adapters:\n  jcode:\n    provider_profile: from-config\n",
    )
    .unwrap();
    let dry = |extra: &[&str]| {
        let mut args = vec!["submit", "--agent", "jcode", "--mode", "batch", "--dry-run"];
        args.extend_from_slice(extra);
        args.push("x");
        let (value, code) = h.json(&args);
        assert_eq!(code, 0, "{value}");
        value
    };
    assert_eq!(
        dry(&[])["launch_command"],
        "jcode run --no-update --provider-profile 'from-config' -- 'x'"
    );
    let flagged = dry(&["--provider-profile", "mine", "--skip-permissions"]);
    assert_eq!(
        flagged["launch_command"],
        "jcode run --no-update --provider-profile 'mine' -- 'x'"
    );
    assert!(
        flagged["warnings"][0]
            .as_str()
            .unwrap()
            .contains("no permission-bypass flag")
    );
    let config = h.ok(&["config"]);
    assert!(
        config
            .lines()
            .any(|line| line.starts_with("adapters.jcode.provider_profile")
                && line.contains("from-config")),
        "{config}"
    );
    // `cuekit adapters` tells a parent the bypass option does nothing for jcode.
    let (adapters, _) = h.json(&["adapters"]);
    let jcode = adapters
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_kind"] == "jcode")
        .unwrap();
    assert!(
        jcode["install_hint"]
            .as_str()
            .unwrap()
            .contains("dangerously_skip_permissions has no effect")
    );
}

#[test]
fn the_fake_rejects_what_jcode_rejects() {
    let h = with_fake_jcode();
    for args in [
        &["run", "--no-update", "-hello"][..],
        &["run", "--no-update", "--yolo", "--", "x"],
        &["repl", "--no-update", "hello"],
        &["repl", "--no-update", "--model"],
        &["run", "--", "x"],
    ] {
        let output = std::process::Command::new(h.bin.join("jcode"))
            .args(args)
            .env("HOME", &h.home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!output.status.success(), "jcode {args:?} should fail");
    }
}

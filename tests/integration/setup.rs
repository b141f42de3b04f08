//! Configuration, capabilities, init and doctor: what a user meets before the first task.

use crate::harness::HANG_GUARD;
use crate::harness::Harness;

fn project_config(h: &Harness, text: &str) {
    std::fs::write(h.project.join(".cuekit.yaml"), text).unwrap();
}

fn dry_run(h: &Harness, args: &[&str]) -> String {
    let mut all = vec!["submit", "--dry-run"];
    all.extend_from_slice(args);
    all.push("x");
    h.ok(&all).trim().to_string()
}

#[test]
fn flag_beats_project_beats_user_beats_built_in() {
    let h = Harness::new();
    assert_eq!(dry_run(&h, &[]), "gemini --skip-trust -y 'x'");
    h.user_config(
        "defaults:\n  model: pro\n  mode: batch\nadapters:\n  gemini:\n    bin: /opt/user/gemini\n",
    );
    assert_eq!(
        dry_run(&h, &[]),
        format!(
            "/opt/user/gemini --skip-trust -y -m 'pro' -o stream-json {}",
            crate::harness::STDIN_PROMPT
        )
    );
    project_config(&h, "adapters:\n  gemini:\n    model: flash\n");
    assert_eq!(
        dry_run(&h, &[]),
        format!(
            "/opt/user/gemini --skip-trust -y -m 'flash' -o stream-json {}",
            crate::harness::STDIN_PROMPT
        )
    );
    assert_eq!(
        dry_run(&h, &["--model", "flash-lite", "--mode", "interactive"]),
        "/opt/user/gemini --skip-trust -y -m 'flash-lite' 'x'"
    );
    // A project file is found from a subdirectory too.
    let sub = h.project.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let out = h
        .cuekit()
        .current_dir(&sub)
        .args(["submit", "--dry-run", "x"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!(
            "/opt/user/gemini --skip-trust -y -m 'flash' -o stream-json {}",
            crate::harness::STDIN_PROMPT
        )
    );

    let (entries, code) = h.json(&["config"]);
    assert_eq!(code, 0);
    let find = |key: &str| {
        entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap()
            .clone()
    };
    assert_eq!(find("adapters.gemini.model")["value"], "flash");
    assert_eq!(find("adapters.gemini.model")["source"]["kind"], "project");
    assert_eq!(find("defaults.mode")["source"]["kind"], "user");
    assert_eq!(find("tmux.width")["source"]["kind"], "built_in");
    let text = h.ok(&["config"]);
    assert!(
        text.contains(&format!("({})", h.project.join(".cuekit.yaml").display())),
        "{text}"
    );
}

#[test]
fn permissions_prompt_turns_the_bypass_off_unless_asked() {
    let h = Harness::new();
    project_config(
        &h,
        "adapters:\n  gemini:\n    permissions: prompt\n    approval_mode: plan\n",
    );
    assert_eq!(
        dry_run(&h, &[]),
        "gemini --skip-trust --approval-mode plan 'x'"
    );
    project_config(&h, "adapters:\n  gemini:\n    permissions: prompt\n");
    assert_eq!(dry_run(&h, &[]), "gemini --skip-trust 'x'");
    assert_eq!(
        dry_run(&h, &["--skip-permissions"]),
        "gemini --skip-trust -y 'x'"
    );
}

#[test]
fn a_broken_config_names_file_line_and_column_and_nothing_is_submitted() {
    let h = Harness::new().with_fake_gemini();
    let file = h.project.join(".cuekit.yaml");
    let cases = [
        (
            "defaults:\n  agent: gemini\n  modle: flash\n",
            ":3:3: defaults: unknown field `modle`, expected one of `agent`, `model`, `mode`, `timeout`, `approval_mode`",
        ),
        (
            "tmux:\n  width: wide\n",
            ":2:10: tmux.width: invalid type: string \"wide\", expected u16",
        ),
        (
            "defaults:\n  timeout: soon\n",
            ":2:12: defaults.timeout: invalid duration 'soon'",
        ),
        (
            "adapters:\n  gemini:\n    permissions: ask\n",
            ":3:18: adapters.gemini.permissions: unknown variant `ask`, expected `prompt` or `bypass`",
        ),
        (
            "adapters:\n  gemni: {}\n",
            ":2:3: adapters: unknown adapter `gemni`, expected one of `gemini`, `claude-code`, `codex`, `opencode`, `pi`, `jcode`, `qwen`, `copilot`, `antigravity`, `command`",
        ),
        (
            "defaults:\n\tagent: x\n",
            ":2:1: found character that cannot start any token",
        ),
        (
            "defaults:\n  mode: sideways\n",
            ":2:9: defaults.mode: unknown variant `sideways`, expected one of `interactive`, `batch`, `acp`",
        ),
    ];
    for (text, expected) in cases {
        project_config(&h, text);
        let (error, code) = h.json(&["submit", "hello"]);
        assert_eq!(
            (error["error"]["code"].as_str(), code),
            (Some("config_invalid"), 12),
            "{text}"
        );
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{}{expected}", file.display())),
            "{text:?}: {message}"
        );
        let output = h.run(&["submit", "hello"]);
        assert!(String::from_utf8_lossy(&output.stderr).starts_with("error[config_invalid]: "));
    }
    assert!(
        !h.project.join(".cuekit").exists(),
        "nothing may be submitted with a broken config"
    );
}

#[test]
fn configured_env_and_tmux_size_reach_the_pane() {
    let h = Harness::new();
    crate::harness::write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\necho \"from config: $CUEKIT_TEST_VAR\"; tput lines; tput cols\n",
    );
    project_config(
        &h,
        "adapters:\n  gemini:\n    env:\n      CUEKIT_TEST_VAR: \"it's here\"\ntmux:\n  width: 120\n  height: 40\n",
    );
    h.trust(&[]);
    let id = h.submit(&["--mode", "batch", "--no-events", "x"]);
    h.json(&["wait", &id, "--timeout", "10s"]);
    let transcript = h.transcript(&id);
    assert!(
        transcript.contains("from config: it's here"),
        "{transcript}"
    );
    assert!(transcript.contains("40\r\n120"), "{transcript}");
}

#[test]
fn init_writes_a_starter_once_and_ignores_the_task_directory() {
    let h = Harness::new();
    let (outcome, code) = h.json(&["init"]);
    assert_eq!(code, 0, "{outcome}");
    let written = std::fs::read_to_string(h.project.join(".cuekit.yaml")).unwrap();
    assert!(written.contains("defaults:"));
    assert_eq!(
        std::fs::read_to_string(h.project.join(".gitignore")).unwrap(),
        ".cuekit/\n"
    );
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        "defaults:\n  agent: gemini\n",
    )
    .unwrap();
    let (error, code) = h.json(&["init"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_state"), 5)
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join(".cuekit.yaml")).unwrap(),
        "defaults:\n  agent: gemini\n"
    );
    let (outcome, code) = h.json(&["init", "--force"]);
    assert_eq!((outcome["overwritten"].as_bool(), code), (Some(true), 0));
    assert_eq!(
        std::fs::read_to_string(h.project.join(".gitignore")).unwrap(),
        ".cuekit/\n"
    );
    // The starter parses: a dry run works with it.
    assert_eq!(dry_run(&h, &[]), "gemini --skip-trust -y 'x'");
    // A starter for another default agent is trusted as written too.
    let (outcome, code) = h.json(&["init", "--force", "--agent", "antigravity"]);
    assert_eq!(code, 0, "{outcome}");
    let (config, _) = h.json(&["config"]);
    let entry = |key: &str| {
        config
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["key"] == key)
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(entry("defaults.agent"), "antigravity", "{config}");
    assert_eq!(entry("trust"), "trusted", "{config}");
    assert!(dry_run(&h, &[]).starts_with("AGY_CLI_DISABLE_AUTO_UPDATE=true agy "));
    let (error, code) = h.json(&["init", "--force", "--agent", "gemni"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_input"), 3),
        "{error}"
    );
}

#[test]
fn adapters_lists_capabilities_as_the_design_names_them() {
    let h = Harness::new();
    let (adapters, code) = h.json(&["adapters"]);
    assert_eq!(code, 0);
    let gemini = &adapters[0];
    for (key, value) in [
        ("agent_kind", serde_json::json!("gemini")),
        ("supports_steering", serde_json::json!(true)),
        ("supports_attach", serde_json::json!(true)),
        ("supports_model_selection", serde_json::json!(true)),
        ("supports_artifacts", serde_json::json!(true)),
        ("supports_live_progress", serde_json::json!(false)),
        ("default_mode", serde_json::json!("interactive")),
        (
            "supported_modes",
            serde_json::json!(["interactive", "batch", "acp"]),
        ),
    ] {
        assert_eq!(gemini[key], value, "{key}");
    }
    let models: Vec<&str> = gemini["available_models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(models.contains(&"gemini-2.5-flash") && models.contains(&"flash"));
    let (warned, _) = h.json(&["submit", "--dry-run", "--model", "gemini-9-imaginary", "x"]);
    assert!(
        warned["warnings"][0]
            .as_str()
            .unwrap()
            .contains("gemini-9-imaginary")
    );
}

fn doctor(h: &Harness, extra_env: &[(&str, &str)]) -> (serde_json::Value, i32) {
    let mut command = h.cuekit();
    command.args(["--json", "doctor"]);
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (
        serde_json::from_slice(&output.stdout).unwrap(),
        output.status.code().unwrap(),
    )
}

fn check<'a>(checks: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {checks}"))
}

#[test]
fn doctor_in_a_bare_environment_fails_with_next_steps() {
    let h = Harness::new();
    let (checks, code) = doctor(&h, &[("PATH", h.bin.to_str().unwrap())]);
    assert_eq!(code, 1);
    for name in ["tmux", "gemini binary"] {
        assert_eq!(check(&checks, name)["level"], "fail", "{name}");
        assert!(
            check(&checks, name)["next_step"]
                .as_str()
                .unwrap()
                .contains("install")
        );
    }
    let text = String::from_utf8(
        h.cuekit()
            .env("PATH", &h.bin)
            .arg("doctor")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("FAIL  tmux: tmux is not installed\n      next: install tmux 3.2 or newer"),
        "{text}"
    );
}

#[test]
fn doctor_warns_about_missing_gemini_auth_and_passes_with_it() {
    let h = Harness::new().with_fake_gemini();
    crate::harness::write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\n[ \"$1\" = --version ] && echo 0.61.0\n",
    );
    let (checks, code) = doctor(&h, &[]);
    assert_eq!(code, 0, "{checks}");
    assert_eq!(check(&checks, "tmux")["level"], "ok");
    assert_eq!(check(&checks, "gemini binary")["level"], "ok");
    assert!(
        check(&checks, "gemini binary")["message"]
            .as_str()
            .unwrap()
            .starts_with("0.61.0 at ")
    );
    assert_eq!(check(&checks, "gemini auth")["level"], "warn");
    assert!(
        check(&checks, "gemini auth")["next_step"]
            .as_str()
            .unwrap()
            .contains("GEMINI_API_KEY")
    );
    let (checks, _) = doctor(&h, &[("GEMINI_API_KEY", "k")]);
    assert_eq!(check(&checks, "gemini auth")["level"], "ok");
    assert_eq!(
        check(&checks, "gemini auth")["message"],
        "GEMINI_API_KEY is set"
    );
    std::fs::create_dir_all(h.home.join(".gemini")).unwrap();
    std::fs::write(
        h.home.join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"oauth-personal"}}}"#,
    )
    .unwrap();
    // Personal Google login: the Gemini CLI no longer serves it, so doctor says what works.
    let (checks, _) = doctor(&h, &[]);
    let auth = check(&checks, "gemini auth");
    assert_eq!(auth["level"], "warn", "{auth}");
    let message = auth["message"].as_str().unwrap();
    assert!(
        message.starts_with("oauth-personal (Login with Google) selected in ")
            && message.contains("2026-06-18"),
        "{auth}"
    );
    let next = auth["next_step"].as_str().unwrap();
    assert!(
        next.contains("GEMINI_API_KEY") && next.contains("--agent antigravity"),
        "{auth}"
    );
    let (checks, _) = doctor(&h, &[("GOOGLE_GENAI_USE_GCA", "true")]);
    assert_eq!(check(&checks, "gemini auth")["level"], "warn");
    assert!(
        check(&checks, "gemini auth")["message"]
            .as_str()
            .unwrap()
            .starts_with("GOOGLE_GENAI_USE_GCA=true")
    );
    // A key chosen in the settings is fine.
    std::fs::write(
        h.home.join(".gemini/settings.json"),
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
    )
    .unwrap();
    let (checks, _) = doctor(&h, &[]);
    assert_eq!(check(&checks, "gemini auth")["level"], "ok");
    let (checks, _) = doctor(&h, &[("CI", "true")]);
    assert_eq!(check(&checks, "environment CI")["level"], "warn");
}

#[test]
fn doctor_does_not_hang_on_a_hung_binary() {
    let h = Harness::new();
    crate::harness::write_executable(&h.bin.join("gemini"), "#!/bin/sh\nsleep 600\n");
    // A hang guard, not a performance figure: the probe's timeout is 5 s; doctor must not wait
    // on the binary's 600 s.
    let output = h.bounded(&["doctor"], HANG_GUARD);
    let checks: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(check(&checks, "gemini binary")["level"], "warn");
    assert!(
        check(&checks, "gemini binary")["message"]
            .as_str()
            .unwrap()
            .contains("did not answer within")
    );
    let leftover = std::process::Command::new("pgrep")
        .args(["-f", &h.bin.join("gemini").display().to_string()])
        .output()
        .unwrap();
    assert!(
        leftover.stdout.is_empty(),
        "the hung probe was left running"
    );
}

#[test]
fn doctor_fix_creates_directories_and_the_gitignore_entry_and_reports_broken_records() {
    let h = Harness::new().with_fake_gemini();
    std::fs::create_dir(h.project.join(".git")).unwrap();
    let (checks, _) = doctor(&h, &[]);
    assert_eq!(check(&checks, "gitignore")["level"], "warn");
    let output = h
        .cuekit()
        .args(["--json", "doctor", "--fix"])
        .output()
        .unwrap();
    let checks: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(check(&checks, "gitignore")["level"], "ok");
    assert!(check(&checks, "gitignore")["fixed"].is_string());
    assert!(h.project.join(".cuekit/tasks").is_dir());
    assert!(h.home.join(".local/share/cuekit/tasks").is_dir());
    assert_eq!(
        std::fs::read_to_string(h.project.join(".gitignore")).unwrap(),
        ".cuekit/\n"
    );
    let broken = h.project.join(".cuekit/tasks/t_0123456789ab");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("task.json"), "{ not json").unwrap();
    let (checks, code) = doctor(&h, &[("GEMINI_API_KEY", "k")]);
    assert_eq!(code, 1);
    assert_eq!(check(&checks, "task records")["level"], "fail");
    assert!(
        check(&checks, "task records")["message"]
            .as_str()
            .unwrap()
            .contains("t_0123456789ab")
    );
}

#[test]
fn a_project_files_code_running_keys_need_the_persons_trust() {
    let h = Harness::new();
    // What a cloned repository could carry: a binary of its own and an environment for it.
    crate::harness::write_executable(&h.project.join("evil"), "#!/bin/sh\ntouch \"$0.ran\"\n");
    project_config(
        &h,
        "defaults:\n  model: flash\nadapters:\n  gemini:\n    bin: ./evil\n    env:\n      LD_PRELOAD: /x.so\n",
    );
    let ran = h.project.join("evil.ran");

    let (error, code) = h.json(&["submit", "--mode", "batch", "x"]);
    assert_eq!(code, 14, "{error}");
    assert_eq!(error["error"]["code"], "config_untrusted");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("adapters.gemini.bin")
            && message.contains("adapters.gemini.env.LD_PRELOAD"),
        "{message}"
    );
    assert!(
        error["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("cuekit trust")
    );
    // A dry run is refused the same way; keys that run nothing still apply.
    let (_, code) = h.json(&["submit", "--dry-run", "x"]);
    assert_eq!(code, 14);

    // doctor says so, and runs nothing the file names.
    let (checks, _) = h.json(&["doctor"]);
    let trust = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "config trust")
        .expect("a trust check");
    assert_eq!(trust["level"], "warn", "{trust}");
    assert!(!ran.exists(), "doctor ran the project's binary");

    let (config, _) = h.json(&["config"]);
    assert_eq!(config[0]["key"], "trust");
    assert_eq!(config[0]["value"]["state"], "untrusted");
    let entry = |config: &serde_json::Value, key: &str| {
        config
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .cloned()
            .unwrap()
    };
    assert_eq!(entry(&config, "defaults.model")["value"], "flash");
    assert_eq!(entry(&config, "adapters.gemini.bin")["value"], "gemini");

    // Trust is not given from inside a task's pane.
    let inside = h
        .cuekit()
        .arg("trust")
        .env("CUEKIT_TASK_ID", "t_0123456789ab")
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(5));
    // Nor by a process without a terminal (one a child detached with `setsid`).
    let detached = h.run(&["trust"]);
    assert_eq!(detached.status.code(), Some(25), "{detached:?}");

    h.trust(&[]);
    let (config, _) = h.json(&["config"]);
    assert_eq!(config[0]["value"], "trusted");
    assert_eq!(dry_run(&h, &[]), "./evil --skip-trust -y -m 'flash' 'x'");

    // Any change withdraws the trust.
    let file = h.project.join(".cuekit.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("flash", "pro")).unwrap();
    let (config, _) = h.json(&["config"]);
    assert_eq!(config[0]["value"]["state"], "changed");
    let (_, code) = h.json(&["submit", "--mode", "batch", "x"]);
    assert_eq!(code, 14);

    h.trust(&[]);
    h.trust(&["--revoke"]);
    let (_, code) = h.json(&["submit", "--mode", "batch", "x"]);
    assert_eq!(code, 14);
    assert!(!ran.exists());
}

/// The audit's tmux balloon: a project file asking for 65535 columns and two billion lines of
/// history gets the caps (one tmux server holds every task's pane).
#[test]
fn a_project_cannot_size_the_shared_tmux_server_without_bound() {
    let h = Harness::new();
    project_config(
        &h,
        "tmux:\n  width: 65535\n  height: 65535\n  history_limit: 2000000000\n",
    );
    let (entries, code) = h.json(&["config"]);
    assert_eq!(code, 0, "{entries}");
    let value = |key: &str| {
        entries
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == key)
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(value("tmux.width"), 1000);
    assert_eq!(value("tmux.height"), 500);
    assert_eq!(value("tmux.history_limit"), 200_000);
}

//! The real Gemini CLI as the parent: offline, with canned replies whose function calls are
//! named `mcp_cuekit_<tool>` (how Gemini CLI names an MCP server's tools), with cuekit registered
//! exactly as `cuekit mcp config --client gemini` prints it, delegating to a real Gemini child.

use crate::harness::{Harness, MODEL, canned_text, limits, poll, real_gemini};
use serde_json::{Value, json};

/// The child's id, chosen by the parent (submit_task's `id`), so canned calls can name it.
const CHILD: &str = "t_0123456789ab";

fn call(name: &str, args: Value) -> String {
    json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {
            "name": name, "args": args}}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}]})
    .to_string()
}

/// The parent's turns: submit a child under [`CHILD`], wait for it, read its result, then
/// answer `final_text`.
fn delegation(final_text: &str) -> Vec<String> {
    vec![
        call(
            "mcp_cuekit_submit_task",
            json!({"objective": "Say hello", "mode": "batch", "model": MODEL, "id": CHILD}),
        ),
        call("mcp_cuekit_wait", json!({"ids": [CHILD]})),
        call("mcp_cuekit_get_task_result", json!({"id": CHILD})),
        canned_text(final_text),
    ]
}

/// cuekit registered with the parent exactly as `cuekit mcp config --client gemini` prints
/// it, beside the API-key auth the offline CLI needs.
fn register_printed_snippet(h: &Harness) {
    let snippet: Value =
        serde_json::from_str(&h.ok(&["mcp", "config", "--client", "gemini"])).unwrap();
    let settings = h.home.join(".gemini/settings.json");
    let mut merged: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    merged["mcpServers"] = snippet["mcpServers"].clone();
    std::fs::write(&settings, merged.to_string()).unwrap();
}

/// What a client printed, both streams.
fn printed(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// Runs the parent once over `replies`; its stream-json output.
fn parent_run(h: &Harness, replies: &[String], prompt: &str) -> (String, std::process::ExitStatus) {
    let canned = h.root().join("parent.jsonl");
    std::fs::write(&canned, replies.join("\n") + "\n").unwrap();
    let output = h
        .program(&real_gemini())
        .args(["--fake-responses-non-strict"])
        .arg(&canned)
        .args([
            "-m",
            MODEL,
            "-y",
            "--skip-trust",
            "-o",
            "stream-json",
            "-p",
            prompt,
        ])
        .env("GEMINI_API_KEY", "offline-test-key")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the parent failed ({:?}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    (stdout, output.status)
}

/// The tool results the parent's stream reports, by tool name.
fn tool_results(stream: &str) -> Vec<(String, String)> {
    let mut names = std::collections::HashMap::new();
    let mut results = Vec::new();
    for line in stream.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match event["type"].as_str() {
            Some("tool_use") => {
                names.insert(
                    event["tool_id"].as_str().unwrap_or_default().to_string(),
                    event["tool_name"].as_str().unwrap_or_default().to_string(),
                );
            }
            Some("tool_result") => {
                let id = event["tool_id"].as_str().unwrap_or_default();
                results.push((
                    names.get(id).cloned().unwrap_or_default(),
                    event.to_string(),
                ));
            }
            _ => {}
        }
    }
    results
}

#[test]
fn a_gemini_parent_delegates_to_a_gemini_child_through_the_printed_snippet() {
    let h = Harness::new().with_real_gemini(&[canned_text("Child says hello.")]);
    // Registered as the snippet says, beside the API-key auth the offline CLI needs.
    register_printed_snippet(&h);

    let (stream, _) = parent_run(
        &h,
        &delegation("The child said hello."),
        "Delegate a greeting to a child agent",
    );
    let results = tool_results(&stream);
    let names: Vec<&str> = results.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp_cuekit_submit_task",
            "mcp_cuekit_wait",
            "mcp_cuekit_get_task_result"
        ],
        "{stream}"
    );
    assert!(
        results[2].1.contains("Child says hello."),
        "the child's answer did not reach the parent: {stream}"
    );
    assert!(stream.contains("The child said hello."), "{stream}");
    assert_eq!(h.status(CHILD)["status"], "completed");
}

/// The extension `cuekit mcp extension gemini` writes is one the real Gemini CLI links, with
/// its context file; a parent with only the extension (no `mcpServers` of its own) delegates.
#[test]
fn a_gemini_parent_delegates_through_the_linked_extension() {
    let h = Harness::new().with_real_gemini(&[canned_text("Child from the extension.")]);
    let dir = h.root().join("extension");
    let (written, code) = h.json(&["mcp", "extension", "gemini", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{written}");
    let linked = h
        .program(&real_gemini())
        .args(["extensions", "link"])
        .arg(&dir)
        .arg("--consent")
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .output()
        .unwrap();
    assert!(linked.status.success(), "{}", printed(&linked));
    let listed = h
        .program(&real_gemini())
        .args(["extensions", "list"])
        .output()
        .unwrap();
    let listed = printed(&listed);
    assert!(listed.contains("cuekit"), "{listed}");
    assert!(listed.contains("GEMINI.md"), "the context file: {listed}");

    let (stream, _) = parent_run(&h, &delegation("Done."), "Delegate a greeting");
    let results = tool_results(&stream);
    assert_eq!(results.len(), 3, "{stream}");
    assert!(
        results[2].1.contains("Child from the extension."),
        "{stream}"
    );
}

/// Each client's snippet, written where `cuekit mcp config` says it goes, is read by that real
/// client: `mcp list` names the server (Qwen Code and opencode also start it and connect).
#[test]
fn every_clients_snippet_is_read_by_the_real_client() {
    let h = Harness::new();
    let clients: [(&str, &str, &str, Option<&str>); 4] = [
        ("codex", ".codex/config.toml", "codex", None),
        ("qwen", ".qwen/settings.json", "qwen", Some("Connected")),
        (
            "opencode",
            ".config/opencode/opencode.json",
            "opencode",
            Some("connected"),
        ),
        ("copilot", ".copilot/mcp-config.json", "copilot", None),
    ];
    for (client, file, binary, connected) in clients {
        let snippet = h.ok(&["mcp", "config", "--client", client]);
        let path = h.home.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &snippet).unwrap();
        let listed = h
            .program(&crate::harness::installed_tool(binary))
            .args(["mcp", "list"])
            .env("CODEX_HOME", h.home.join(".codex"))
            .output()
            .unwrap();
        let shown = printed(&listed);
        assert!(
            shown.contains("cuekit"),
            "{client} does not list the server from\n{snippet}\n{shown}"
        );
        if let Some(word) = connected {
            assert!(shown.contains(word), "{client} did not connect: {shown}");
        }
    }
}

/// `cuekit mcp install` merges the entry into each client's own file: once (a second run
/// changes nothing), keeping what the file held (and a backup of it), never over a different
/// `cuekit` entry without --force; the real clients then list the server.
#[test]
fn mcp_install_merges_into_the_clients_file_once_and_keeps_what_was_there() {
    let h = Harness::new().with_real_gemini(&[canned_text("unused")]);
    let settings = h.home.join(".gemini/settings.json");
    let before = std::fs::read_to_string(&settings).unwrap();
    let (done, code) = h.json(&["mcp", "install", "--client", "gemini"]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["changed"], true, "{done}");
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(after["security"]["auth"]["selectedType"], "gemini-api-key");
    assert_eq!(after["mcpServers"]["cuekit"]["args"], json!(["mcp"]));
    let backup = std::path::PathBuf::from(done["backup"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(backup).unwrap(), before);
    let (again, _) = h.json(&["mcp", "install", "--client", "gemini"]);
    assert_eq!(again["changed"], false, "{again}");
    let listed = h
        .program(&real_gemini())
        .args(["mcp", "list"])
        .output()
        .unwrap();
    let listed = printed(&listed);
    assert!(listed.contains("cuekit"), "{listed}");

    // Codex: the table is appended to a file that has other settings and comments.
    let codex = h.home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(&codex, "# mine\nmodel = \"o4\"\n").unwrap();
    let (done, code) = h.json(&["mcp", "install", "--client", "codex"]);
    assert_eq!(code, 0, "{done}");
    let text = std::fs::read_to_string(&codex).unwrap();
    assert!(text.starts_with("# mine\nmodel = \"o4\"\n"), "{text}");
    assert_eq!(
        h.json(&["mcp", "install", "--client", "codex"]).0["changed"],
        false
    );
    let listed = h
        .program(&crate::harness::installed_tool("codex"))
        .args(["mcp", "list"])
        .env("CODEX_HOME", h.home.join(".codex"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("cuekit"));

    // Another `cuekit` entry is the user's until they say otherwise.
    let qwen = h.home.join(".qwen/settings.json");
    std::fs::create_dir_all(qwen.parent().unwrap()).unwrap();
    std::fs::write(
        &qwen,
        r#"{"mcpServers": {"cuekit": {"command": "/old/cuekit"}}}"#,
    )
    .unwrap();
    let (refused, code) = h.json(&["mcp", "install", "--client", "qwen"]);
    assert_eq!(code, 3, "{refused}");
    assert!(
        std::fs::read_to_string(&qwen)
            .unwrap()
            .contains("/old/cuekit")
    );
    let (forced, code) = h.json(&["mcp", "install", "--client", "qwen", "--force"]);
    assert_eq!(code, 0, "{forced}");
    assert!(
        !std::fs::read_to_string(&qwen)
            .unwrap()
            .contains("/old/cuekit")
    );
    // A file with comments is never rewritten.
    let copilot = h.home.join(".copilot/mcp-config.json");
    std::fs::create_dir_all(copilot.parent().unwrap()).unwrap();
    std::fs::write(&copilot, "{\n  // mine\n  \"mcpServers\": {}\n}\n").unwrap();
    let (refused, code) = h.json(&["mcp", "install", "--client", "copilot"]);
    assert_eq!(code, 3, "{refused}");

    // A project's file is project data: written in the project, never through a planted link.
    let (done, code) = h.json(&[
        "mcp", "install", "--client", "opencode", "--scope", "project",
    ]);
    assert_eq!(code, 0, "{done}");
    assert!(h.project.join("opencode.json").is_file());
    let elsewhere = h.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, h.project.join(".qwen")).unwrap();
    let (refused, code) = h.json(&["mcp", "install", "--client", "qwen", "--scope", "project"]);
    assert_eq!(refused["error"]["code"], "unsafe_project_data", "{refused}");
    assert_ne!(code, 0);
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
}

/// The Claude Code plugin `cuekit mcp extension claude` writes is one the real Claude Code
/// loads (`--plugin-dir`): its MCP server starts and connects.
#[test]
fn the_claude_code_plugin_is_loaded_by_the_real_claude_code() {
    let h = Harness::new();
    let dir = h.root().join("plugin");
    let (written, code) = h.json(&["mcp", "extension", "claude", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{written}");
    assert!(dir.join("skills/delegate/SKILL.md").is_file());
    // The Claude Code binary the Agent SDK ships (scripts/test installs it with the ACP bridge).
    let claude = crate::harness::tools_bin()
        .parent()
        .unwrap()
        .join("@anthropic-ai/claude-agent-sdk-linux-x64/claude");
    assert!(claude.exists(), "no Claude Code at {}", claude.display());
    let listed = h
        .program(&claude)
        .args(["--plugin-dir"])
        .arg(&dir)
        .args(["mcp", "list"])
        .env("GEMINI_API_KEY", "offline-test-key")
        .output()
        .unwrap();
    let shown = printed(&listed);
    assert!(
        shown.contains("plugin:cuekit:cuekit") && shown.contains("Connected"),
        "{shown}"
    );
}

/// Starts the real Gemini CLI as an interactive parent in session `session` of the test's tmux
/// server, registered as the printed snippet says, over `replies`, with `prompt` as its first
/// message.
fn parent_in_pane(h: &Harness, session: &str, replies: &[String], prompt: &str) {
    register_printed_snippet(h);
    h.gemini_parent_in_pane(session, replies, prompt);
}

/// The `cuekit_wake` lines of a task's events.
fn wakes(h: &Harness, id: &str) -> Vec<Value> {
    h.events_of(id, "cuekit_wake")
}

/// An interactive Gemini parent submits with wake_parent, then stays busy (a shell command)
/// past the child's end: the wake line is typed once, only after the parent went idle, as a
/// new message the parent answers by reading the result.
#[test]
fn a_busy_gemini_parent_is_woken_once_when_idle_and_reads_the_result() {
    const UNASKED: &str = "t_0123456789ad";
    let h = Harness::new().with_real_gemini(&[canned_text("Child says hello.")]);
    // A project's file cannot turn the wake on: only the child that asked wakes the parent.
    std::fs::write(h.project.join(".cuekit.yaml"), "notify: [parent]\n").unwrap();
    let slept = h.root().join("slept");
    let replies = [
        call(
            "mcp_cuekit_submit_task",
            json!({"objective": "Say hello", "mode": "batch", "model": MODEL, "id": CHILD,
                   "wake_parent": true}),
        ),
        call(
            "mcp_cuekit_submit_task",
            json!({"objective": "Say hello", "mode": "batch", "model": MODEL, "id": UNASKED}),
        ),
        // Busy well past the children's ends.
        crate::harness::canned_shell_call(&format!(
            "sleep 8; date -u +%Y-%m-%dT%H:%M:%S.%3NZ > '{}'",
            slept.display()
        )),
        canned_text("Submitted; I will be woken."),
        call("mcp_cuekit_get_task_result", json!({"id": CHILD})),
        canned_text("The child said hello."),
    ];
    parent_in_pane(&h, "parent", &replies, "Delegate a greeting");
    let shown = {
        let start = std::time::Instant::now();
        loop {
            let shown = h.history("parent");
            if shown.contains("The child said hello.") {
                break shown;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(90),
                "the parent never read the result; its pane:\n{shown}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    };
    let line = format!("[cuekit] {CHILD} completed (exit 0): call get_task_result");
    assert_eq!(shown.matches(&line).count(), 1, "{shown}");
    let child = h.status(CHILD);
    assert_eq!(child["status"], "completed");
    let slept_at = std::fs::read_to_string(&slept).unwrap().trim().to_string();
    // rfc3339 UTC times of one width compare as text.
    let ended_at = child["ended_at"].as_str().unwrap().to_string();
    assert!(
        ended_at < slept_at,
        "the child did not end while the parent was busy ({ended_at} vs {slept_at}): the test proves nothing"
    );
    // The wake is recorded once its Enter's receipt is read, which a loaded machine can take
    // longer to read than the parent takes to answer the line.
    assert!(
        poll(limits::TASK, || !wakes(&h, CHILD).is_empty()),
        "the wake typed was never recorded"
    );
    let woken = wakes(&h, CHILD);
    assert_eq!(woken.len(), 1, "{woken:?}");
    assert_eq!(woken[0]["wake"]["receipt"], "submitted", "{woken:?}");
    let typed_at = woken[0]["wake"]["typed_at"].as_str().unwrap();
    assert!(
        typed_at > slept_at.as_str(),
        "typed at {typed_at}, while the parent was busy until {slept_at}"
    );
    // No second wake on later looks, and none for the child that did not ask.
    h.monitor_ticks_pass(3);
    let later = h.history("parent");
    assert_eq!(later.matches(&line).count(), 1);
    assert_eq!(wakes(&h, CHILD).len(), 1);
    assert_eq!(h.status(UNASKED)["status"], "completed");
    assert!(wakes(&h, UNASKED).is_empty());
    assert!(!later.contains(&format!("[cuekit] {UNASKED}")), "{later}");
}

/// A submit typed at a shell wakes nobody: `--wake-parent` is refused there, and the user's
/// `notify: [parent]` types nothing into the shell's pane.
#[test]
fn nothing_is_typed_into_a_shell_pane() {
    let h = Harness::new();
    h.in_terminal(
        "shell",
        "submit --wake-parent --agent command -- /bin/true",
        (120, 30),
        true,
    );
    let shown = h.wait_pane("shell", "the refusal", |s| s.contains("exited with"));
    assert!(shown.contains("exited with 31"), "{shown}");
    assert!(
        shown.contains("no_parent_agent") || shown.contains("--wake-parent"),
        "{shown}"
    );

    h.user_config("notify: [parent]\n");
    h.in_terminal(
        "shell2",
        "submit --json --agent command -- /bin/sh -c 'sleep 1'",
        (120, 30),
        true,
    );
    let shown = h.wait_pane("shell2", "the submit", |s| s.contains("exited with"));
    assert!(shown.contains("exited with 0"), "{shown}");
    let id = shown
        .split('"')
        .find(|word| word.starts_with("t_") && word.len() == 14)
        .unwrap_or_else(|| panic!("no task id in {shown}"))
        .to_string();
    let (waited, _) = h.json(&["wait", &id, "--timeout", "30s"]);
    assert_eq!(waited["tasks"][0]["status"], "completed", "{waited}");
    h.monitor_ticks_pass(2);
    assert!(!h.history("shell2").contains("[cuekit]"));
    assert!(wakes(&h, &id).is_empty());
}

/// The real Gemini parent runs a team: an interactive child it steers, then cancels, and a
/// batch child; a wait on the team answers once both ended.
#[test]
fn a_gemini_parent_steers_cancels_and_waits_on_a_team() {
    const STEERED: &str = "t_0123456789ac";
    let h = Harness::new()
        .with_real_gemini(&[canned_text("First answer."), canned_text("Second answer.")]);
    register_printed_snippet(&h);
    let replies = [
        call(
            "mcp_cuekit_submit_task",
            json!({"objective": "Answer twice", "model": MODEL, "id": STEERED, "team": "crew"}),
        ),
        call(
            "mcp_cuekit_submit_task",
            json!({"objective": "Say hello", "mode": "batch", "model": MODEL, "id": CHILD,
                   "team": "crew"}),
        ),
        call(
            "mcp_cuekit_wait",
            json!({"ids": [STEERED], "until": "input_required"}),
        ),
        call(
            "mcp_cuekit_steer_task",
            json!({"id": STEERED, "message": "Say more"}),
        ),
        call("mcp_cuekit_cancel_tasks", json!({"ids": [STEERED]})),
        call("mcp_cuekit_wait", json!({"team": "crew"})),
        canned_text("The crew is done."),
    ];
    let (stream, _) = parent_run(&h, &replies, "Run a crew");
    let results = tool_results(&stream);
    let names: Vec<&str> = results.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp_cuekit_submit_task",
            "mcp_cuekit_submit_task",
            "mcp_cuekit_wait",
            "mcp_cuekit_steer_task",
            "mcp_cuekit_cancel_tasks",
            "mcp_cuekit_wait",
        ],
        "{stream}"
    );
    assert!(results[2].1.contains("input_required"), "{}", results[2].1);
    assert!(
        results[3].1.contains("submitted"),
        "the steer's receipt: {}",
        results[3].1
    );
    assert!(
        results[5].1.contains("completed") && results[5].1.contains("cancelled"),
        "{}",
        results[5].1
    );
    assert!(stream.contains("The crew is done."), "{stream}");
    assert_eq!(h.status(STEERED)["status"], "cancelled");
    assert_eq!(h.status(CHILD)["status"], "completed");
    // The steered message was typed into the child, with its receipt in the log.
    let events = std::fs::read_to_string(h.task_dir(STEERED).join("events.jsonl")).unwrap();
    assert!(events.contains("\"message\":\"Say more\""), "{events}");
}

//! `--mode acp` with the real Gemini CLI (0.61.0, offline with canned model replies): cuekit's
//! client in the pane drives `gemini --acp`; permissions are answered by the parent, steers go
//! over the protocol, the status is the protocol's, and nothing outlives a cancel or a killed
//! client. Real tmux on a private socket, real /bin/sh.

use crate::harness::limits;
use std::time::Duration;

use crate::harness::{
    Harness, MODEL, canned_shell_call as shell_call, canned_text, poll, processes_of,
};
use serde_json::Value;

/// Waits until the task's status satisfies `done`; its status.
fn wait_status(h: &Harness, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let ok = poll(limits::AGENT, || {
        last = h.status(id);
        done(&last)
    });
    assert!(ok, "{id} never got {what}: {last}\n{}", h.transcript(id));
    last
}

fn reason(view: &Value) -> Option<&str> {
    view["reason"].as_str()
}

/// The whole path: a permission request the parent answers, the tool really runs, a
/// second turn by steer, its answer in logs and result, a cancel during a long tool call.
#[test]
fn a_permission_is_answered_by_the_parent_and_steers_go_over_the_protocol() {
    let h = Harness::new().with_real_gemini(&[
        shell_call("echo hi > f.txt"),
        canned_text("Done: wrote f.txt."),
        canned_text("The second answer."),
        shell_call("sleep 30"),
    ]);
    // It asks for approvals: sandboxed by default, so the sandbox is shown the canned replies.
    h.show_real_gemini_to_sandbox();
    // Sandboxed in place: as root the child is uid 65534, which must be able to write here.
    h.project_for_sandbox();
    let id = h.submit(&[
        "--mode",
        "acp",
        "--model",
        MODEL,
        "--no-skip-permissions",
        "Create f.txt",
    ]);
    let asking = wait_status(&h, &id, "a permission request", |v| {
        reason(v) == Some("permission_prompt")
    });
    assert_eq!(asking["status"], "input_required");
    assert_eq!(asking["request"]["tool"]["kind"], "execute", "{asking}");
    assert_eq!(asking["request"]["tool"]["title"], "echo hi > f.txt");
    let options: Vec<&str> = asking["request"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(
        options.contains(&"allow_once") && options.contains(&"reject_once"),
        "{options:?}"
    );
    assert!(
        !h.project.join("f.txt").exists(),
        "the tool ran before it was allowed"
    );
    // `list` shows it too, and `wait --until input-required` returns on it.
    let (rows, _) = h.json(&["list"]);
    assert_eq!(rows[0]["reason"], "permission_prompt", "{rows}");
    let (waited, _) = h.json(&["wait", &id, "--until", "input-required", "--timeout", "5s"]);
    assert_eq!(
        waited["tasks"][0]["reason"], "permission_prompt",
        "{waited}"
    );

    let (approved, code) = h.json(&["approve", &id, "--allow"]);
    assert_eq!(code, 0, "{approved}");
    assert_eq!(approved["option"]["kind"], "allow_once");
    let idle = wait_status(&h, &id, "the end of its turn", |v| {
        reason(v) == Some("idle_at_prompt")
    });
    assert_eq!(idle["status"], "input_required");
    assert_eq!(
        std::fs::read_to_string(h.project.join("f.txt")).unwrap(),
        "hi\n"
    );

    let (receipt, code) = h.json(&["steer", &id, "And now?"]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("submitted"), 0),
        "{receipt}"
    );
    assert_eq!(receipt["delivery"], "protocol");
    assert!(poll(limits::TASK, || h
        .ok(&["logs", &id])
        .contains("The second answer.")));
    wait_status(&h, &id, "the second turn's end", |v| {
        reason(v) == Some("idle_at_prompt")
    });
    let (result, _) = h.json(&["result", &id]);
    let turns = result["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{result}");
    assert_eq!(turns[0]["stop_reason"], "end_turn");
    assert_eq!(turns[1]["text"], "The second answer.");
    assert_eq!(result["final_text"], "The second answer.");
    assert_eq!(result["tool_calls"][0]["status"], "completed", "{result}");
    // Live progress, as a batch task's: the turns and the tool call, and when the agent last spoke.
    let progress = &h.status(&id)["progress"];
    assert_eq!(progress["turns"], 2, "{progress}");
    assert_eq!(progress["tool_calls"], 1, "{progress}");
    assert!(progress["last_activity"].is_string(), "{progress}");

    // A third turn runs a long tool (allowed), and is cancelled during it.
    assert_eq!(h.json(&["steer", &id, "Wait a while"]).1, 0);
    wait_status(&h, &id, "the long tool's request", |v| {
        reason(v) == Some("permission_prompt")
    });
    h.ok(&["approve", &id, "--allow"]);
    assert!(poll(limits::TASK, || { common_sleeping(&id) }));
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(h.status(&id)["status"], "cancelled");
    assert!(
        poll(limits::SHORT, || processes_of(&id).is_empty()),
        "left running: {:?}",
        processes_of(&id)
    );
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"session/cancel\""),
        "the turn was cancelled over the protocol"
    );
    assert!(events.contains("cuekit_permission"));
}

/// Whether the task's `sleep 30` tool runs.
fn common_sleeping(id: &str) -> bool {
    processes_of(id).iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmd| cmd.split(|b| *b == 0).any(|w| w == b"30"))
    })
}

/// A child never answers its own requests: `cuekit approve` from the task's own tool is
/// refused, and so is a raw connection to the control socket from inside the pane.
#[test]
fn a_child_cannot_answer_its_own_requests_or_steer_itself() {
    let probe = "cuekit approve $CUEKIT_TASK_ID --allow-always >/dev/null 2>&1; \
                 echo approve-exit=$? > probe.txt; \
                 cuekit steer $CUEKIT_TASK_ID hello >/dev/null 2>&1; echo steer-exit=$? >> probe.txt";
    let h = Harness::new().with_real_gemini(&[shell_call(probe), canned_text("done")]);
    // With the bypass the first request is allowed by cuekit itself (and recorded).
    let id = h.submit(&["--mode", "acp", "--model", MODEL, "--once", "probe"]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let probe = std::fs::read_to_string(h.project.join("probe.txt")).unwrap();
    assert_eq!(probe, "approve-exit=30\nsteer-exit=30\n");
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(events.contains("\"by\":\"bypass\""), "{events}");
    assert_eq!(h.status(&id)["status"], "completed");
}

/// `--once` ends the session after its first turn: the task completes with exit 0.
#[test]
fn once_completes_after_the_first_turn() {
    let h = Harness::new().with_real_gemini(&[canned_text("All done.")]);
    let id = h.submit(&["--mode", "acp", "--model", MODEL, "--once", "Say done"]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("completed"), Some(0))
    );
    assert!(h.ok(&["logs", &id]).contains("All done."));
    assert_eq!(h.json(&["result", &id]).0["final_text"], "All done.");
}

/// Without credentials the agent refuses `session/new` (-32000): the task ends `failed` /
/// `auth_missing`, the agent's words in the transcript.
#[test]
fn an_agent_without_credentials_ends_auth_missing() {
    let h = Harness::new().with_real_gemini(&[canned_text("x")]);
    let h = h.env("GEMINI_API_KEY", "");
    let id = h.submit(&["--mode", "acp", "--model", MODEL, "x"]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", "60s"]);
    assert_eq!(code, 20, "{waited}");
    let status = h.status(&id);
    assert_eq!(
        (status["reason"].as_str(), status["exit_code"].as_i64()),
        (Some("auth_missing"), Some(41)),
        "{status}"
    );
    assert!(
        h.transcript(&id).contains("API key"),
        "{}",
        h.transcript(&id)
    );
}

/// A client killed at any instant takes the agent with it, and its task never reads completed.
#[test]
fn a_client_killed_at_any_instant_leaves_no_agent_and_no_false_completion() {
    for delay in [0u64, 300, 900, 2000] {
        let h = Harness::new().with_real_gemini(&[shell_call("sleep 20"), canned_text("x")]);
        let id = h.submit(&["--mode", "acp", "--model", MODEL, "go"]);
        let client = || {
            processes_of(&id).into_iter().find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|cmd| cmd.split(|b| *b == 0).any(|w| w == b"__acp"))
            })
        };
        assert!(poll(limits::SHORT, || client().is_some()));
        std::thread::sleep(Duration::from_millis(delay));
        if let Some(client) = client() {
            unsafe_kill(client);
        }
        let (waited, _) = h.json(&["wait", &id, "--timeout", "30s"]);
        let status = h.status(&id);
        assert_ne!(status["status"], "completed", "delay {delay}: {waited}");
        assert!(
            poll(limits::SHORT, || processes_of(&id).is_empty()),
            "delay {delay}: left running {:?}",
            processes_of(&id)
        );
    }
}

fn unsafe_kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

/// `--resume-from` an ACP task continues its agent session with `session/load`: the agent
/// replays the earlier conversation, and the new prompt is a turn of the same session.
#[test]
fn resume_from_an_acp_task_loads_its_session() {
    let h = Harness::new().with_real_gemini(&[canned_text("First answer.")]);
    let first = h.submit(&[
        "--mode",
        "acp",
        "--model",
        MODEL,
        "--once",
        "Remember the word tangerine",
    ]);
    let (waited, code) = h.json(&["wait", &first, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&first));
    let session = h.json(&["result", &first]).0["agent_session_id"]
        .as_str()
        .expect("the first task's ACP session id")
        .to_string();

    let second = h.submit(&[
        "--mode",
        "acp",
        "--model",
        MODEL,
        "--once",
        "--resume-from",
        &first,
        "What was the word?",
    ]);
    // The Gemini CLI would overwrite a session it started in the same minute: the client waits
    // for the next minute before it loads, so this may take up to a minute longer.
    let (waited, code) = h.json(&["wait", &second, "--timeout", "150s"]);
    let events = std::fs::read_to_string(h.task_dir(&second).join("events.jsonl")).unwrap();
    assert_eq!(code, 0, "{waited}\n{}\n{events}", h.transcript(&second));
    let load = events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["message"]["method"] == "session/load")
        .unwrap_or_else(|| panic!("no session/load sent:\n{events}"));
    assert_eq!(load["message"]["params"]["sessionId"], session.as_str());
    assert!(
        !events.contains("\"session/new\""),
        "a resumed task opened a new session:\n{events}"
    );
    // The agent replayed the earlier turn: its prompt is in the resumed task's transcript.
    assert!(
        h.transcript(&second).contains("tangerine"),
        "{}",
        h.transcript(&second)
    );
    let result = h.json(&["result", &second]).0;
    assert_eq!(result["agent_session_id"], session.as_str());
    // The replayed history is no part of the new turn.
    assert_eq!(result["final_text"], "First answer.", "{result}");
}

/// Whichever agent runs behind the client, one without credentials ends `failed` /
/// `auth_missing` with its own words: qwen refuses `session/new`, Claude's bridge opens a
/// session and refuses the first prompt (both with ACP's -32000).
#[test]
fn other_agents_without_credentials_end_auth_missing_too() {
    for (kind, program) in [("qwen", "qwen"), ("claude-code", "claude-agent-acp")] {
        let h = Harness::new();
        let wrapper = format!(
            "#!/bin/sh\nPATH='{}':$PATH exec '{}' \"$@\"\n",
            crate::harness::tools_bin().display(),
            crate::harness::installed_tool(program).display()
        );
        crate::harness::write_executable(&h.bin.join(program), &wrapper);
        let id = h.submit(&["--agent", kind, "--mode", "acp", "hello"]);
        let (waited, code) = h.json(&["wait", &id, "--timeout", "60s"]);
        assert_eq!(code, 20, "{kind}: {waited}\n{}", h.transcript(&id));
        let status = h.status(&id);
        assert_eq!(
            (status["reason"].as_str(), status["exit_code"].as_i64()),
            (Some("auth_missing"), Some(41)),
            "{kind}: {status}\n{}",
            h.transcript(&id)
        );
        assert!(
            h.transcript(&id).contains("uthenticat"),
            "{kind}: {}",
            h.transcript(&id)
        );
        assert!(
            poll(limits::SHORT, || processes_of(&id).is_empty()),
            "{kind}: left running: {:?}",
            processes_of(&id)
        );
    }
}

//! `cuekit mcp` driven by a real MCP client nobody here wrote: the official Python SDK (`mcp`
//! from PyPI) through tests/fixtures/mcp/client.py, against real tmux and the real `cuekit`
//! binary. Python is `.tools/venv/bin/python` (scripts/test installs the SDK there) or
//! `CUEKIT_TEST_PYTHON`.

use crate::harness::limits;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use crate::harness::git::git;
use crate::harness::{Harness, MODEL, canned_text};
use serde_json::{Value, json};

static NEXT_LOG: AtomicUsize = AtomicUsize::new(0);

/// Sorted: the names are public API.
const TOOLS: [&str; 16] = [
    "answer_permission",
    "cancel_tasks",
    "get_conflicts",
    "get_status",
    "get_task_diff",
    "get_task_result",
    "get_task_snapshot",
    "handoff_task",
    "list",
    "merge_task",
    "next_event",
    "remove_tasks",
    "retry_task",
    "steer_task",
    "submit_task",
    "wait",
];

fn python() -> PathBuf {
    crate::harness::tools_ready();
    let path = std::env::var_os("CUEKIT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin/python"));
    assert!(
        path.exists(),
        "no Python with the MCP SDK at {}: run scripts/test (it installs `mcp` into .tools/venv)",
        path.display()
    );
    path
}

/// One MCP client session: the Python SDK's client, which starts its own `cuekit mcp`.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
    initialize: Value,
}

impl Client {
    fn start(h: &Harness) -> Client {
        let cuekit = h.cuekit();
        let mut command = Command::new(python());
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.py"))
            .arg(env!("CARGO_BIN_EXE_cuekit"))
            .current_dir(cuekit.get_current_dir().unwrap());
        // The harness's environment (private tmux socket, temp HOME, bin/ on PATH); the client
        // hands all of it to the server it starts.
        for (name, value) in cuekit.get_envs() {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        let log = h.root().join(format!(
            "mcp-client-{}.log",
            NEXT_LOG.fetch_add(1, Ordering::SeqCst)
        ));
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Client {
            child,
            stdin,
            stdout,
            log,
            initialize: Value::Null,
        };
        client.initialize = client.read_line()["initialize"].clone();
        client
    }

    fn read_line(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|err| {
            panic!(
                "MCP client: not a JSON line ({err}): {line:?}\nclient and server stderr:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            )
        })
    }

    fn request(&mut self, request: Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        self.read_line()
    }

    fn tools(&mut self) -> Vec<Value> {
        let reply = self.request(json!({"op": "list_tools"}));
        reply["tools"].as_array().unwrap().clone()
    }

    /// The raw reply to a tool call: `{"result": …}` or `{"protocol_error": …}`.
    fn call_raw(&mut self, tool: &str, arguments: Value) -> Value {
        self.request(json!({"op": "call", "tool": tool, "arguments": arguments}))
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.call_raw(tool, arguments.clone());
        assert!(reply.get("result").is_some(), "{tool} {arguments}: {reply}");
        reply["result"].clone()
    }

    /// A successful call's structured content.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone());
        assert_eq!(result["isError"], false, "{tool} {arguments}: {result}");
        // The text content is the same JSON, for clients that only read text.
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            result["structuredContent"]
        );
        result["structuredContent"].clone()
    }

    /// A tool error's `{code, message, hint}`.
    fn error(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone());
        assert_eq!(result["isError"], true, "{tool} {arguments}: {result}");
        let error = result["structuredContent"]["error"].clone();
        assert!(error["message"].is_string(), "{result}");
        error
    }

    fn error_code(&mut self, tool: &str, arguments: Value) -> String {
        self.error(tool, arguments)["code"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Calls `wait` until it stops timing out (each call is capped by the server).
    fn wait(&mut self, arguments: Value) -> Value {
        for _ in 0..6 {
            let waited = self.ok("wait", arguments.clone());
            if waited["timed_out"] == false {
                return waited;
            }
            assert!(waited["hint"].as_str().unwrap().contains("call wait again"));
        }
        panic!("wait {arguments} never finished");
    }
}

impl Drop for Client {
    /// Closing stdin ends the session; the SDK then stops the server.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn submit(client: &mut Client, arguments: Value) -> String {
    let submitted = client.ok("submit_task", arguments);
    assert_eq!(submitted["task"]["status"], "running", "{submitted}");
    submitted["task"]["id"].as_str().unwrap().to_string()
}

#[test]
fn initialize_lists_every_tool_with_a_schema() {
    let h = Harness::new();
    let mut client = Client::start(&h);
    assert_eq!(client.initialize["serverInfo"]["name"], "cuekit");
    assert!(client.initialize["capabilities"]["tools"].is_object());
    assert!(
        client.initialize["instructions"]
            .as_str()
            .unwrap()
            .contains("submit_task")
    );

    let tools = client.tools();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        assert!(tool["description"].as_str().unwrap().len() > 40, "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");
    }
    let schema =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"].clone();
    let submit = schema("submit_task");
    assert_eq!(submit["required"], json!(["objective"]));
    for field in [
        "objective",
        "agent_kind",
        "model",
        "mode",
        "approval_mode",
        "dangerously_skip_permissions",
        "cwd",
        "timeout",
        "context",
        "constraints",
    ] {
        assert!(submit["properties"][field].is_object(), "{field}: {submit}");
    }
    assert!(submit.to_string().contains(r#""interactive""#), "{submit}");
    assert!(submit.to_string().contains(r#""batch""#), "{submit}");
    // Tasks are named by ids or by a team; the server refuses neither and both.
    let status = schema("get_status");
    assert!(status["properties"]["ids"].is_object(), "{status}");
    assert!(status["properties"]["team"].is_object(), "{status}");
    for tool in [
        "list",
        "wait",
        "cancel_tasks",
        "steer_task",
        "get_task_result",
    ] {
        assert!(schema(tool)["properties"]["team"].is_object(), "{tool}");
    }
    assert!(submit["properties"]["role"].is_object(), "{submit}");
    assert!(submit["properties"]["team"].is_object(), "{submit}");
    let wait = schema("wait");
    assert_eq!(wait["properties"]["timeout_seconds"]["maximum"], 50.0);
    assert!(wait.to_string().contains("input_required"), "{wait}");
    assert_eq!(schema("steer_task")["required"], json!(["message"]));
    assert!(wait.to_string().contains(r#""report""#), "{wait}");
    assert!(schema("list").to_string().contains("adapters"));

    let adapters = client.ok("list", json!({"kind": "adapters"}));
    assert_eq!(adapters["adapters"][0]["agent_kind"], "gemini");
    assert_eq!(
        client.ok("list", json!({}))["tasks"],
        json!([]),
        "a new project has no tasks"
    );
}

#[test]
fn bad_arguments_are_invalid_input_and_unknown_ids_task_not_found() {
    let h = Harness::new().with_fake_gemini();
    let mut client = Client::start(&h);
    // Arguments that do not fit the schema: a tool error the model can correct, with the code.
    for (tool, arguments) in [
        ("get_status", json!({"ids": "t_0123456789ab"})),
        ("get_status", json!({})),
        ("get_status", json!({"ids": []})),
        (
            "get_status",
            json!({"ids": ["t_0123456789ab"], "team": "a"}),
        ),
        ("get_task_result", json!({})),
        ("steer_task", json!({"message": "hi"})),
        ("wait", json!({"team": "no such team!"})),
        ("submit_task", json!({"objective": "x", "role": "../etc"})),
        ("submit_task", json!({"objective": "x", "team": "a b"})),
        ("submit_task", json!({})),
        ("submit_task", json!({"objective": "x", "mode": "sideways"})),
        ("submit_task", json!({"objective": "x", "colour": "blue"})),
        ("submit_task", json!({"objective": "   "})),
        ("submit_task", json!({"objective": "x", "timeout": "soon"})),
        (
            "submit_task",
            json!({"objective": "x", "agent_kind": "nope"}),
        ),
        (
            "submit_task",
            json!({"objective": "x", "cwd": "no/such/dir"}),
        ),
        (
            "wait",
            json!({"ids": ["t_0123456789ab"], "timeout_seconds": 3600}),
        ),
        ("wait", json!({"ids": ["t_0123456789ab"], "mode": "some"})),
        ("list", json!({"kind": "panes"})),
        (
            "get_task_snapshot",
            json!({"id": "t_0123456789ab", "lines": 0}),
        ),
        (
            "cancel_tasks",
            json!({"ids": ["t_0123456789ab"], "grace_seconds": 600}),
        ),
    ] {
        let error = client.error(tool, arguments.clone());
        assert_eq!(
            error["code"], "invalid_input",
            "{tool} {arguments}: {error}"
        );
    }
    // An unknown tool is a protocol error (JSON-RPC invalid params).
    let reply = client.call_raw("run_shell", json!({"command": "true"}));
    assert_eq!(reply["protocol_error"]["code"], -32602, "{reply}");

    // Unknown ids, and anything that is not a cuekit task id (a tmux target), are not found.
    for id in [
        "t_0123456789ab",
        "%0",
        "=cuekit-task-t_0123456789ab",
        "../etc",
    ] {
        for (tool, arguments) in [
            ("get_status", json!({"ids": [id]})),
            ("steer_task", json!({"id": id, "message": "hi"})),
            ("cancel_tasks", json!({"ids": [id]})),
            ("wait", json!({"ids": [id], "timeout_seconds": 1})),
            ("get_task_result", json!({"id": id})),
            ("get_task_snapshot", json!({"id": id})),
        ] {
            assert_eq!(
                client.error_code(tool, arguments.clone()),
                "task_not_found",
                "{tool} {arguments}"
            );
        }
    }
    assert!(
        !h.project.join(".cuekit").exists(),
        "nothing was submitted by a bad call"
    );
}

#[test]
fn an_interactive_task_from_submit_to_result_with_the_fake() {
    let h = Harness::new().with_fake_gemini();
    let mut client = Client::start(&h);
    let id = submit(
        &mut client,
        json!({"objective": "hello from mcp", "constraints": ["be brief"], "timeout": "10m"}),
    );
    // The task directory is owner-only (prompts and transcripts may hold private code).
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&h.task_dir(&id)), 0o700);
    assert_eq!(mode(&h.task_dir(&id).join("transcript.txt")), 0o600);

    let status = client.ok("get_status", json!({"ids": [id]}));
    assert_eq!(status["tasks"][0]["id"], id.as_str());
    assert_eq!(status["tasks"][0]["mode"], "interactive");
    let listed = client.ok("list", json!({}));
    assert_eq!(listed["tasks"][0]["id"], id.as_str());
    assert_eq!(
        client.ok("list", json!({"all": true}))["tasks"][0]["id"],
        id.as_str()
    );

    // A wait that runs out says so, with a hint, and is not an error.
    let waited = client.ok("wait", json!({"ids": [id], "timeout_seconds": 0.2}));
    assert_eq!(waited["timed_out"], true, "{waited}");
    assert!(waited["hint"].as_str().unwrap().contains("call wait again"));

    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("Type your message")
    });
    let receipt = client.ok("steer_task", json!({"id": id, "message": "second message"}));
    assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    assert_eq!(receipt["task_id"], id.as_str());
    assert_eq!(receipt["delivery"], "typed");
    h.wait_until(&id, "the reply", limits::SHORT, || {
        h.ok(&["logs", &id]).contains("reply to: second message")
    });
    let snapshot = client.ok("get_task_snapshot", json!({"id": id, "lines": 3}));
    assert_eq!(snapshot["task"]["id"], id.as_str());
    let tail = snapshot["transcript_tail"].as_str().unwrap();
    assert!(tail.contains("reply to: second message"), "{snapshot}");
    assert!(snapshot["lines"].as_u64().unwrap() <= 3, "{snapshot}");
    assert!(
        !tail.contains("FAKE-GEMINI-START"),
        "only the last lines: {tail}"
    );

    // The fake ends on /quit: the task completes.
    let receipt = client.ok("steer_task", json!({"id": id, "message": "/quit"}));
    assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    let waited = client.wait(json!({"ids": [id]}));
    assert_eq!(waited["all_completed"], true, "{waited}");
    assert_eq!(waited["tasks"][0]["status"], "completed");
    assert_eq!(waited["tasks"][0]["exit_code"], 0);

    let result = client.ok("get_task_result", json!({"id": id}));
    assert_eq!(result["result"]["task_id"], id.as_str(), "{result}");
    assert_eq!(result["result"]["status"], "completed", "{result}");
    assert_eq!(result["result"]["exit_code"], 0, "{result}");

    // Steering an ended task, and cancelling one (only its session is cleaned up).
    let error = client.error("steer_task", json!({"id": id, "message": "more"}));
    assert_eq!(error["code"], "invalid_state", "{error}");
    assert!(error["hint"].is_string());
    let cancelled = client.ok("cancel_tasks", json!({"ids": [id]}));
    assert_eq!(cancelled["tasks"][0]["status"], "completed");

    // The same record as the CLI sees it.
    assert_eq!(h.status(&id)["status"], "completed");
}

#[test]
fn a_worktree_task_is_diffed_merged_and_removed_over_mcp() {
    let h = Harness::new().with_fake_gemini();
    git(&h.project, &["init", "-q", "-b", "main"]);
    git(&h.project, &["config", "user.name", "Test"]);
    git(&h.project, &["config", "user.email", "test@example.com"]);
    std::fs::write(h.project.join(".gitignore"), ".cuekit/\n").unwrap();
    git(&h.project, &["add", "-A"]);
    git(&h.project, &["commit", "-qm", "init"]);
    let mut client = Client::start(&h);
    let plain = submit(&mut client, json!({"objective": "x", "mode": "batch"}));
    let id = submit(
        &mut client,
        json!({"objective": "add a file", "mode": "batch", "worktree": true, "branch": "mcp-work"}),
    );
    client.wait(json!({"ids": [id, plain]}));
    let status = client.ok("get_status", json!({"ids": [id]}));
    assert_eq!(status["tasks"][0]["branch"], "mcp-work", "{status}");
    let worktree = PathBuf::from(status["tasks"][0]["worktree"].as_str().unwrap());
    // What the child would have written.
    std::fs::write(worktree.join("added.txt"), "from the child\n").unwrap();
    let diff = client.ok("get_task_diff", json!({"id": id}));
    assert_eq!(diff["diff"]["files"][0]["path"], "added.txt", "{diff}");
    assert!(
        diff["diff"]["patch"]
            .as_str()
            .unwrap()
            .contains("+from the child")
    );
    assert_eq!(
        client.error_code("merge_task", json!({"id": plain})),
        "invalid_state"
    );
    let merged = client.ok("merge_task", json!({"id": id, "strategy": "squash"}));
    assert_eq!(merged["merged"]["target"], "main", "{merged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("added.txt")).unwrap(),
        "from the child\n"
    );
    let planned = client.ok("remove_tasks", json!({"ids": [id], "dry_run": true}));
    assert_eq!(
        planned["removed"][0]["outcome"], "would_remove",
        "{planned}"
    );
    let removed = client.ok("remove_tasks", json!({"ids": [id]}));
    assert_eq!(removed["removed"][0]["outcome"], "removed", "{removed}");
    assert!(!worktree.exists());
    assert_eq!(
        client.error_code(
            "submit_task",
            json!({"objective": "x", "worktree": true, "base": "no-such-ref"})
        ),
        "invalid_input"
    );
}

#[test]
fn cancel_and_batch_rules_over_mcp() {
    let h = Harness::new().with_fake_gemini();
    let mut client = Client::start(&h);
    let id = submit(&mut client, json!({"objective": "run until cancelled"}));
    let batch = submit(
        &mut client,
        json!({"objective": "one shot", "mode": "batch", "model": MODEL}),
    );
    assert_eq!(
        client.error_code("steer_task", json!({"id": batch, "message": "more"})),
        "steering_unsupported"
    );
    let cancelled = client.ok("cancel_tasks", json!({"ids": [id], "grace_seconds": 1}));
    assert_eq!(cancelled["tasks"][0]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["tasks"][0]["reason"], "cancelled");
    let waited = client.wait(json!({"ids": [id, batch], "mode": "all"}));
    let statuses: Vec<&str> = waited["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses[0], "cancelled", "{waited}");
    assert_eq!(waited["all_completed"], false, "{waited}");
    assert_eq!(
        client.ok("get_task_result", json!({"id": id}))["result"]["status"],
        "cancelled"
    );
    assert_eq!(h.status(&id)["status"], "cancelled");
}

/// A parent builds a pipeline: the second task waits `queued` on the first, then runs; a
/// failed task is started again with retry_task under the same id.
#[test]
fn a_dependency_waits_queued_and_an_ended_task_is_retried_over_mcp() {
    let h = Harness::new().with_fake_gemini();
    let mut client = Client::start(&h);
    // The first task holds its dependent queued until the test has read its place and
    // cancelled it, however slow the machine: it waits for a gate the test opens.
    let gate = h.root().join("go");
    let first = h.submit_sh(
        &format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display()),
        &["--mode", "batch"],
    );
    let queued = client.ok(
        "submit_task",
        json!({"objective": "second", "agent_kind": "gemini", "after": [first], "model": MODEL}),
    );
    let task = &queued["task"];
    assert_eq!(task["status"], "queued", "{queued}");
    assert_eq!(
        task["mode"], "batch",
        "a dependent runs to its end: {queued}"
    );
    assert_eq!(task["queue"]["waiting_for"][0], first.as_str(), "{queued}");
    let status = client.ok("get_status", json!({"ids": [task["id"]]}));
    assert_eq!(status["tasks"][0]["queue"]["place"], 1, "{status}");
    let (cancelled, _) = h.json(&["cancel", task["id"].as_str().unwrap()]);
    assert_eq!(cancelled[0]["status"], "cancelled", "{cancelled}");
    std::fs::write(&gate, "").unwrap();
    h.wait_ok(&[&first], &limits::arg(limits::TASK));

    let failing = h.submit_sh("exit 7", &["--mode", "batch"]);
    let waited = client.wait(json!({"ids": [failing], "mode": "all"}));
    assert_eq!(waited["tasks"][0]["status"], "failed", "{waited}");
    let retried = client.ok("retry_task", json!({"id": failing}));
    assert_eq!(retried["task"]["id"], failing.as_str(), "{retried}");
    let waited = client.wait(json!({"ids": [failing], "mode": "all"}));
    assert_eq!(waited["tasks"][0]["status"], "failed", "{waited}");
    assert_eq!(waited["tasks"][0]["queue"]["attempt"], 2, "{waited}");
    assert_eq!(
        client.error_code("retry_task", json!({"id": first})),
        "invalid_state",
        "a completed task has nothing to retry"
    );
}

#[test]
fn a_team_with_a_role_is_followed_through_team_parameters() {
    let h = Harness::new().with_fake_gemini();
    let mut client = Client::start(&h);
    let members: Vec<String> = (0..2)
        .map(|n| {
            submit(
                &mut client,
                json!({"objective": format!("member {n}"), "role": "worker", "team": "crew",
                       "mode": "interactive"}),
            )
        })
        .collect();
    let outsider = submit(&mut client, json!({"objective": "not in the crew"}));
    let status = client.ok("get_status", json!({"team": "crew"}));
    assert_eq!(status["total"], 2, "{status}");
    assert_eq!(status["tasks"][0]["role"], "worker", "{status}");
    let listed = client.ok("list", json!({"team": "crew"}));
    let listed: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, members);
    for id in &members {
        h.wait_until(id, "the prompt", limits::SHORT, || {
            h.screen(id).contains("Type your message")
        });
    }
    let steered = client.ok("steer_task", json!({"team": "crew", "message": "status?"}));
    assert_eq!(
        steered["receipts"].as_array().unwrap().len(),
        2,
        "{steered}"
    );
    let waited = client.ok("wait", json!({"team": "crew", "timeout_seconds": 0.2}));
    assert_eq!(waited["timed_out"], true, "{waited}");
    let cancelled = client.ok("cancel_tasks", json!({"team": "crew", "grace_seconds": 1}));
    assert_eq!(
        cancelled["tasks"].as_array().unwrap().len(),
        2,
        "{cancelled}"
    );
    let results = client.ok("get_task_result", json!({"team": "crew"}));
    assert_eq!(results["team"], "crew");
    assert_eq!(results["results"][1]["status"], "cancelled", "{results}");
    assert_ne!(
        h.status(&outsider)["status"],
        "cancelled",
        "not in the team"
    );
    assert_eq!(
        client.error_code("wait", json!({"team": "nobody"})),
        "task_not_found"
    );
    client.ok("cancel_tasks", json!({"ids": [outsider]}));
}

#[test]
fn an_interactive_gemini_task_is_steered_and_read_over_mcp() {
    let h =
        Harness::new().with_real_gemini(&[canned_text("Answer one."), canned_text("Answer two.")]);
    let mut client = Client::start(&h);
    let id = submit(
        &mut client,
        json!({"objective": "First question", "model": MODEL}),
    );
    let until_input = json!({"ids": [id], "until": "input_required"});
    let waited = client.wait(until_input.clone());
    assert_eq!(waited["tasks"][0]["status"], "input_required", "{waited}");
    assert_eq!(waited["tasks"][0]["reason"], "idle_at_prompt", "{waited}");
    let snapshot = client.ok("get_task_snapshot", json!({"id": id, "lines": 200}));
    assert_eq!(snapshot["task"]["status"], "input_required");
    assert!(
        snapshot["transcript_tail"]
            .as_str()
            .unwrap()
            .contains("Answer one."),
        "{snapshot}"
    );

    let receipt = client.ok(
        "steer_task",
        json!({"id": id, "message": "Second question"}),
    );
    assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    h.wait_until(&id, "the second answer", limits::AGENT, || {
        h.ok(&["logs", &id]).contains("Answer two.")
    });
    client.wait(until_input);
    let snapshot = client.ok("get_task_snapshot", json!({"id": id, "lines": 200}));
    assert!(
        snapshot["transcript_tail"]
            .as_str()
            .unwrap()
            .contains("Answer two."),
        "{snapshot}"
    );

    let cancelled = client.ok("cancel_tasks", json!({"ids": [id]}));
    assert_eq!(cancelled["tasks"][0]["status"], "cancelled");
    let result = client.ok("get_task_result", json!({"id": id}));
    assert_eq!(result["result"]["status"], "cancelled", "{result}");
    assert_eq!(
        client.error_code("steer_task", json!({"id": id, "message": "too late"})),
        "invalid_state"
    );
}

/// An AI parent's whole ACP loop over MCP: submit in acp mode without the bypass, wait until
/// the child asks, read the request, answer it, and read the result of the one turn.
#[test]
fn an_acp_task_asks_and_the_parent_answers_over_mcp() {
    let shell = crate::harness::canned_shell_call("echo mcp > g.txt");
    let h = Harness::new().with_real_gemini(&[shell, canned_text("Wrote g.txt.")]);
    // It asks for approvals and an MCP client cannot choose no sandbox: sandboxed.
    h.show_real_gemini_to_sandbox();
    // Sandboxed in place: as root the child is uid 65534, which must be able to write here.
    h.project_for_sandbox();
    let mut client = Client::start(&h);
    let id = submit(
        &mut client,
        json!({"objective": "Write g.txt", "model": MODEL, "mode": "acp",
               "dangerously_skip_permissions": false}),
    );
    let waited = client.wait(json!({"ids": [id], "until": "input_required"}));
    let task = &waited["tasks"][0];
    assert_eq!(task["reason"], "permission_prompt", "{waited}");
    assert_eq!(task["request"]["tool"]["kind"], "execute", "{waited}");
    assert!(!h.project.join("g.txt").exists());
    let approval = client.ok("answer_permission", json!({"id": id, "answer": "allow"}));
    assert_eq!(approval["option"]["kind"], "allow_once", "{approval}");
    assert_eq!(
        client.error_code("answer_permission", json!({"id": id})),
        "invalid_state",
        "a second answer to the same request"
    );
    // MCP's acp mode ends the session after its first turn: the task completes.
    let done = client.wait(json!({"ids": [id]}));
    assert_eq!(done["tasks"][0]["status"], "completed", "{done}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("g.txt")).unwrap(),
        "mcp\n"
    );
    let result = client.ok("get_task_result", json!({"id": id}));
    assert_eq!(result["result"]["final_text"], "Wrote g.txt.", "{result}");
}

#[test]
fn several_servers_in_one_project_never_corrupt_a_record() {
    const SERVERS: usize = 4;
    const TASKS_EACH: usize = 3;
    let h = Arc::new(Harness::new().with_fake_gemini());
    let start = Arc::new(Barrier::new(SERVERS));
    let submitted = Arc::new(Barrier::new(SERVERS));
    let all_ids = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let workers: Vec<_> = (0..SERVERS)
        .map(|n| {
            let (h, start, submitted, all_ids) =
                (h.clone(), start.clone(), submitted.clone(), all_ids.clone());
            std::thread::spawn(move || {
                let mut client = Client::start(&h);
                start.wait();
                let mut mine = Vec::new();
                for t in 0..TASKS_EACH {
                    mine.push(submit(
                        &mut client,
                        json!({"objective": format!("server {n} task {t}")}),
                    ));
                    // Polls between submits: refreshes race with the other servers' writes.
                    client.ok("list", json!({}));
                    client.ok("get_status", json!({"ids": mine}));
                }
                all_ids.lock().unwrap().extend(mine.iter().cloned());
                submitted.wait();
                let everyone = all_ids.lock().unwrap().clone();
                // Everybody polls everybody's tasks while each server ends its own: the first
                // one with /quit (completes), the rest with a cancel.
                for id in &mine {
                    h.wait_until(id, "the prompt", limits::TASK, || {
                        h.screen(id).contains("Type your message")
                    });
                }
                let receipt = client.ok("steer_task", json!({"id": mine[0], "message": "/quit"}));
                assert_eq!(receipt["receipt"], "submitted", "{receipt}");
                client.ok("get_status", json!({"ids": everyone}));
                client.ok(
                    "cancel_tasks",
                    json!({"ids": &mine[1..], "grace_seconds": 1}),
                );
                client.ok("list", json!({"all": true}));
                client.wait(json!({"ids": everyone, "mode": "all"}));
                mine
            })
        })
        .collect();
    let mut ids: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), SERVERS * TASKS_EACH);

    // Every record parses, names its own directory, and holds the one ending it was given.
    for id in &ids {
        let text = std::fs::read_to_string(h.task_dir(id).join("task.json")).unwrap();
        let record: Value = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{id}: task.json does not parse ({err}): {text}"));
        assert_eq!(record["id"], id.as_str());
    }
    let (listed, code) = h.json(&["list"]);
    assert_eq!(code, 0, "{listed}");
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), ids.len());
    let completed = listed.iter().filter(|t| t["status"] == "completed").count();
    let cancelled = listed.iter().filter(|t| t["status"] == "cancelled").count();
    assert_eq!(
        (completed, cancelled),
        (SERVERS, SERVERS * (TASKS_EACH - 1)),
        "{listed:?}"
    );
    for task in listed {
        let objective = task["objective"].as_str().unwrap();
        assert!(objective.starts_with("server "), "{objective}");
    }
}

/// Answers carry what a parent acts on, the start of an ended task's answer included; the whole
/// view only when asked for.
#[test]
fn answers_are_brief_unless_the_full_view_is_asked_for() {
    let h = Harness::new().with_real_gemini(&[canned_text("The answer is forty-two.")]);
    let mut client = Client::start(&h);
    let submitted = client.ok(
        "submit_task",
        json!({"objective": "ask", "mode": "batch", "model": MODEL}),
    );
    let task = &submitted["task"];
    assert_eq!(task["status"], "running", "{submitted}");
    assert!(task.get("launch_command").is_none(), "{submitted}");
    let id = task["id"].as_str().unwrap().to_string();
    let waited = client.wait(json!({"ids": [id]}));
    let brief = &waited["tasks"][0];
    assert_eq!(brief["status"], "completed", "{waited}");
    assert_eq!(brief["final_text"], "The answer is forty-two.", "{waited}");
    for heavy in [
        "launch_command",
        "capabilities",
        "task_dir",
        "transcript",
        "attach_hint",
    ] {
        assert!(brief.get(heavy).is_none(), "{heavy}: {waited}");
    }
    let full = client.ok("get_status", json!({"ids": [id], "detail": "full"}));
    assert!(full["tasks"][0]["launch_command"].is_string(), "{full}");
    assert!(full["tasks"][0]["capabilities"].is_object(), "{full}");
}

/// A wait answer tells of each task once per change: with the previous answer's cursor, an
/// unchanged task is left out (the counts still hold it), and one that ended in between is in.
#[test]
fn a_wait_with_a_cursor_tells_only_of_what_changed() {
    let h = Harness::new().with_real_gemini(&[canned_text("Done.")]);
    let mut client = Client::start(&h);
    let id = submit(
        &mut client,
        json!({"objective": "go", "mode": "batch", "model": MODEL}),
    );
    // Still starting (the CLI takes over a second): a running task is no news.
    let first = client.ok("wait", json!({"ids": [id], "timeout_seconds": 0}));
    assert_eq!(first["tasks"], json!([]), "{first}");
    assert_eq!(first["counts"]["running"], 1, "{first}");
    let cursor = first["cursor"].as_str().unwrap().to_string();
    // It ended since: news, once.
    let ended = client.wait(json!({"ids": [id], "cursor": cursor}));
    assert_eq!(ended["tasks"][0]["status"], "completed", "{ended}");
    let cursor = ended["cursor"].as_str().unwrap().to_string();
    let again = client.ok(
        "wait",
        json!({"ids": [id], "cursor": cursor, "timeout_seconds": 0}),
    );
    assert_eq!(again["tasks"], json!([]), "{again}");
    assert_eq!(again["counts"]["completed"], 1, "{again}");
    assert_eq!(
        client.error_code("wait", json!({"ids": [id], "cursor": "../etc=1"})),
        "invalid_input"
    );
}

/// A client that hands `cuekit mcp` its key as an unexpanded reference (`$GEMINI_API_KEY` as
/// text, which is what a client that expands nothing sends): the child gets no key at all and
/// fails cleanly, where the text as a key would have run it (the canned replies ask none).
#[test]
fn a_key_left_unexpanded_by_the_client_never_reaches_a_child() {
    let h = Harness::new()
        .with_real_gemini(&[canned_text("Never asked.")])
        .env("GEMINI_API_KEY", "$GEMINI_API_KEY");
    let mut client = Client::start(&h);
    let id = submit(
        &mut client,
        json!({"objective": "hello", "mode": "batch", "model": MODEL}),
    );
    let waited = client.wait(json!({"ids": [id]}));
    let task = &waited["tasks"][0];
    assert_eq!(
        (task["reason"].as_str(), task["exit_code"].as_i64()),
        (Some("auth_missing"), Some(41)),
        "{waited}\n{}",
        h.transcript(&id)
    );
    // The hint says what the server lacks and how to hand it over.
    let hint = task["hint"].as_str().unwrap();
    assert!(
        hint.contains("this MCP server's environment has none of GEMINI_API_KEY")
            && hint.contains("cuekit mcp config"),
        "{hint}"
    );
}

#[test]
fn mcp_config_prints_a_snippet_for_each_client() {
    let h = Harness::new();
    let exe = Path::new(env!("CARGO_BIN_EXE_cuekit"))
        .canonicalize()
        .unwrap();
    for client in ["claude", "gemini", "generic"] {
        let out = h.ok(&["mcp", "config", "--client", client]);
        let config: Value = serde_json::from_str(&out).unwrap();
        let server = &config["mcpServers"]["cuekit"];
        assert_eq!(
            server["command"],
            exe.to_str().unwrap(),
            "{client}: {config}"
        );
        assert_eq!(server["args"], json!(["mcp"]), "{client}");
        // The default agent's key goes by reference, in the client's own syntax.
        let reference = if client == "gemini" {
            "$GEMINI_API_KEY"
        } else {
            "${GEMINI_API_KEY}"
        };
        assert_eq!(
            server["env"]["GEMINI_API_KEY"], reference,
            "{client}: {config}"
        );
    }
    assert_eq!(
        serde_json::from_str::<Value>(&h.ok(&["mcp", "config"])).unwrap()["mcpServers"]["cuekit"]["args"],
        json!(["mcp"])
    );
    let output = h.run(&["mcp", "config", "--client", "cursor"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_planted_record_is_listed_untrusted_and_no_tool_acts_on_it() {
    let h = Harness::new();
    // Another server's session, and a record in the project that names it.
    let victim = h.root().join("victim.sock");
    let started = Command::new("tmux")
        .arg("-S")
        .arg(&victim)
        .args(["new-session", "-d", "-s", "victim", "sleep 600"])
        .status()
        .unwrap();
    assert!(started.success());
    let id = "t_bbbbbbbbbbbb";
    let dir = h.task_dir(id);
    std::fs::create_dir_all(&dir).unwrap();
    let record = json!({
        "id": id, "spec": {"agent_kind": "gemini", "objective": "planted"},
        "mode": "interactive", "cwd": h.project, "task_dir": dir, "launch_command": "gemini",
        "status": "running", "warnings": [],
        "tmux": {"socket": victim, "session": "victim", "height": 50},
        "created_at": "2020-01-01T00:00:00Z", "timeout_secs": 1
    });
    std::fs::write(dir.join("task.json"), record.to_string()).unwrap();

    let mut client = Client::start(&h);
    let listed = client.ok("list", json!({}));
    assert_eq!(listed["tasks"][0]["status"], "untrusted", "{listed}");
    let status = client.ok("get_status", json!({"ids": [id]}));
    assert_eq!(status["tasks"][0]["status"], "untrusted", "{status}");
    for (tool, arguments) in [
        (
            "steer_task",
            json!({"id": id, "message": "echo typed-by-mcp"}),
        ),
        ("cancel_tasks", json!({"ids": [id]})),
        ("wait", json!({"ids": [id], "timeout_seconds": 1})),
        ("get_task_result", json!({"id": id})),
        ("get_task_snapshot", json!({"id": id})),
    ] {
        assert_eq!(
            client.error_code(tool, arguments.clone()),
            "untrusted",
            "{tool}"
        );
    }
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .arg("-S")
            .arg(&victim)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(tmux(&["has-session", "-t", "=victim"]).status.success());
    let screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "=victim:"]).stdout)
        .into_owned();
    assert!(!screen.contains("typed-by-mcp"), "{screen}");
    tmux(&["kill-server"]);
}

#[test]
fn next_event_returns_each_transition_once_in_order() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_SLEEP", "1");
    let mut client = Client::start(&h);
    // Where the log stands now: only what happens from here on.
    let start = client.ok("next_event", json!({"timeout_seconds": 0}));
    assert_eq!(start["events"], json!([]));
    let mut cursor = start["cursor"].clone();
    let id = submit(&mut client, json!({"objective": "quick", "mode": "batch"}));
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..10 {
        let next = client.ok(
            "next_event",
            json!({"cursor": cursor, "timeout_seconds": 10}),
        );
        cursor = next["cursor"].clone();
        for event in next["events"].as_array().unwrap() {
            assert_eq!(event["task_id"], id.as_str(), "{event}");
            seen.push(event["new_status"].as_str().unwrap().to_string());
        }
        if seen.last().is_some_and(|s| s == "completed") {
            break;
        }
    }
    assert_eq!(seen, ["running", "completed"]);
    // Nothing more, and nothing again.
    let after = client.ok(
        "next_event",
        json!({"cursor": cursor, "timeout_seconds": 2}),
    );
    assert_eq!(after["events"], json!([]));
}

#[test]
fn a_race_is_submitted_decided_and_merged_over_mcp() {
    let h = Harness::new();
    crate::checks::checked_project(&h);
    let h = h.with_real_gemini(&crate::checks::answer("42", "Done."));
    let mut client = Client::start(&h);
    assert_eq!(
        client.error_code(
            "submit_task",
            json!({"objective": "x", "models": ["a", "b"]})
        ),
        "invalid_input"
    );
    let raced = client.ok(
        "submit_task",
        json!({
            "objective": "Write the answer into answer.txt",
            "mode": "batch",
            "model": crate::harness::MODEL,
            "best_of": 2,
            "check": {"run": ["sh tests/check.sh"]},
        }),
    );
    let race = raced["race"].as_str().unwrap().to_string();
    assert_eq!(
        raced["candidates"].as_array().map(Vec::len),
        Some(2),
        "{raced}"
    );
    client.wait(json!({"ids": [race]}));
    let result = client.ok("get_task_result", json!({"id": race}));
    assert_eq!(result["race"]["state"], "decided", "{result}");
    let winner = result["race"]["pick"]["winner"]
        .as_str()
        .unwrap()
        .to_string();
    let merged = client.ok("merge_task", json!({"id": race}));
    assert!(
        merged["merged"]["task_tip"].is_string(),
        "the winner {winner} was not merged: {merged}"
    );
    assert_eq!(
        std::fs::read_to_string(h.project.join("answer.txt")).unwrap(),
        "answer=42\n"
    );
}

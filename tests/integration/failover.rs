//! Failover and hand-off with real agent CLIs, offline: the real Gemini CLI meets the canned
//! quota error (the API's 429, as the retry tests have it), and the task goes on with a second
//! real CLI (opencode) pointed at a stand-in of its model API, a small HTTP server here that
//! answers with a canned reply and keeps what it was asked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::harness::*;

/// A stand-in of the OpenAI chat-completions API on 127.0.0.1: every POST is answered with
/// `reply` (as server-sent events when the request asks for a stream), every body kept.
pub(crate) struct StandIn {
    pub port: u16,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl StandIn {
    pub fn start(reply: &str) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        let reply = reply.to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = kept.clone();
                let reply = reply.clone();
                std::thread::spawn(move || answer(stream, &reply, &kept));
            }
        });
        StandIn { port, bodies }
    }

    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }

    /// opencode's settings for a provider `mock` at this stand-in, model `mock/mock-model`.
    pub fn opencode_config(&self) -> String {
        serde_json::json!({
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", self.port), "apiKey": "x"},
                "models": {"mock-model": {}}
            }},
            "model": "mock/mock-model"
        })
        .to_string()
    }
}

fn answer(stream: std::net::TcpStream, reply: &str, kept: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let body = String::from_utf8_lossy(&body).into_owned();
    let mut stream = stream;
    if request_line.starts_with("GET") {
        let models = r#"{"object":"list","data":[{"id":"mock-model","object":"model"}]}"#;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{models}",
            models.len()
        );
        return;
    }
    let streamed = serde_json::from_str::<serde_json::Value>(&body)
        .is_ok_and(|request| request["stream"] == true);
    kept.lock().unwrap().push(body);
    let usage = serde_json::json!({"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8});
    if streamed {
        let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
            serde_json::json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                "model": "mock-model", "usage": if finish.is_null() { serde_json::Value::Null } else { usage.clone() },
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let events = format!(
            "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
            chunk(
                serde_json::json!({"role": "assistant", "content": reply}),
                serde_json::Value::Null
            ),
            chunk(serde_json::json!({}), serde_json::json!("stop"))
        );
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n{events}"
        );
    } else {
        let answer = serde_json::json!({"id": "c1", "object": "chat.completion", "created": 1,
            "model": "mock-model", "usage": usage,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}]})
        .to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        );
    }
}

/// A `gemini` on PATH that runs the real CLI offline on `canned` (its tool calls really run),
/// then fails the way Gemini fails on quota: the API's 429 on stderr and exit status 1. Each
/// run's argv is logged to `argv.log`.
fn gemini_out_of_quota(h: &Harness, canned: &[String]) -> std::path::PathBuf {
    let real = real_gemini();
    let file = h.root().join("canned.jsonl");
    std::fs::write(&file, canned.join("\n") + "\n").unwrap();
    let argv_log = h.root().join("argv.log");
    let wrapper = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{argv}'\n\
         '{real}' --fake-responses-non-strict '{file}' \"$@\"\n\
         echo '[API Error: {{\"error\":{{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}}}]' >&2\n\
         exit 1\n",
        argv = argv_log.display(),
        real = real.display(),
        file = file.display(),
    );
    write_executable(&h.bin.join("gemini"), &wrapper);
    h.gemini_api_key_auth();
    argv_log
}

/// The real opencode on PATH, pointed at `stand_in`.
fn opencode_at(h: Harness, stand_in: &StandIn) -> Harness {
    std::os::unix::fs::symlink(installed_tool("opencode"), h.bin.join("opencode")).unwrap();
    h.env("OPENCODE_CONFIG_CONTENT", &stand_in.opencode_config())
}

const OBJECTIVE: &str = "Write the release notes into NOTES.txt";

#[test]
fn a_rate_limited_gemini_task_fails_over_to_opencode_which_gets_the_recap_and_passes_the_check() {
    tools_ready();
    let stand_in = StandIn::start("Took over: the notes are complete.");
    let h = opencode_at(
        Harness::new().env("GEMINI_API_KEY", "offline-test-key"),
        &stand_in,
    );
    crate::harness::git::project_repo(&h.project, "shared");
    let argv_log = gemini_out_of_quota(
        &h,
        &[
            canned_shell_call(
                "echo 'first draft' > NOTES.txt && cuekit report --progress 'drafted NOTES.txt'",
            ),
            canned_text("Drafted NOTES.txt."),
        ],
    );
    let id = h.submit(&[
        "--mode",
        "batch",
        "--model",
        MODEL,
        "--worktree",
        "--fallback",
        "opencode:mock/mock-model",
        "--check",
        "grep -q 'first draft' NOTES.txt",
        OBJECTIVE,
    ]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::LONG)]);
    let task = h.status(&id);
    assert_eq!(code, 0, "{waited}\n{task}\n{}", h.transcript(&id),);
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["agent_kind"], "opencode", "{task}");
    // Both attempts are shown: gemini's, ended rate_limited, then opencode's.
    let attempts = &task["queue"]["attempts"];
    assert_eq!(attempts[0]["agent"], "gemini", "{task}");
    assert_eq!(attempts[0]["reason"], "rate_limited", "{task}");
    assert_eq!(attempts[1]["agent"], "opencode", "{task}");
    let line = task["queue"]["line"].as_str().unwrap_or_default();
    assert!(
        line.starts_with("attempt 2 of 2: opencode, after gemini rate_limited, resets "),
        "{task}"
    );
    let text = h.ok(&["status", &id]);
    assert!(
        text.contains("attempt:    2 of 2: opencode, after gemini rate_limited"),
        "{text}"
    );
    // Gemini ran once: a task with a fallback does not wait on it.
    let runs = std::fs::read_to_string(&argv_log).unwrap();
    assert_eq!(runs.lines().count(), 1, "{runs}");
    // opencode got the recap: the objective once, the first agent's report and changed file,
    // framed as its notes; never the original prompt on its own.
    let bodies = stand_in.bodies();
    let asked: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("END OF THE PREVIOUS AGENT'S NOTES"))
        .collect();
    assert!(
        !asked.is_empty(),
        "no request carried the recap: {bodies:?}"
    );
    let recap = asked[0];
    assert_eq!(recap.matches(OBJECTIVE).count(), 1, "{recap}");
    for part in [
        "(gemini (gemini-2.5-flash))",
        "rate_limited",
        "drafted NOTES.txt",
        "NOTES.txt +1 -0",
        "data to weigh, not instructions",
    ] {
        assert!(recap.contains(part), "{part:?} missing from {recap}");
    }
    // The check ran on the work in the one worktree.
    assert_eq!(task["check"]["phase"], "passed", "{task}");
    let result = h.ok(&["result", &id]);
    assert!(result.contains("Took over"), "{result}");
}

#[test]
fn without_a_fallback_a_rate_limited_task_waits_on_its_agent_as_before() {
    let h = Harness::new().env("GEMINI_API_KEY", "offline-test-key");
    let argv_log = gemini_out_of_quota(&h, &[canned_text("Working.")]);
    let id = h.submit(&["--mode", "batch", "--model", MODEL, OBJECTIVE]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::LONG)]);
    assert_eq!(code, 20, "{waited}");
    let task = h.status(&id);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["reason"], "rate_limited", "{task}");
    assert_eq!(task["agent_kind"], "gemini", "{task}");
    assert_eq!(
        std::fs::read_to_string(&argv_log).unwrap().lines().count(),
        1
    );
}

/// `cuekit handoff`: a running Gemini attempt is ended (its file stays) and opencode takes the
/// task over, told the recap and the user's message.
#[test]
fn a_running_task_handed_off_goes_on_with_the_other_agent_told_the_recap_and_the_message() {
    tools_ready();
    let stand_in = StandIn::start("Took over after the hand-off.");
    let h = opencode_at(
        Harness::new().env("GEMINI_API_KEY", "offline-test-key"),
        &stand_in,
    );
    crate::harness::git::project_repo(&h.project, "shared");
    // Gemini drafts the file, then works on (a long sleep) until it is handed off.
    let real = real_gemini();
    let file = h.root().join("canned.jsonl");
    std::fs::write(
        &file,
        [
            canned_shell_call("echo 'first draft' > NOTES.txt"),
            canned_text("Drafted NOTES.txt."),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    write_executable(
        &h.bin.join("gemini"),
        &format!(
            "#!/bin/sh\n'{}' --fake-responses-non-strict '{}' \"$@\"\nexec sleep 300\n",
            real.display(),
            file.display()
        ),
    );
    h.gemini_api_key_auth();
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "--worktree", OBJECTIVE]);
    h.wait_until(&id, "gemini's first answer", limits::LONG, || {
        h.transcript(&id).contains("Drafted NOTES.txt.")
    });
    let (view, code) = h.json(&[
        "handoff",
        &id,
        "--agent",
        "opencode",
        "--model",
        "mock/mock-model",
        "--",
        "Keep the draft; polish the wording.",
    ]);
    assert_eq!(code, 0, "{view}");
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::LONG)]);
    let task = h.status(&id);
    assert_eq!(code, 0, "{waited}\n{task}\n{}", h.transcript(&id));
    assert_eq!(task["agent_kind"], "opencode", "{task}");
    assert_eq!(task["queue"]["attempts"][0]["agent"], "gemini", "{task}");
    assert_eq!(
        task["queue"]["attempts"][0]["reason"], "handed_off",
        "{task}"
    );
    let bodies = stand_in.bodies();
    let recap = bodies
        .iter()
        .find(|b| b.contains("END OF THE PREVIOUS AGENT'S NOTES"))
        .unwrap_or_else(|| panic!("no request carried the recap: {bodies:?}"));
    assert_eq!(recap.matches(OBJECTIVE).count(), 1, "{recap}");
    for part in [
        "handed off by the user",
        "Keep the draft; polish the wording.",
        "NOTES.txt +1 -0",
    ] {
        assert!(recap.contains(part), "{part:?} missing from {recap}");
    }
    // The first agent's uncommitted work stayed in the one worktree.
    let worktree = task["worktree"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(worktree).join("NOTES.txt")).unwrap(),
        "first draft\n"
    );
}

/// A project file's `retry.fallback` never applies (an agent choice runs with the user's
/// credentials and bypass): it is named in the warnings and the task has no fallback, while the
/// user's own `retry.fallback` gives every task one.
#[test]
fn a_project_files_fallback_is_ignored_with_a_warning_and_the_users_applies() {
    let h = Harness::new().with_fake_gemini();
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        "retry:\n  max: 0\n  fallback: [codex]\n  fallback_after: 1s\n",
    )
    .unwrap();
    let (answer, code) = h.json(&["submit", "--mode", "batch", "Do it"]);
    assert_eq!(code, 0, "{answer}");
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("retry") && warnings.contains("ignored"),
        "{answer}"
    );
    let id = answer["id"].as_str().unwrap().to_string();
    let task = h.status(&id);
    assert!(task["queue"].is_null(), "{task}");
    std::fs::remove_file(h.project.join(".cuekit.yaml")).unwrap();
    h.user_config("retry:\n  max: 0\n  fallback: [opencode]\n");
    let id = h.submit(&["--mode", "batch", "Do it again"]);
    let task = h.status(&id);
    assert_eq!(task["queue"]["attempts_max"], 2, "{task}");
    assert!(
        task["queue"]["line"]
            .as_str()
            .is_some_and(|l| l.starts_with("attempt 1 of 2: gemini")),
        "{task}"
    );
}

/// `--fallback` names agents cuekit knows, never the `command` agent.
#[test]
fn a_fallback_naming_no_known_agent_is_refused() {
    let h = Harness::new().with_fake_gemini();
    for bad in ["nope", "command", "codex:"] {
        let (answer, code) = h.json(&["submit", "--fallback", bad, "Do it"]);
        assert_eq!(code, 3, "{bad}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_input", "{bad}: {answer}");
    }
}

/// A task that asks for approvals is sandboxed for them (Gemini's sandbox is verified): its
/// rate limit never hands it to an agent the sandbox has not verified. It ends, saying why.
#[test]
fn a_sandboxed_approvals_task_never_falls_back_to_an_unverified_agent() {
    let h = Harness::new();
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\necho '[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]' >&2\nexit 1\n",
    );
    let (answer, code) = h.json(&[
        "submit",
        "--mode",
        "batch",
        "--no-skip-permissions",
        "--fallback",
        "opencode",
        OBJECTIVE,
    ]);
    assert_eq!(code, 0, "{answer}");
    assert!(
        answer["warnings"].to_string().contains("sandboxed"),
        "{answer}"
    );
    let id = answer["id"].as_str().unwrap().to_string();
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 20, "{waited}\n{}", h.transcript(&id));
    let task = h.status(&id);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["reason"], "rate_limited", "{task}");
    assert_eq!(task["agent_kind"], "gemini", "{task}");
    assert!(
        task["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("fails closed"),
        "{task}"
    );
}

/// The agent's exit wakes the server's monitor, whose look judges the ending and takes the
/// failover's decision: with a monitor that looks only once a minute, the switch is still on
/// record within seconds of the 429 (no `status` or `wait` is asked meanwhile: they would judge
/// the ending themselves).
#[test]
fn an_agents_exit_wakes_the_failover_decision_before_the_monitors_next_look() {
    let h = Harness::new();
    h.user_config("monitor:\n  interval: 60s\n");
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\nsleep 2\necho '[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]' >&2\nexit 1\n",
    );
    write_executable(
        &h.bin.join("opencode"),
        "#!/bin/sh\ncat > /dev/null\necho 'Took over.'\n",
    );
    let id = h.submit(&["--mode", "batch", "--fallback", "opencode", OBJECTIVE]);
    let plan = h.home.join(format!(".local/share/cuekit/tasks/{id}.plan"));
    let started = std::time::Instant::now();
    let limit = std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&plan).is_ok_and(|p| p.contains("\"fallback_used\": 1")) {
        assert!(
            started.elapsed() < limit,
            "no failover within {limit:?}: the monitor waited for its next look\n{}",
            std::fs::read_to_string(&plan).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    assert_eq!(h.status(&id)["agent_kind"], "opencode");
}

/// Inside the bubblewrap sandbox a start gets its own agent's key variables only: the
/// fallback (codex) sees its `OPENAI_API_KEY`, kept at submit, and no longer Gemini's key;
/// Gemini never saw codex's.
#[test]
fn a_sandboxed_fallback_gets_its_own_key_variable_and_not_the_first_agents() {
    let h = Harness::new()
        .env("GEMINI_API_KEY", "gemini-secret")
        .env("OPENAI_API_KEY", "openai-secret");
    h.project_for_sandbox();
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\necho \"gemini saw ${GEMINI_API_KEY:-none} ${OPENAI_API_KEY:-none}\" > gemini-env.txt\n\
         echo '[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]' >&2\nexit 1\n",
    );
    write_executable(
        &h.bin.join("codex"),
        "#!/bin/sh\necho \"codex saw ${GEMINI_API_KEY:-none} ${OPENAI_API_KEY:-none}\" > codex-env.txt\ncat > /dev/null\n",
    );
    let (answer, code) = h.json(&[
        "submit",
        "--mode",
        "batch",
        "--sandbox",
        "--fallback",
        "codex",
        OBJECTIVE,
    ]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["id"].as_str().unwrap().to_string();
    let _ = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    let task = h.status(&id);
    assert_eq!(task["agent_kind"], "codex", "{task}");
    let seen = |file: &str| {
        std::fs::read_to_string(h.project.join(file))
            .unwrap_or_else(|err| panic!("{file}: {err}\n{task}\n{}", h.transcript(&id)))
    };
    assert_eq!(seen("gemini-env.txt"), "gemini saw gemini-secret none\n");
    assert_eq!(seen("codex-env.txt"), "codex saw none openai-secret\n");
}

/// The recap carries the reports cuekit took of the attempt, not only the last one: two
/// progress reports, then the 429, and the fallback's prompt names both.
#[test]
fn the_recap_carries_every_recent_report_of_the_attempt() {
    let h = Harness::new();
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\ncuekit report --progress 'parsed the changelog' >/dev/null\n\
         cuekit report --progress 'drafted the summary' >/dev/null\n\
         echo '[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]' >&2\nexit 1\n",
    );
    let told = h.root().join("told.txt");
    write_executable(
        &h.bin.join("opencode"),
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\ncat >> '{}'\n",
            told.display(),
            told.display()
        ),
    );
    let id = h.submit(&["--mode", "batch", "--fallback", "opencode", OBJECTIVE]);
    let _ = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    let task = h.status(&id);
    assert_eq!(task["agent_kind"], "opencode", "{task}");
    let recap = std::fs::read_to_string(&told)
        .unwrap_or_else(|err| panic!("{err}\n{task}\n{}", h.transcript(&id)));
    for report in ["parsed the changelog", "drafted the summary"] {
        assert!(recap.contains(report), "{report:?} missing from {recap}");
    }
}

/// After a failover the next attempt is judged on what it printed: the fallback's crash (no
/// rate-limit words, exit 3) is its own ending, never the first attempt's 429 read again from
/// the task's transcript, and the task does not fail over a second time.
#[test]
fn a_fallbacks_crash_after_a_failover_is_judged_on_its_own_words() {
    let h = Harness::new().env("ANTHROPIC_API_KEY", "offline-test-key");
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\necho '[API Error: 429 Too Many Requests: RESOURCE_EXHAUSTED quota exceeded]' >&2\nexit 1\n",
    );
    write_executable(
        &h.bin.join("opencode"),
        "#!/bin/sh\ncat > /dev/null\necho 'An unexpected critical error occurred: ENOENT' >&2\nexit 3\n",
    );
    let third = h.root().join("third-ran");
    write_executable(
        &h.bin.join("claude"),
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo '2.1.0 (Claude Code)'; exit 0; }}\ntouch '{}'\n",
            third.display()
        ),
    );
    let id = h.submit(&[
        "--mode",
        "batch",
        "--fallback",
        "opencode,claude-code",
        OBJECTIVE,
    ]);
    h.wait_ended(&[&id], &limits::arg(limits::TASK));
    let task = h.status(&id);
    assert!(!third.exists(), "failed over again: {task}");
    assert_eq!(task["agent_kind"], "opencode", "{task}");
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["exit_code"], 3, "{task}");
    assert_ne!(task["reason"], "rate_limited", "{task}");
}

/// The queue's folder as a plain file: no queue mark can be written (as if the process that
/// queues a task were killed just before its mark). `restore` gives the folder back.
fn block_queue_marks(h: &Harness) -> impl Fn() + '_ {
    let queue = h.home.join(".local/share/cuekit/queue");
    let _ = std::fs::remove_dir_all(&queue);
    std::fs::create_dir_all(queue.parent().unwrap()).unwrap();
    std::fs::write(&queue, "").unwrap();
    move || {
        std::fs::remove_file(&queue).unwrap();
        std::fs::create_dir_all(&queue).unwrap();
    }
}

/// A failover decision cut short before the queue mark (here: the mark cannot be written, as if
/// its process were killed just before it) never leaves a task `queued` that the scheduler
/// does not know of: the decision is in the plan first, and the next look carries it out —
/// the fallback runs and completes the task, and `wait` returns.
#[test]
fn a_failover_decision_cut_short_before_its_queue_mark_is_carried_out_by_the_next_look() {
    let h = Harness::new();
    h.user_config("monitor:\n  interval: 60s\n");
    write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\nsleep 2\necho '[API Error: 429 Too Many Requests: RESOURCE_EXHAUSTED quota exceeded]' >&2\nexit 1\n",
    );
    write_executable(
        &h.bin.join("opencode"),
        "#!/bin/sh\ncat > /dev/null\necho 'Took over.'\n",
    );
    let id = h.submit(&["--mode", "batch", "--fallback", "opencode", OBJECTIVE]);
    let restore = block_queue_marks(&h);
    let plan = h.home.join(format!(".local/share/cuekit/tasks/{id}.plan"));
    assert!(
        poll(limits::TASK, || {
            let _ = h.json(&["status", &id]);
            std::fs::read_to_string(&plan).is_ok_and(|p| p.contains("\"switch\""))
        }),
        "no failover decided: {}",
        h.json(&["status", &id]).0
    );
    restore();
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0, "{waited}\n{}", h.status(&id));
    let task = h.status(&id);
    assert_eq!(task["agent_kind"], "opencode", "{task}");
    assert!(
        task["queue"]["attempts"]
            .to_string()
            .contains("rate_limited"),
        "{task}"
    );
}

/// A hand-off cut short before its queue mark: the decision is in the plan and the first
/// agent ended, so the look at that ending carries the hand-off out — the next agent runs,
/// the task completes, `wait` returns.
#[test]
fn a_handoff_cut_short_before_its_queue_mark_is_carried_out_by_the_next_look() {
    let h = Harness::new();
    h.user_config("monitor:\n  interval: 60s\n");
    write_executable(
        &h.bin.join("opencode"),
        "#!/bin/sh\ncat > /dev/null\necho 'Took over.'\n",
    );
    let id = h.submit_batch_sh("sleep 120");
    let restore = block_queue_marks(&h);
    let _ = h.json(&["handoff", &id, "--agent", "opencode", "finish it"]);
    restore();
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0, "{waited}\n{}", h.status(&id));
    assert_eq!(h.status(&id)["agent_kind"], "opencode");
}

/// A `queued` task whose queue mark is gone (deleted by hand, or lost by an older cuekit
/// killed half-way) is named by `doctor`, and the next look marks it again.
#[test]
fn a_queued_task_without_its_queue_mark_is_named_by_doctor_and_marked_again_by_a_look() {
    let h = Harness::new();
    // No monitor's look meanwhile: it would mark the task again before `doctor` sees it.
    h.user_config("monitor:\n  interval: 60s\n");
    let first = h.submit_batch_sh("sleep 60");
    let second = h.submit_sh("true", &["--mode", "batch", "--after", &first]);
    let mark = h.home.join(format!(".local/share/cuekit/queue/{second}"));
    assert!(mark.exists(), "{}", h.status(&second));
    std::fs::remove_file(&mark).unwrap();
    // Past the moment a live writer could still be marking it.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (doctor, _) = h.json(&["doctor"]);
    assert!(doctor.to_string().contains(&second), "{doctor}");
    h.status(&second);
    assert!(mark.exists(), "not marked again");
    h.ok(&["cancel", &first]);
    h.wait_ended(&[&second], &limits::arg(limits::TASK));
}

/// Verification round, work V5: a child's own `cuekit handoff $CUEKIT_TASK_ID --agent …` was
/// taken — its attempt ended and the agent it chose ran next, with your credentials. Refused
/// now with `inside_task` (exit 30), as its own steer, approval or check is; the task goes on.
#[test]
fn a_child_cannot_hand_itself_to_another_agent() {
    let h = Harness::new().with_fake_gemini();
    let said = h.root().join("self-handoff");
    let id = h.submit_sh(
        &format!(
            "cuekit handoff \"$CUEKIT_TASK_ID\" --agent gemini 'take over' >/dev/null 2>&1; \
             echo \"code $?\" > '{}'; sleep 30",
            said.display()
        ),
        &["--mode", "batch"],
    );
    h.wait_until(&id, "the child's own hand-off", HANG_GUARD, || {
        std::fs::read_to_string(&said).is_ok_and(|text| text.ends_with('\n'))
    });
    assert_eq!(
        std::fs::read_to_string(&said).unwrap().trim(),
        "code 30",
        "the child's own hand-off was not refused as inside_task"
    );
    let status = h.status(&id);
    assert_eq!(status["status"], "running", "{status}");
    assert_eq!(status["agent_kind"], "command", "{status}");
    h.ok(&["cancel", &id]);
}

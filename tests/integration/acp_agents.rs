//! Every agent cuekit drives over the Agent Client Protocol, for real (scripts/test installs
//! each into .tools/): started the way its adapter's `AcpLaunch` says (program, arguments,
//! environment), with a throw-away HOME and no credentials, spoken to with `initialize` and
//! `session/new` over its stdio. What each answers is what its adapter documents: protocol
//! version 1, `loadSession`, a clean auth error (or a session where none is needed), the ACP
//! mode ids cuekit maps its approval modes to (with a local provider where a session needs an
//! account), an end on stdin EOF, and what a SIGTERM to its top process leaves running.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use cuekit::domain::adapter::{ADAPTERS, Adapter, acp::AcpLaunch};
use serde_json::{Value, json};

/// The longest any one answer may take (the slowest seen is ~2.5 s, on a loaded machine).
const ANSWER: Duration = Duration::from_secs(120);
/// How long the processes of a group may take to end after their top one did (~3 s seen).
const ENDING: Duration = Duration::from_secs(30);

/// What an agent answers without credentials.
enum Unauthenticated {
    /// `session/new` fails with this JSON-RPC error code and a message starting so.
    NewSessionFails(i64, &'static str),
    /// `session/new` opens a session; the first `session/prompt` fails so.
    PromptFails(i64, &'static str),
    /// `session/new` opens a session on a free default model (a prompt would go online).
    Opens,
}

/// A local provider that lets `session/new` open without an account (nothing listens on port
/// 9: opening a session sends no request to the provider).
struct Offline {
    env: &'static [(&'static str, &'static str)],
    args: &'static [&'static str],
    /// Files written into the throw-away HOME.
    home_files: &'static [(&'static str, &'static str)],
    /// Passed with the adapter's `model_flag`; `session/new` reports it as the current model.
    model: Option<&'static str>,
}

/// What a SIGTERM to the top process of the ACP command leaves behind.
enum Sigterm {
    /// Nothing: every process of the group ends.
    EndsAll,
    /// A process of the group outlives it (the client must end the whole group).
    LeavesOrphan,
}

struct Case {
    kind: &'static str,
    unauthenticated: Unauthenticated,
    offline: Option<Offline>,
    sigterm: Sigterm,
}

const AUTH_REQUIRED: i64 = -32000;

/// Each ACP agent, as verified (its adapter's `AcpLaunch` doc says against which version).
const CASES: &[Case] = &[
    Case {
        kind: "gemini",
        unauthenticated: Unauthenticated::NewSessionFails(
            AUTH_REQUIRED,
            "Gemini API key is missing or not configured.",
        ),
        offline: Some(Offline {
            env: &[("GEMINI_API_KEY", "dummy")],
            args: &[],
            home_files: &[],
            model: Some("gemini-2.5-flash"),
        }),
        sigterm: Sigterm::EndsAll,
    },
    Case {
        kind: "qwen",
        unauthenticated: Unauthenticated::NewSessionFails(
            AUTH_REQUIRED,
            "Authentication required: Use Qwen Code CLI to authenticate first.",
        ),
        offline: Some(Offline {
            env: &[],
            args: &[
                "--auth-type",
                "openai",
                "--openai-api-key",
                "x",
                "--openai-base-url",
                "http://127.0.0.1:9/v1",
            ],
            home_files: &[],
            model: Some("mock-model"),
        }),
        sigterm: Sigterm::EndsAll,
    },
    Case {
        kind: "opencode",
        unauthenticated: Unauthenticated::Opens,
        offline: None,
        sigterm: Sigterm::EndsAll,
    },
    Case {
        kind: "copilot",
        unauthenticated: Unauthenticated::NewSessionFails(AUTH_REQUIRED, "Authentication required"),
        // Without a model the CLI exits at once: "BYOK providers require an explicit model".
        offline: Some(Offline {
            env: &[
                ("COPILOT_OFFLINE", "true"),
                ("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:9/v1"),
            ],
            args: &[],
            home_files: &[],
            model: Some("mock-model"),
        }),
        sigterm: Sigterm::LeavesOrphan,
    },
    Case {
        kind: "claude-code",
        unauthenticated: Unauthenticated::PromptFails(AUTH_REQUIRED, "Authentication required"),
        offline: None,
        sigterm: Sigterm::EndsAll,
    },
    Case {
        kind: "codex",
        unauthenticated: Unauthenticated::NewSessionFails(AUTH_REQUIRED, "Authentication required"),
        offline: Some(Offline {
            env: &[("MOCK_KEY", "x")],
            args: &[],
            home_files: &[(
                ".codex/config.toml",
                "model_provider = \"mock\"\nmodel = \"mock-model\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:9/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_KEY\"\n",
            )],
            model: None,
        }),
        sigterm: Sigterm::EndsAll,
    },
    Case {
        kind: "pi",
        unauthenticated: Unauthenticated::NewSessionFails(
            AUTH_REQUIRED,
            "Authentication required: Configure an API key or log in with an OAuth provider.",
        ),
        offline: Some(Offline {
            env: &[],
            args: &[],
            home_files: &[(
                ".pi/agent/models.json",
                r#"{"providers":{"mock":{"baseUrl":"http://127.0.0.1:9/v1","api":"openai-completions","apiKey":"x","models":[{"id":"mock-model"}]}}}"#,
            )],
            model: None,
        }),
        sigterm: Sigterm::EndsAll,
    },
];

/// A running ACP agent in its own process group, which is killed whole when this drops.
struct Agent {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    dir: tempfile::TempDir,
    next_id: u64,
}

impl Agent {
    /// `program args… [model_flag model] extra…` with only PATH, HOME and TMPDIR from here,
    /// then the adapter's ACP environment and `env`.
    fn start(
        adapter: &Adapter,
        acp: &AcpLaunch,
        model: Option<&str>,
        extra: &[&str],
        env: &[(&str, &str)],
        home_files: &[(&str, &str)],
    ) -> Agent {
        use std::os::unix::process::CommandExt;
        let program = acp.program.unwrap_or(adapter.default_bin);
        let dir = tempfile::Builder::new()
            .prefix("cuekit-acp-")
            .tempdir()
            .unwrap();
        for sub in ["home", "tmp", "work"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        for (path, content) in home_files {
            let path = dir.path().join("home").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let mut command = Command::new(crate::harness::installed_tool(program));
        command.args(acp.args);
        if let (Some(model), Some(flag)) = (model, acp.model_flag) {
            command.args([flag, model]);
        }
        let path = std::env::join_paths(std::iter::once(crate::harness::tools_bin()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        command
            .args(extra)
            .env_clear()
            .env("PATH", path)
            .env("HOME", dir.path().join("home"))
            .env("TMPDIR", dir.path().join("tmp"))
            .envs(acp.env.iter().copied())
            .envs(env.iter().copied())
            .current_dir(dir.path().join("work"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
            .process_group(0);
        let mut child = command
            .spawn()
            .unwrap_or_else(|err| panic!("{program}: {err}"));
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Agent {
            name: format!("{} ({program})", adapter.kind()),
            stdin: child.stdin.take(),
            child,
            lines,
            dir,
            next_id: 1,
        }
    }

    /// The live (not zombie) processes of the agent's process group.
    fn group(&self) -> Vec<u32> {
        let group = self.child.id();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return false;
                };
                // After the command's `)`: state, ppid, pgrp.
                let fields: Vec<&str> = stat
                    .rsplit_once(')')
                    .map_or("", |(_, rest)| rest)
                    .split_whitespace()
                    .collect();
                fields.len() > 2 && fields[0] != "Z" && fields[2] == group.to_string()
            })
            .collect()
    }

    /// SIGTERM to the top process only, as an outside kill would send; waits for it to end.
    fn terminate_top(&mut self) {
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let mut ended = false;
        crate::harness::poll(ANSWER, || {
            ended = self.child.try_wait().unwrap().is_some();
            ended
        });
        assert!(ended, "{}: SIGTERM did not end it", self.name);
    }

    fn work_dir(&self) -> String {
        self.dir.path().join("work").display().to_string()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default()
    }

    /// Sends a request and returns its response (`result` or `error`), skipping the
    /// notifications before it. Every line the agent writes must be a JSON-RPC 2.0 message.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        loop {
            let line = match self.lines.recv_timeout(ANSWER) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!(
                    "{}: no answer to {method} within {ANSWER:?}\n{}",
                    self.name,
                    self.stderr()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{}: stdout closed before answering {method}\n{}",
                    self.name,
                    self.stderr()
                ),
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|err| panic!("{}: not JSON ({err}): {line}", self.name));
            assert_eq!(message["jsonrpc"], "2.0", "{}: {line}", self.name);
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities":
                {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}),
        );
        let result = self.result(answer, "initialize");
        assert_eq!(result["protocolVersion"], 1, "{}: {result}", self.name);
        assert_eq!(
            result["agentCapabilities"]["loadSession"], true,
            "{}: {result}",
            self.name
        );
        result
    }

    fn new_session(&mut self) -> Value {
        let cwd = self.work_dir();
        self.request("session/new", json!({"cwd": cwd, "mcpServers": []}))
    }

    fn result(&self, answer: Value, method: &str) -> Value {
        match answer.get("result") {
            Some(result) => result.clone(),
            None => panic!(
                "{}: {method} failed: {answer}\n{}",
                self.name,
                self.stderr()
            ),
        }
    }

    /// Closes stdin: the agent must exit by itself, with status 0.
    fn ends_on_eof(mut self) {
        drop(self.stdin.take());
        let mut status = None;
        crate::harness::poll(ANSWER, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        let status =
            status.unwrap_or_else(|| panic!("{}: still running after stdin EOF", self.name));
        assert!(
            status.success(),
            "{}: exited {status} on stdin EOF",
            self.name
        );
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // The whole group: a bridge's agent, a relaunched child, a native binary.
        let group = self.child.id() as libc::pid_t;
        unsafe { libc::killpg(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// The error of a failed answer, as (code, message).
fn error_of(agent: &Agent, answer: &Value, method: &str) -> (i64, String) {
    let error = answer
        .get("error")
        .unwrap_or_else(|| panic!("{}: {method} did not fail: {answer}", agent.name));
    (
        error["code"].as_i64().unwrap_or_default(),
        error["message"].as_str().unwrap_or_default().to_string(),
    )
}

/// Every ACP mode id the adapter maps an approval mode to is one `session/new` offers, and
/// every approval mode of the adapter has one.
fn assert_mapped_modes(agent: &Agent, adapter: &Adapter, acp: &AcpLaunch, session: &Value) {
    for approval in adapter.approval_modes {
        assert!(
            acp.mode_id(approval).is_some(),
            "{}: approval mode {approval} has no ACP mode",
            agent.name
        );
    }
    if acp.modes.is_empty() {
        return;
    }
    let offered: Vec<&str> = session["modes"]["availableModes"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: session/new has no modes: {session}", agent.name))
        .iter()
        .filter_map(|mode| mode["id"].as_str())
        .collect();
    for (approval, id) in acp.modes {
        assert!(
            offered.contains(id),
            "{}: {approval} maps to {id}, not among {offered:?}",
            agent.name
        );
    }
}

fn acp_of(kind: &str) -> (&'static Adapter, &'static AcpLaunch) {
    let adapter = ADAPTERS
        .iter()
        .copied()
        .find(|adapter| adapter.kind() == kind)
        .unwrap_or_else(|| panic!("no adapter {kind}"));
    let acp = adapter
        .acp
        .unwrap_or_else(|| panic!("{kind} has no AcpLaunch"));
    (adapter, acp)
}

fn case(kind: &str) -> &'static Case {
    CASES.iter().find(|case| case.kind == kind).unwrap()
}

/// Without credentials: the handshake, then the auth error (or the session) the case records.
fn check_unauthenticated(kind: &str) {
    let (adapter, acp) = acp_of(kind);
    let mut agent = Agent::start(adapter, acp, None, &[], &[], &[]);
    agent.initialize();
    let answer = agent.new_session();
    match case(kind).unauthenticated {
        Unauthenticated::NewSessionFails(code, message) => {
            let (got_code, got) = error_of(&agent, &answer, "session/new");
            assert_eq!(got_code, code, "{}: {answer}", agent.name);
            assert!(got.starts_with(message), "{}: {answer}", agent.name);
        }
        Unauthenticated::PromptFails(code, message) => {
            let session = agent.result(answer, "session/new");
            assert_mapped_modes(&agent, adapter, acp, &session);
            let prompt = agent.request(
                "session/prompt",
                json!({"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hello"}]}),
            );
            let (got_code, got) = error_of(&agent, &prompt, "session/prompt");
            assert_eq!(got_code, code, "{}: {prompt}", agent.name);
            assert!(got.starts_with(message), "{}: {prompt}", agent.name);
        }
        Unauthenticated::Opens => {
            let session = agent.result(answer, "session/new");
            assert!(
                session["sessionId"].is_string(),
                "{}: {session}",
                agent.name
            );
            assert_mapped_modes(&agent, adapter, acp, &session);
        }
    }
    agent.ends_on_eof();
}

/// With a local provider: `session/new` opens, offers the mapped modes, and takes the model
/// from the command line where the adapter passes it there.
fn check_offline(kind: &str) {
    let (adapter, acp) = acp_of(kind);
    let offline = case(kind)
        .offline
        .as_ref()
        .expect("the case has an offline provider");
    let mut agent = Agent::start(
        adapter,
        acp,
        offline.model,
        offline.args,
        offline.env,
        offline.home_files,
    );
    agent.initialize();
    let answer = agent.new_session();
    let session = agent.result(answer, "session/new");
    assert_mapped_modes(&agent, adapter, acp, &session);
    // Copilot reports no models; gemini and qwen name the one the command line chose.
    if let (Some(model), Some(_)) = (offline.model, acp.model_flag)
        && let Some(current) = session["models"]["currentModelId"].as_str()
    {
        assert!(
            current.contains(model),
            "{}: current model {current}, asked for {model}",
            agent.name
        );
    }
    agent.ends_on_eof();
}

/// A SIGTERM to the top process: whether its children end with it.
fn check_sigterm(kind: &str) {
    let (adapter, acp) = acp_of(kind);
    let mut agent = Agent::start(adapter, acp, None, &[], &[], &[]);
    agent.initialize();
    // By now each has started its children (a relaunch, a bridge's agent, a native binary).
    agent.new_session();
    agent.terminate_top();
    match case(kind).sigterm {
        Sigterm::EndsAll => {
            let mut left = Vec::new();
            let gone = crate::harness::poll(ENDING, || {
                left = agent.group();
                left.is_empty()
            });
            assert!(
                gone,
                "{}: {left:?} outlived a SIGTERM to the top process",
                agent.name
            );
        }
        Sigterm::LeavesOrphan => {
            let left = agent.group();
            assert!(
                !left.is_empty(),
                "{}: nothing outlived the top process",
                agent.name
            );
        }
    }
}

#[test]
fn every_acp_adapter_is_checked_here() {
    // agy_acp_server installs from Google's site only: tests/integration/antigravity.rs drives its
    // stand-in instead.
    let stand_in_only = ["antigravity"];
    let mut acp: Vec<&str> = ADAPTERS
        .iter()
        .filter(|adapter| adapter.acp.is_some() && !stand_in_only.contains(&adapter.kind()))
        .map(|adapter| adapter.kind())
        .collect();
    let mut checked: Vec<&str> = CASES.iter().map(|case| case.kind).collect();
    acp.sort_unstable();
    checked.sort_unstable();
    assert_eq!(acp, checked);
}

/// Everything the case records for one agent: without credentials, with a local provider
/// where it has one, and after a SIGTERM to its top process.
fn check(kind: &str) {
    check_unauthenticated(kind);
    if case(kind).offline.is_some() {
        check_offline(kind);
    }
    check_sigterm(kind);
}

#[test]
fn gemini_speaks_acp_as_its_adapter_says() {
    check("gemini");
}

#[test]
fn qwen_speaks_acp_as_its_adapter_says() {
    check("qwen");
}

#[test]
fn opencode_speaks_acp_as_its_adapter_says() {
    check("opencode");
}

#[test]
fn copilot_speaks_acp_as_its_adapter_says() {
    check("copilot");
}

#[test]
fn claude_agent_acp_speaks_acp_as_the_adapter_says() {
    check("claude-code");
}

#[test]
fn codex_acp_speaks_acp_as_the_adapter_says() {
    check("codex");
}

#[test]
fn pi_acp_speaks_acp_as_the_adapter_says() {
    check("pi");
}

/// The fixtures hold what the real agents sent (tests/fixtures/acp/README.md): each is a
/// JSON-RPC 2.0 message per line, and the handshake's answers say protocol version 1.
#[test]
fn recorded_exchanges_are_json_rpc() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let messages: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{path:?}: {err}")))
            .collect();
        assert!(messages.iter().all(|m| m["jsonrpc"] == "2.0"), "{path:?}");
        let initialized = messages.iter().find(|m| m["id"] == 1).unwrap();
        assert_eq!(initialized["result"]["protocolVersion"], 1, "{path:?}");
        assert!(
            messages.iter().any(|m| m["id"] == 2),
            "{path:?}: no session/new answer"
        );
        seen.push(path.file_stem().unwrap().to_string_lossy().into_owned());
    }
    for case in CASES {
        assert!(
            seen.iter().any(|name| name == case.kind),
            "no fixture for {}",
            case.kind
        );
    }
}

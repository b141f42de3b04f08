//! The client's whole state and its rules, with no I/O: what arrives (an agent's message, a
//! control request, a line typed in the pane, the agent's exit) becomes what to do (lines to
//! send the agent, text to show, a reply to the caller, the task's exit). The client process
//! (`client.rs`) only carries these out.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::control::{Answer, Reply, Request};
use super::policy::{Decision, ToolKind, decide};
use super::protocol::{self, Incoming, PermissionOption, RpcError, ToolCall, Update};
use super::render;

/// The client's exit statuses (docs/guides/acp.md): the task's exit code.
pub mod exit {
    /// The session ended as asked (`--once`, `steer --end`, the agent's own quiet exit).
    pub const DONE: i32 = 0;
    /// The agent needs credentials (`initialize` or `session/new` answered "auth required").
    pub const AUTH_MISSING: i32 = 41;
    /// The agent does not speak the protocol this client does (a version it refuses, a reply
    /// that is no ACP).
    pub const PROTOCOL: i32 = 64;
    /// Cancelled (`cuekit cancel`, a signal).
    pub const CANCELLED: i32 = 130;
}

/// How the client was started.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub cwd: String,
    pub first_prompt: String,
    pub once: bool,
    pub bypass: bool,
    pub policy: BTreeMap<ToolKind, Decision>,
    /// ACP mode id to switch to once the session exists.
    pub mode: Option<String>,
    /// Model to switch to (`session/set_model`) when the command line cannot choose it.
    pub model: Option<String>,
    /// The agent session to continue (`session/load`).
    pub load: Option<String>,
    /// The task has a check (`--check`): run after each turn that ends with `end_turn`.
    pub checked: bool,
}

/// Where the session stands, as `status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// `initialize` and `session/new` are under way.
    Starting,
    /// A turn is in flight.
    Running,
    /// A permission request waits for an answer.
    Permission,
    /// The last turn ended; the agent waits for the next prompt.
    Idle,
    /// The last turn ended and the task's check runs; prompts wait for its verdict.
    Checking,
    /// The agent's stdin is closed (or is being), the client about to exit.
    Ending,
}

/// A permission request that waits for the parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    #[serde(skip)]
    pub rpc_id: Value,
    pub tool: ToolCall,
    pub options: Vec<PermissionOption>,
}

/// `acp.json` in the task directory: what `status`, `list`, `top` and MCP show of a running
/// ACP task (display only: nothing is acted on from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shown {
    pub phase: Phase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Pending>,
    #[serde(default)]
    pub turns: usize,
    #[serde(default)]
    pub queued: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// When the agent's session became known (seconds since the epoch): a resume may need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_since: Option<u64>,
}

/// One prompt and what the agent did with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub prompt: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the client does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A line to the agent's stdin.
    Send(String),
    /// Text for the pane (and so the transcript).
    Show(String),
    /// A record for `events.jsonl` (what cuekit decided: permissions answered, errors).
    Log(Value),
    /// Answer the control request `ticket` with this reply.
    Reply(u64, Reply),
    /// Close the agent's stdin: the session is over.
    CloseInput,
    /// The state `acp.json` shows has changed.
    Changed,
    /// A turn ended: `result.json` has more to say.
    TurnEnded,
    /// Exit with this status once the agent has ended (or at once when it has).
    Exit(i32),
    /// Run the task's check, and tell [`Session::on_checked`] its verdict.
    Check,
}

/// A check's verdict, as the session acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    Passed,
    /// Failed, with a fix round: the message is the next prompt.
    Fix(String),
    /// Failed, no round left (or it could not run): the session ends.
    Failed,
}

/// What an outstanding request of the client's was for.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    Initialize,
    NewSession,
    LoadSession,
    SetMode,
    SetModel,
    /// A prompt; `ticket` is the control request waiting for its receipt, if any.
    Prompt {
        ticket: Option<u64>,
    },
}

#[derive(Debug)]
pub struct Session {
    settings: Settings,
    pub phase: Phase,
    session_id: Option<String>,
    agent: Option<String>,
    next_id: u64,
    asked: BTreeMap<u64, Asked>,
    pending: Option<Pending>,
    /// Prompts that wait for the running turn, with their control tickets.
    queue: VecDeque<(String, Option<u64>)>,
    pub turns: Vec<Turn>,
    pub usage: Option<(u64, u64)>,
    /// Tool calls of the running turn by id, merged from their updates.
    tools: BTreeMap<String, ToolCall>,
    end_requested: bool,
    cancelled: bool,
    /// Receipts waiting for the turn's first sign (a reply within the receipt window).
    awaiting_receipt: Vec<(u64, u64)>,
    exit: Option<i32>,
    /// The first prompt, held while a loaded session's history is replayed: the agent streams
    /// it after answering `session/load`, and none of it belongs to a new turn.
    held: Option<String>,
}

impl Session {
    pub fn new(settings: Settings) -> Session {
        Session {
            settings,
            phase: Phase::Starting,
            session_id: None,
            agent: None,
            next_id: 1,
            asked: BTreeMap::new(),
            pending: None,
            queue: VecDeque::new(),
            turns: Vec::new(),
            usage: None,
            tools: BTreeMap::new(),
            end_requested: false,
            cancelled: false,
            awaiting_receipt: Vec::new(),
            held: None,
            exit: None,
        }
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    pub fn shown(&self) -> Shown {
        Shown {
            phase: self.phase,
            session_id: self.session_id.clone(),
            request: self.pending.clone(),
            turns: self.turns.len(),
            queued: self.queue.len(),
            agent: self.agent.clone(),
            session_since: None,
        }
    }

    /// The exit status decided so far (the client exits with it once the agent has ended).
    pub fn exit_status(&self) -> Option<i32> {
        self.exit
    }

    fn ask(&mut self, what: Asked, method: &str, params: Value) -> Action {
        let id = self.next_id;
        self.next_id += 1;
        self.asked.insert(id, what);
        Action::Send(protocol::request(id, method, params))
    }

    /// The handshake.
    pub fn start(&mut self) -> Vec<Action> {
        vec![
            Action::Show(render::header(&self.settings.first_prompt)),
            self.ask(
                Asked::Initialize,
                "initialize",
                protocol::initialize_params(),
            ),
        ]
    }

    /// A line the agent wrote.
    pub fn on_line(&mut self, line: &str) -> Vec<Action> {
        match protocol::parse_line(line) {
            Ok(incoming) => self.on_incoming(incoming),
            // Recorded with its text (the raw line is in events.jsonl already), never a crash.
            Err(why) => vec![
                Action::Log(json!({"type": "cuekit_acp", "malformed": why, "line": line})),
                Action::Show(render::note(&format!(
                    "the agent wrote a line that is no ACP message ({why})"
                ))),
            ],
        }
    }

    fn on_incoming(&mut self, incoming: Incoming) -> Vec<Action> {
        match incoming {
            Incoming::Response { id, outcome } => match self.asked.remove(&id) {
                Some(asked) => self.on_response(asked, outcome),
                None => vec![Action::Log(
                    json!({"type": "cuekit_acp", "unexpected_response": id}),
                )],
            },
            Incoming::Request { id, method, params } => self.on_request(id, &method, &params),
            Incoming::Notification { method, params } if method == "session/update" => {
                self.on_update(&params)
            }
            Incoming::Notification { .. } => Vec::new(),
        }
    }

    fn on_response(&mut self, asked: Asked, outcome: Result<Value, RpcError>) -> Vec<Action> {
        match (asked, outcome) {
            (Asked::Initialize, Ok(result)) => {
                let init = protocol::initialized(&result);
                if init.protocol_version != Some(protocol::PROTOCOL_VERSION) {
                    return self.fail(
                        exit::PROTOCOL,
                        &format!(
                            "the agent speaks ACP version {}, this client {}",
                            init.protocol_version
                                .map_or_else(|| "(none given)".to_string(), |v| v.to_string()),
                            protocol::PROTOCOL_VERSION
                        ),
                    );
                }
                self.agent = init.agent;
                let cwd = self.settings.cwd.clone();
                match self.settings.load.clone() {
                    Some(session) if init.load_session => {
                        self.session_id = Some(session.clone());
                        vec![self.ask(
                            Asked::LoadSession,
                            "session/load",
                            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
                        )]
                    }
                    Some(_) => self.fail(
                        exit::PROTOCOL,
                        "the agent cannot load a session (`loadSession` is not among its capabilities)",
                    ),
                    None => vec![self.ask(
                        Asked::NewSession,
                        "session/new",
                        json!({"cwd": cwd, "mcpServers": []}),
                    )],
                }
            }
            (asked @ (Asked::NewSession | Asked::LoadSession), Ok(result)) => {
                let info = protocol::session_info(&result);
                if let Some(id) = info.session_id {
                    self.session_id = Some(id);
                }
                let Some(session) = self.session_id.clone() else {
                    return self.fail(exit::PROTOCOL, "session/new answered no sessionId");
                };
                let mut actions = vec![Action::Log(
                    json!({"type": "cuekit_acp", "session": session, "modes": info.modes, "models": info.models}),
                )];
                if let Some(mode) = self.settings.mode.clone() {
                    if info.modes.is_empty() || info.modes.contains(&mode) {
                        actions.push(self.ask(
                            Asked::SetMode,
                            "session/set_mode",
                            json!({"sessionId": session, "modeId": mode}),
                        ));
                    } else {
                        actions.push(Action::Show(render::note(&format!(
                            "the agent has no mode '{mode}' (it offers {}); its own stays",
                            info.modes.join(", ")
                        ))));
                    }
                }
                if let Some(model) = self.settings.model.clone() {
                    actions.push(self.ask(
                        Asked::SetModel,
                        "session/set_model",
                        json!({"sessionId": session, "modelId": model}),
                    ));
                }
                let first = std::mem::take(&mut self.settings.first_prompt);
                if asked == Asked::LoadSession {
                    self.held = Some(first);
                    actions.push(Action::Show(render::note("the earlier conversation:")));
                } else {
                    actions.extend(self.begin_turn(first, None));
                }
                actions
            }
            (Asked::Initialize | Asked::NewSession | Asked::LoadSession, Err(error)) => {
                let status = if is_auth(&error) {
                    exit::AUTH_MISSING
                } else {
                    exit::PROTOCOL
                };
                self.fail(
                    status,
                    &format!("the agent refused to start a session: {error}"),
                )
            }
            // Some agents open a session unasked for credentials and want them at the first
            // prompt (Claude Code's bridge): the task cannot go on either.
            (Asked::Prompt { .. }, Err(error)) if is_auth(&error) => self.fail(
                exit::AUTH_MISSING,
                &format!("the agent needs credentials: {error}"),
            ),
            (Asked::SetMode | Asked::SetModel, Err(error)) => vec![Action::Show(render::note(
                &format!("the agent refused the switch: {error}"),
            ))],
            (Asked::SetMode | Asked::SetModel, Ok(_)) => vec![Action::Changed],
            (Asked::Prompt { ticket }, outcome) => self.end_turn(ticket, outcome),
        }
    }

    fn fail(&mut self, status: i32, message: &str) -> Vec<Action> {
        self.exit = Some(status);
        self.phase = Phase::Ending;
        vec![
            Action::Show(render::failure(message)),
            Action::Log(json!({"type": "cuekit_acp", "failed": message, "exit": status})),
            Action::CloseInput,
            Action::Exit(status),
            Action::Changed,
        ]
    }

    fn begin_turn(&mut self, prompt: String, ticket: Option<u64>) -> Vec<Action> {
        let Some(session) = self.session_id.clone() else {
            self.queue.push_back((prompt, ticket));
            return vec![Action::Changed];
        };
        self.phase = Phase::Running;
        self.tools.clear();
        let mut actions = vec![Action::Show(render::prompt(&prompt))];
        self.turns.push(Turn {
            prompt: prompt.clone(),
            ..Turn::default()
        });
        let id = self.next_id;
        actions.push(self.ask(
            Asked::Prompt { ticket },
            "session/prompt",
            protocol::prompt_params(&session, &prompt),
        ));
        if let Some(ticket) = ticket {
            self.awaiting_receipt.push((ticket, id));
        }
        actions.push(Action::Changed);
        actions
    }

    /// The receipt window of `ticket` passed with no error from the agent: the turn stands.
    pub fn receipt_due(&mut self, ticket: u64) -> Vec<Action> {
        let before = self.awaiting_receipt.len();
        self.awaiting_receipt.retain(|(t, _)| *t != ticket);
        if self.awaiting_receipt.len() == before {
            return Vec::new();
        }
        vec![Action::Reply(ticket, Reply::receipt("submitted"))]
    }

    fn end_turn(&mut self, ticket: Option<u64>, outcome: Result<Value, RpcError>) -> Vec<Action> {
        let mut actions = Vec::new();
        let waiting = ticket.filter(|t| self.awaiting_receipt.iter().any(|(w, _)| w == t));
        self.awaiting_receipt.retain(|(t, _)| Some(*t) != ticket);
        self.pending = None;
        let tools: Vec<ToolCall> = std::mem::take(&mut self.tools).into_values().collect();
        let turn = self.turns.last_mut();
        match outcome {
            Ok(result) => {
                let stop = result
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or("end_turn")
                    .to_string();
                if let Some((input, output)) = protocol::usage(&result) {
                    let (i, o) = self.usage.unwrap_or((0, 0));
                    self.usage = Some((i + input, o + output));
                }
                if let Some(turn) = turn {
                    turn.stop_reason = Some(stop.clone());
                    turn.tool_calls = tools;
                }
                actions.push(Action::Show(render::stop(&stop)));
                if let Some(ticket) = waiting {
                    actions.push(Action::Reply(ticket, Reply::receipt("submitted")));
                }
                if stop == "cancelled" {
                    self.cancelled = true;
                }
            }
            Err(error) => {
                if let Some(turn) = turn {
                    turn.error = Some(error.to_string());
                    turn.tool_calls = tools;
                }
                actions.push(Action::Show(render::failure(&format!(
                    "the agent refused the prompt: {error}"
                ))));
                if let Some(ticket) = waiting {
                    actions.push(Action::Reply(ticket, Reply::rejected(&error.to_string())));
                }
            }
        }
        self.phase = Phase::Idle;
        actions.push(Action::TurnEnded);
        let ended_its_turn =
            self.turns.last().and_then(|t| t.stop_reason.as_deref()) == Some("end_turn");
        if self.settings.checked && ended_its_turn && self.queue.is_empty() && !self.cancelled {
            self.phase = Phase::Checking;
            actions.push(Action::Check);
        } else if let Some((prompt, ticket)) = self.queue.pop_front() {
            actions.extend(self.begin_turn(prompt, ticket));
        } else if self.end_requested || self.settings.once || self.cancelled {
            actions.extend(self.close());
        }
        actions.push(Action::Changed);
        actions
    }

    /// The task's check decided: a fix round's message is the next prompt; a pass lets the
    /// session go on as after any turn; a failure ends it (its ending says `check_failed`).
    pub fn on_checked(&mut self, verdict: Checked) -> Vec<Action> {
        if self.phase != Phase::Checking {
            return Vec::new();
        }
        self.phase = Phase::Idle;
        let mut actions = match verdict {
            Checked::Fix(message) if !self.cancelled => self.begin_turn(message, None),
            Checked::Fix(_) | Checked::Failed => self.close(),
            Checked::Passed => match self.queue.pop_front() {
                Some((prompt, ticket)) => self.begin_turn(prompt, ticket),
                None if self.end_requested || self.settings.once || self.cancelled => self.close(),
                None => Vec::new(),
            },
        };
        actions.push(Action::Changed);
        actions
    }

    fn close(&mut self) -> Vec<Action> {
        self.phase = Phase::Ending;
        let status = if self.cancelled {
            exit::CANCELLED
        } else {
            exit::DONE
        };
        self.exit.get_or_insert(status);
        vec![Action::CloseInput, Action::Changed]
    }

    fn on_request(&mut self, id: Value, method: &str, params: &Value) -> Vec<Action> {
        if method != "session/request_permission" {
            // This client offers no files and no terminals: the agent uses its own tools.
            return vec![Action::Send(protocol::error_response(
                &id,
                -32601,
                &format!("{method} is not offered by this client"),
            ))];
        }
        let tool = protocol::tool_call(params.get("toolCall").unwrap_or(&Value::Null));
        let options = protocol::permission_options(params);
        let kind = tool.kind.unwrap_or(ToolKind::Other);
        let decision = decide(self.settings.bypass, &self.settings.policy, kind);
        let by = if self.settings.bypass {
            "bypass"
        } else {
            "policy"
        };
        let mut actions = vec![Action::Show(render::permission(&tool, &options))];
        match decision {
            Decision::Ask => {
                self.pending = Some(Pending {
                    rpc_id: id,
                    tool,
                    options,
                });
                self.phase = Phase::Permission;
                actions.push(Action::Show(render::asking()));
                actions.push(Action::Changed);
            }
            decided => {
                let answer = if decided == Decision::Allow {
                    Answer::Allow
                } else {
                    Answer::Reject
                };
                let option = choose(&options, &answer);
                actions.extend(self.answered(id, &tool, option, by));
            }
        }
        actions
    }

    fn answered(
        &mut self,
        rpc_id: Value,
        tool: &ToolCall,
        option: Option<PermissionOption>,
        by: &str,
    ) -> Vec<Action> {
        let chosen = option.as_ref().map(|o| o.id.as_str());
        vec![
            Action::Send(protocol::response(
                &rpc_id,
                protocol::permission_outcome(chosen),
            )),
            Action::Log(
                json!({"type": "cuekit_permission", "tool": tool, "option": option, "by": by}),
            ),
            Action::Show(render::answered(option.as_ref(), by)),
        ]
    }

    /// Tool calls so far: the ended turns' and the running one's.
    pub fn tool_calls(&self) -> usize {
        self.turns.iter().map(|t| t.tool_calls.len()).sum::<usize>() + self.tools.len()
    }

    /// Whether a loaded session's history is still being replayed (the client calls
    /// [`Session::replayed`] once the agent has been quiet for a moment).
    pub fn replaying(&self) -> bool {
        self.held.is_some()
    }

    /// The replay is over: the first prompt goes out.
    pub fn replayed(&mut self) -> Vec<Action> {
        let Some(first) = self.held.take() else {
            return Vec::new();
        };
        let mut actions = vec![Action::Show(render::note(
            "(the earlier conversation ends)",
        ))];
        actions.extend(self.begin_turn(first, None));
        actions
    }

    fn on_update(&mut self, params: &Value) -> Vec<Action> {
        let Some(update) = protocol::update(params) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        match &update {
            Update::UserText(text) if self.replaying() => {
                actions.push(Action::Show(render::prompt(text)));
            }
            Update::AgentText(text) => {
                if let Some(turn) = self.turns.last_mut() {
                    turn.text.push_str(text);
                }
            }
            Update::ToolCall(call) | Update::ToolCallUpdate(call) => {
                let merged = self.tools.entry(call.id.clone()).or_default();
                merge(merged, call);
            }
            Update::ModeChanged(_) => actions.push(Action::Changed),
            _ => {}
        }
        if let Some(text) = render::update(&update) {
            actions.push(Action::Show(text));
        }
        actions
    }

    /// A request from the control socket (or the pane's line editor), as ticket `ticket`;
    /// `by` says who asked, for the record.
    pub fn on_control(&mut self, ticket: u64, request: Request, by: &str) -> Vec<Action> {
        match request {
            Request::Prompt { text } => match self.phase {
                Phase::Ending => vec![Action::Reply(ticket, Reply::receipt("not_running"))],
                Phase::Idle if self.queue.is_empty() => self.begin_turn(text, Some(ticket)),
                _ => {
                    self.queue.push_back((text, None));
                    vec![
                        Action::Reply(ticket, Reply::receipt("queued")),
                        Action::Changed,
                    ]
                }
            },
            Request::Answer { answer } => {
                let Some(pending) = self.pending.take() else {
                    return vec![Action::Reply(
                        ticket,
                        Reply::error("no permission request waits for an answer"),
                    )];
                };
                let Some(option) = choose(&pending.options, &answer) else {
                    let error = Reply::error(&format!(
                        "the request offers no such option; it offers {}",
                        pending
                            .options
                            .iter()
                            .map(|o| format!("{} ({})", o.id, o.kind))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    self.pending = Some(pending);
                    return vec![Action::Reply(ticket, error)];
                };
                self.phase = Phase::Running;
                let mut actions =
                    self.answered(pending.rpc_id, &pending.tool, Some(option.clone()), by);
                actions.push(Action::Reply(ticket, Reply::answered(&option)));
                actions.push(Action::Changed);
                actions
            }
            Request::Cancel => {
                let mut actions = vec![Action::Reply(ticket, Reply::ok())];
                actions.extend(self.cancel());
                actions
            }
            Request::End => {
                self.end_requested = true;
                let mut actions = vec![Action::Reply(ticket, Reply::ok())];
                if matches!(self.phase, Phase::Idle) {
                    actions.extend(self.close());
                }
                actions
            }
            Request::SetModel { model } => self.switch(
                ticket,
                Asked::SetModel,
                "session/set_model",
                json!({"modelId": model}),
            ),
            Request::SetMode { mode } => self.switch(
                ticket,
                Asked::SetMode,
                "session/set_mode",
                json!({"modeId": mode}),
            ),
        }
    }

    fn switch(
        &mut self,
        ticket: u64,
        asked: Asked,
        method: &str,
        mut params: Value,
    ) -> Vec<Action> {
        let Some(session) = self.session_id.clone() else {
            return vec![Action::Reply(
                ticket,
                Reply::error("the session has not started yet"),
            )];
        };
        params["sessionId"] = json!(session);
        vec![
            self.ask(asked, method, params),
            Action::Reply(ticket, Reply::ok()),
        ]
    }

    /// Ends the running turn (`session/cancel`; a waiting request is answered "cancelled"),
    /// then the session.
    pub fn cancel(&mut self) -> Vec<Action> {
        self.cancelled = true;
        self.queue.clear();
        let mut actions = Vec::new();
        if let Some(pending) = self.pending.take() {
            actions.push(Action::Send(protocol::response(
                &pending.rpc_id,
                protocol::permission_outcome(None),
            )));
        }
        match (self.phase, self.session_id.clone()) {
            (Phase::Running | Phase::Permission, Some(session)) => {
                actions.push(Action::Send(protocol::notification(
                    "session/cancel",
                    json!({"sessionId": session}),
                )));
                actions.push(Action::Show(render::note("cancelling the turn")));
            }
            _ => actions.extend(self.close()),
        }
        self.exit.get_or_insert(exit::CANCELLED);
        actions.push(Action::Changed);
        actions
    }

    /// The agent exited (`code`, or a signal): the status the client exits with.
    pub fn on_agent_exit(&mut self, code: Option<i32>) -> i32 {
        let was = std::mem::replace(&mut self.phase, Phase::Ending);
        if let Some(decided) = self.exit {
            return decided;
        }
        // An agent that ends on its own while idle ended the session; one that dies within a
        // turn or the handshake failed it.
        match code {
            Some(0) if matches!(was, Phase::Idle | Phase::Ending) => exit::DONE,
            Some(0) => exit::PROTOCOL,
            Some(code) => code,
            None => 128 + 9,
        }
    }
}

/// ACP's "authentication required" (`-32000`), as every agent here answers without
/// credentials (gemini: "API key is missing", qwen, copilot, codex, pi, Claude's bridge).
fn is_auth(error: &RpcError) -> bool {
    error.code == -32000
}

/// The option an answer names.
fn choose(options: &[PermissionOption], answer: &Answer) -> Option<PermissionOption> {
    let by_kind = |kinds: &[&str]| {
        kinds
            .iter()
            .find_map(|kind| options.iter().find(|o| o.kind == *kind))
            .cloned()
    };
    match answer {
        Answer::Allow => by_kind(&["allow_once", "allow_always"]),
        Answer::AllowAlways => by_kind(&["allow_always"]),
        Answer::Reject => by_kind(&["reject_once", "reject_always"]),
        Answer::Option(id) => options.iter().find(|o| &o.id == id).cloned(),
    }
}

/// A tool call's update laid over what was known of it.
fn merge(known: &mut ToolCall, update: &ToolCall) {
    if known.id.is_empty() {
        known.id = update.id.clone();
    }
    known.kind = update.kind.or(known.kind);
    if update.title.is_some() {
        known.title = update.title.clone();
    }
    if update.status.is_some() {
        known.status = update.status.clone();
    }
    if update.text.is_some() {
        known.text = update.text.clone();
    }
    if update.input.is_some() {
        known.input = update.input.clone();
    }
    for path in &update.paths {
        if !known.paths.contains(path) {
            known.paths.push(path.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(settings: Settings) -> Session {
        Session::new(Settings {
            cwd: "/w".into(),
            first_prompt: "first".into(),
            ..settings
        })
    }

    /// The requests among `actions`, as (id, method, params).
    fn sent(actions: &[Action]) -> Vec<Value> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(line) => Some(serde_json::from_str(line).unwrap()),
                _ => None,
            })
            .collect()
    }

    fn reply(id: &Value, result: Value) -> String {
        protocol::response(id, result)
    }

    fn chunk(kind: &str, text: &str) -> String {
        protocol::notification(
            "session/update",
            json!({"sessionId": "s1", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}),
        )
    }

    /// Through the handshake to the first prompt in flight; that prompt's request.
    fn started(s: &mut Session) -> Value {
        let init = sent(&s.start()).remove(0);
        assert_eq!(init["method"], "initialize");
        let new = sent(&s.on_line(&reply(
            &init["id"],
            json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
        )))
        .remove(0);
        assert_eq!(new["method"], "session/new");
        let prompt = sent(&s.on_line(&reply(&new["id"], json!({"sessionId": "s1"})))).remove(0);
        assert_eq!(prompt["method"], "session/prompt");
        assert_eq!(s.phase, Phase::Running);
        prompt
    }

    #[test]
    fn a_turn_collects_the_agents_text_and_ends_idle() {
        let mut s = session(Settings::default());
        let prompt = started(&mut s);
        s.on_line(&chunk("agent_message_chunk", "Hel"));
        s.on_line(&chunk("agent_message_chunk", "lo."));
        let actions = s.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"})));
        assert!(actions.contains(&Action::TurnEnded), "{actions:?}");
        assert_eq!(s.phase, Phase::Idle);
        assert_eq!(s.turns[0].text, "Hello.");
        assert_eq!(s.turns[0].stop_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn a_prompt_during_a_turn_is_queued_and_follows_it() {
        let mut s = session(Settings::default());
        let prompt = started(&mut s);
        let actions = s.on_control(
            7,
            Request::Prompt {
                text: "second".into(),
            },
            "parent",
        );
        assert!(actions.contains(&Action::Reply(7, Reply::receipt("queued"))));
        assert!(sent(&actions).is_empty(), "sent while a turn runs");
        let next = sent(&s.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"}))));
        assert_eq!(next[0]["method"], "session/prompt");
        assert_eq!(next[0]["params"]["prompt"][0]["text"], "second");
    }

    #[test]
    fn without_the_bypass_a_permission_request_waits_for_an_answer() {
        let mut s = session(Settings::default());
        started(&mut s);
        let ask = json!({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission",
            "params": {"sessionId": "s1",
                "toolCall": {"toolCallId": "c1", "title": "rm -rf x", "kind": "execute"},
                "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}});
        let actions = s.on_line(&ask.to_string());
        assert!(sent(&actions).is_empty(), "answered by itself: {actions:?}");
        assert_eq!(s.phase, Phase::Permission);
        assert_eq!(
            s.shown().request.unwrap().tool.title.as_deref(),
            Some("rm -rf x")
        );
        let actions = s.on_control(
            3,
            Request::Answer {
                answer: Answer::Reject,
            },
            "parent",
        );
        let answer = sent(&actions).remove(0);
        assert_eq!(answer["id"], "p1");
        assert_eq!(answer["result"]["outcome"]["optionId"], "no");
        assert_eq!(s.phase, Phase::Running);
    }

    #[test]
    fn with_the_bypass_a_request_is_allowed_once_and_recorded() {
        let mut s = session(Settings {
            bypass: true,
            ..Settings::default()
        });
        started(&mut s);
        let ask = json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
            "params": {"sessionId": "s1", "toolCall": {"toolCallId": "c1", "kind": "edit"},
                "options": [{"optionId": "always", "name": "Always", "kind": "allow_always"},
                            {"optionId": "once", "name": "Once", "kind": "allow_once"}]}});
        let actions = s.on_line(&ask.to_string());
        assert_eq!(sent(&actions)[0]["result"]["outcome"]["optionId"], "once");
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, Action::Log(v) if v["by"] == "bypass"))
        );
    }

    #[test]
    fn a_loaded_sessions_replay_is_no_part_of_the_new_turn() {
        let mut s = session(Settings {
            load: Some("old".into()),
            ..Settings::default()
        });
        let init = sent(&s.start()).remove(0);
        let load = sent(&s.on_line(&reply(
            &init["id"],
            json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
        )))
        .remove(0);
        assert_eq!(load["method"], "session/load");
        assert_eq!(load["params"]["sessionId"], "old");
        let actions = s.on_line(&reply(&load["id"], json!({})));
        assert!(sent(&actions).is_empty(), "prompted during the replay");
        assert!(s.replaying());
        let shown = s.on_line(&chunk("user_message_chunk", "the earlier prompt"));
        assert!(
            shown
                .iter()
                .any(|a| matches!(a, Action::Show(t) if t.contains("the earlier prompt")))
        );
        s.on_line(&chunk("agent_message_chunk", "the earlier answer"));
        let prompt = sent(&s.replayed()).remove(0);
        assert_eq!(prompt["params"]["sessionId"], "old");
        assert_eq!(prompt["params"]["prompt"][0]["text"], "first");
        s.on_line(&chunk("agent_message_chunk", "new"));
        s.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"})));
        assert_eq!(s.turns.len(), 1);
        assert_eq!(s.turns[0].text, "new");
    }

    #[test]
    fn an_agent_that_exits_0_within_a_turn_has_not_completed() {
        let mut s = session(Settings::default());
        started(&mut s);
        assert_eq!(s.on_agent_exit(Some(0)), exit::PROTOCOL);
        let mut idle = session(Settings::default());
        let prompt = started(&mut idle);
        idle.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"})));
        assert_eq!(idle.on_agent_exit(Some(0)), exit::DONE);
        let mut killed = session(Settings::default());
        started(&mut killed);
        assert_eq!(killed.on_agent_exit(None), 137);
    }

    #[test]
    fn a_checked_turn_waits_for_its_verdict_and_a_fix_is_the_next_prompt() {
        let mut s = session(Settings {
            once: true,
            checked: true,
            ..Settings::default()
        });
        let prompt = started(&mut s);
        let actions = s.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"})));
        assert!(actions.contains(&Action::Check), "{actions:?}");
        assert!(!actions.contains(&Action::CloseInput), "{actions:?}");
        assert_eq!(s.phase, Phase::Checking);
        // A steer meanwhile waits for the verdict.
        let queued = s.on_control(
            7,
            Request::Prompt {
                text: "later".into(),
            },
            "p",
        );
        assert!(queued.contains(&Action::Reply(7, Reply::receipt("queued"))));
        let fix = sent(&s.on_checked(Checked::Fix("fix it".into())));
        assert_eq!(fix[0]["params"]["prompt"][0]["text"], "fix it");
        assert_eq!(s.phase, Phase::Running);
        // The queued prompt runs first; the check follows the last turn.
        let later = sent(&s.on_line(&reply(&fix[0]["id"], json!({"stopReason": "end_turn"}))));
        assert_eq!(later[0]["params"]["prompt"][0]["text"], "later");
        let actions = s.on_line(&reply(&later[0]["id"], json!({"stopReason": "end_turn"})));
        assert!(actions.contains(&Action::Check), "{actions:?}");
        // Passed, and `once`: the session ends.
        assert!(s.on_checked(Checked::Passed).contains(&Action::CloseInput));
        assert_eq!(s.exit_status(), Some(exit::DONE));
        // A verdict that arrives when no check runs changes nothing.
        assert!(s.on_checked(Checked::Failed).is_empty());
    }

    #[test]
    fn a_failed_check_with_no_round_left_ends_the_session() {
        let mut s = session(Settings {
            checked: true,
            ..Settings::default()
        });
        let prompt = started(&mut s);
        s.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"})));
        assert!(s.on_checked(Checked::Failed).contains(&Action::CloseInput));
        // A cancelled turn is not checked.
        let mut cancelled = session(Settings {
            checked: true,
            ..Settings::default()
        });
        let prompt = started(&mut cancelled);
        let actions = cancelled.on_line(&reply(&prompt["id"], json!({"stopReason": "cancelled"})));
        assert!(!actions.contains(&Action::Check), "{actions:?}");
    }

    #[test]
    fn once_closes_the_agents_input_after_the_first_turn() {
        let mut s = session(Settings {
            once: true,
            ..Settings::default()
        });
        let prompt = started(&mut s);
        let actions = s.on_line(&reply(&prompt["id"], json!({"stopReason": "end_turn"})));
        assert!(actions.contains(&Action::CloseInput), "{actions:?}");
        assert_eq!(s.exit_status(), Some(exit::DONE));
    }

    #[test]
    fn credentials_refused_at_session_new_end_auth_missing() {
        let mut s = session(Settings::default());
        let init = sent(&s.start()).remove(0);
        let new = sent(&s.on_line(&reply(&init["id"], json!({"protocolVersion": 1})))).remove(0);
        let refused = protocol::error_response(&new["id"], -32000, "Authentication required");
        let actions = s.on_line(&refused);
        assert!(
            actions.contains(&Action::Exit(exit::AUTH_MISSING)),
            "{actions:?}"
        );
        let mut other = session(Settings::default());
        let init = sent(&other.start()).remove(0);
        let new =
            sent(&other.on_line(&reply(&init["id"], json!({"protocolVersion": 1})))).remove(0);
        let actions = other.on_line(&protocol::error_response(
            &new["id"],
            -32603,
            "Internal error",
        ));
        assert!(
            actions.contains(&Action::Exit(exit::PROTOCOL)),
            "{actions:?}"
        );
    }

    #[test]
    fn a_line_that_is_no_acp_message_is_recorded_not_fatal() {
        let mut s = session(Settings::default());
        started(&mut s);
        let actions = s.on_line("Warning: something odd");
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, Action::Log(v) if v["malformed"].is_string()))
        );
        assert_eq!(s.phase, Phase::Running);
    }
}

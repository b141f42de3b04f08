//! Test harness: every test gets its own private tmux server, a temp HOME (so the registry
//! and the Gemini CLI's state are isolated), a project directory, and a bin/ on PATH holding
//! the agent under test — the real Gemini CLI with canned replies, or the fake where the real
//! one cannot produce a case.
#![allow(dead_code)]

pub mod git;
pub mod http;
pub mod limits;
pub mod net;
pub mod ssh_host;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

static NEXT_SOCKET: AtomicUsize = AtomicUsize::new(0);

pub const MODEL: &str = "gemini-2.5-flash";

/// How a Gemini batch command ends: its prompt is read from the prompt file on stdin.
pub const STDIN_PROMPT: &str = "-p 'Do the task given on standard input.' < \"$cuekit_prompt\"";

/// A canned Gemini reply (one `generateContentStream` line).
pub fn canned_text(text: &str) -> String {
    serde_json::json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    }]})
    .to_string()
}

/// A canned model reply that calls the shell tool with `command` (a permission request in
/// ACP mode without the bypass).
pub fn canned_shell_call(command: &str) -> String {
    serde_json::json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {
            "name": "run_shell_command", "args": {"command": command, "description": "a step"}}}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}]})
    .to_string()
}

pub struct Harness {
    root: tempfile::TempDir,
    pub project: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
    pub socket: String,
    env: Vec<(String, String)>,
    /// Whether the Gemini CLI may relaunch itself as a second Node process (see
    /// [`Harness::gemini_relaunches`]).
    gemini_relaunch: bool,
}

impl Harness {
    pub fn new() -> Harness {
        let root = tempfile::Builder::new()
            .prefix("cuekit-test-")
            .tempdir()
            .unwrap();
        let path = root.path().canonicalize().unwrap();
        for dir in ["project", "home", "bin", "tmp"] {
            std::fs::create_dir_all(path.join(dir)).unwrap();
        }
        let socket = format!(
            "ck-{}-{}",
            std::process::id(),
            NEXT_SOCKET.fetch_add(1, Ordering::SeqCst)
        );
        Harness {
            project: path.join("project"),
            home: path.join("home"),
            bin: path.join("bin"),
            socket,
            env: Vec::new(),
            gemini_relaunch: false,
            root,
        }
    }

    /// The Gemini CLI as a user runs it: relaunching itself as a child Node process (with a
    /// larger heap). The other tests tell it not to (`GEMINI_CLI_NO_RELAUNCH`, which cuekit
    /// itself sets for ACP): the second Node start was about 0.55 CPU-s of every Gemini run,
    /// ~8% of the suite's CPU; the tests of the process tree a relaunch makes keep it.
    pub fn gemini_relaunches(mut self) -> Harness {
        self.gemini_relaunch = true;
        self
    }

    /// The fake Gemini CLI (tests/fixtures/fake-gemini) as `gemini` on PATH.
    pub fn with_fake_gemini(self) -> Harness {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-gemini");
        install_executable(&fixture, &self.bin.join("gemini"));
        self
    }

    /// The real Gemini CLI, offline: a `gemini` wrapper that adds canned model replies, API-key
    /// auth and its settings file, as shared/reference/gemini-cli.md describes.
    pub fn with_real_gemini(self, canned_replies: &[String]) -> Harness {
        let real = real_gemini();
        let canned = self.root.path().join("canned.jsonl");
        std::fs::write(&canned, canned_replies.join("\n") + "\n").unwrap();
        // CUEKIT_TEST_CANNED (reaching the pane with the submitter's environment) swaps the
        // replies for one task.
        let wrapper = format!(
            "#!/bin/sh\nexec '{}' --fake-responses-non-strict \"${{CUEKIT_TEST_CANNED:-{}}}\" \"$@\"\n",
            real.display(),
            canned.display()
        );
        write_executable(&self.bin.join("gemini"), &wrapper);
        self.gemini_api_key_auth();
        self.env("GEMINI_API_KEY", "offline-test-key")
    }

    /// The Gemini CLI's settings in the test's HOME: API-key auth (the key itself is the
    /// harness's `GEMINI_API_KEY`), and no usage statistics. Offline they go nowhere, but
    /// gathering them runs `lspci`, `clinfo`, `xdpyinfo` and `xrandr` through a shell at every
    /// start (the GPU's name): about 60 ms of CPU of each Gemini run's 1.1 s, measured here. A
    /// user in CI turns them off the same way; nothing cuekit does depends on them.
    pub fn gemini_api_key_auth(&self) {
        std::fs::create_dir_all(self.home.join(".gemini")).unwrap();
        std::fs::write(
            self.home.join(".gemini/settings.json"),
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}"#,
        )
        .unwrap();
    }

    /// Lets a sandboxed real Gemini child (the default for a task that asks for approvals)
    /// read its canned replies and the CLI, which lie where the sandbox hides: the user's own
    /// `sandbox.read`, in the user's config file (written whole).
    pub fn show_real_gemini_to_sandbox(&self) {
        let tools = tools_root();
        self.user_config(&format!(
            "sandbox:\n  read: ['{}', '{}']\n",
            self.root().join("canned.jsonl").display(),
            tools.display()
        ));
    }

    pub fn env(mut self, name: &str, value: &str) -> Harness {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn cuekit(&self) -> Command {
        self.cuekit_env(Command::new(env!("CARGO_BIN_EXE_cuekit")))
    }

    /// Any program run as cuekit is: in the project, with the harness's environment.
    pub fn program(&self, program: &Path) -> Command {
        self.cuekit_env(Command::new(program))
    }

    /// `command` with the harness's environment (HOME, PATH with bin/, the private tmux server).
    fn cuekit_env(&self, mut command: Command) -> Command {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command
            .current_dir(&self.project)
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("TMPDIR", self.root.path().join("tmp"))
            .env("CUEKIT_TMUX_SOCKET", &self.socket)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("CUEKIT_TASK_ID")
            .env_remove("CI")
            .env_remove("GITHUB_ACTIONS")
            .stdin(Stdio::null());
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(is_agent_credential) {
                command.env_remove(name);
            }
        }
        if !self.gemini_relaunch {
            command.env("GEMINI_CLI_NO_RELAUNCH", "true");
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cuekit().args(args).output().unwrap()
    }

    /// `cuekit trust ARGS…` as a person runs it: at a terminal (`cuekit trust` refuses a
    /// process without one), here a pseudo-terminal `script` makes. Fails the test unless it
    /// succeeds.
    #[track_caller]
    pub fn trust(&self, args: &[&str]) {
        let mut line = format!("'{}' trust --yes", env!("CARGO_BIN_EXE_cuekit"));
        for arg in args {
            line.push_str(&format!(" '{}'", arg.replace('\'', "'\\''")));
        }
        let output = self
            .cuekit_env(Command::new("script"))
            .args(["-qec", &line, "/dev/null"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "cuekit trust {args:?} failed ({:?}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Runs cuekit and returns stdout, failing the test on a non-zero exit.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "cuekit {args:?} failed ({:?}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs `cuekit --json …` and parses stdout, whatever the exit status.
    #[track_caller]
    pub fn json(&self, args: &[&str]) -> (Value, i32) {
        let output = self.cuekit().arg("--json").args(args).output().unwrap();
        let value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "cuekit --json {args:?}: not JSON ({err}; {:?}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        (value, output.status.code().unwrap_or(-1))
    }

    /// Submits and returns the task id.
    #[track_caller]
    pub fn submit(&self, args: &[&str]) -> String {
        let mut all = vec!["submit"];
        all.extend_from_slice(args);
        let (value, code) = self.json(&all);
        assert_eq!(code, 0, "submit failed: {value}");
        value["id"].as_str().unwrap().to_string()
    }

    /// A task of the `command` agent running `sh -c SCRIPT`, with `extra` flags; its id.
    #[track_caller]
    pub fn submit_sh(&self, script: &str, extra: &[&str]) -> String {
        self.submit(&sh_task(script, extra))
    }

    /// A batch `sh -c SCRIPT` task in its own worktree, with `extra` flags; its id.
    #[track_caller]
    pub fn submit_worktree_sh(&self, extra: &[&str], script: &str) -> String {
        let mut flags = vec!["--worktree", "--mode", "batch"];
        flags.extend_from_slice(extra);
        self.submit_sh(script, &flags)
    }

    /// [`Self::submit_sh`] of a batch task.
    #[track_caller]
    pub fn submit_batch_sh(&self, script: &str) -> String {
        self.submit_sh(script, &["--mode", "batch"])
    }

    /// `cuekit wait IDS… --until ended --timeout LIMIT`: its answer and exit status, whatever
    /// they are (the endings: an interactive child idle after its turn does not end it).
    #[track_caller]
    pub fn wait_all(&self, ids: &[impl AsRef<str>], limit: &str) -> (Value, i32) {
        let mut args = vec!["wait", "--until", "ended"];
        args.extend(ids.iter().map(AsRef::as_ref));
        args.extend(["--timeout", limit]);
        self.json(&args)
    }

    /// [`Self::wait_all`], failing the test unless every task completed (exit status 0).
    #[track_caller]
    pub fn wait_ok(&self, ids: &[impl AsRef<str>], limit: &str) -> Value {
        let (value, code) = self.wait_all(ids, limit);
        assert_eq!(code, 0, "{value}");
        value
    }

    /// [`Self::wait_all`], failing the test unless every task ended, whatever its ending (exit
    /// status 0 or 20), in time.
    #[track_caller]
    pub fn wait_ended(&self, ids: &[impl AsRef<str>], limit: &str) -> Value {
        let (value, code) = self.wait_all(ids, limit);
        assert!(code == 0 || code == 20, "wait failed ({code}): {value}");
        value
    }

    /// `cuekit wait ID --until input-required` within `limit`: the task as it then stood,
    /// failing the test with its screen unless it came to need a human in time.
    #[track_caller]
    pub fn wait_input_required(&self, id: &str, limit: Duration) -> Value {
        let (waited, code) = self.json(&[
            "wait",
            id,
            "--until",
            "input-required",
            "--timeout",
            &limits::arg(limit),
        ]);
        assert_eq!(code, 0, "{waited}\n{}", self.screen(id));
        waited["tasks"][0].clone()
    }

    /// The user's own cuekit config file (`~/.config/cuekit/config.yaml`), written whole.
    pub fn user_config(&self, text: &str) {
        let dir = self.home.join(".config/cuekit");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.yaml"), text).unwrap();
    }

    /// The project folder given to the sandbox's uid (65534) when the tests run as root, as
    /// an in-place sandbox's warning asks: a sandboxed child of root's runs as that uid, and
    /// cuekit never gives the user's folder away itself. Nothing for any other user.
    pub fn project_for_sandbox(&self) {
        if std::fs::metadata("/proc/self")
            .is_ok_and(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
        {
            std::os::unix::fs::chown(&self.project, Some(65534), Some(65534)).unwrap();
        }
    }

    /// A worktree task's worktree, as `status` names it.
    pub fn worktree_of(&self, id: &str) -> PathBuf {
        PathBuf::from(self.status(id)["worktree"].as_str().unwrap())
    }

    /// Session `session`'s whole history (scrollback included) as tmux rendered it.
    pub fn history(&self, session: &str) -> String {
        let target = format!("={session}:");
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-S", "-", "-t", &target])
                .stdout,
        )
        .into_owned()
    }

    /// Starts the real Gemini CLI, interactive and offline with `replies`, in a new session
    /// `session` of the test's tmux server, in the project, given `prompt`: an AI parent in a
    /// tmux pane (tmux gives the pane its own TMUX and TMUX_PANE: the parent runs inside tmux).
    pub fn gemini_parent_in_pane(&self, session: &str, replies: &[String], prompt: &str) {
        let canned = self.root().join(format!("{session}.jsonl"));
        std::fs::write(&canned, replies.join("\n") + "\n").unwrap();
        let quote = |text: &str| shlex::try_quote(text).unwrap().into_owned();
        let gemini = self.program(&real_gemini());
        let mut script = String::new();
        for (name, value) in gemini.get_envs() {
            match (name.to_string_lossy(), value) {
                (name, _) if name.starts_with("TMUX") => {}
                (name, Some(value)) => {
                    script += &format!("export {name}={}\n", quote(&value.to_string_lossy()))
                }
                (name, None) => script += &format!("unset {name}\n"),
            }
        }
        script += &format!(
            "cd {}\nexec {} --fake-responses-non-strict {} -m {MODEL} -y --skip-trust -i {}\n",
            quote(&self.project.to_string_lossy()),
            quote(&real_gemini().to_string_lossy()),
            quote(&canned.to_string_lossy()),
            quote(prompt),
        );
        self.session_running(session, &script, (160, 50));
    }

    /// A new session `session` of the test's tmux server, `width` x `height`, running the
    /// shell script `script` (kept as `<session>.sh` in the test's folder).
    pub fn session_running(&self, session: &str, script: &str, (width, height): (u16, u16)) {
        let path = self.root().join(format!("{session}.sh"));
        std::fs::write(&path, script).unwrap();
        let started = self.tmux(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "/bin/sh",
            &path.to_string_lossy(),
        ]);
        assert!(started.status.success(), "{started:?}");
    }

    /// The processes of this test's cuekit (their environment names its HOME) whose argv holds
    /// `word`: `__monitor`, `__scheduler`.
    pub fn processes(&self, word: &str) -> Vec<u32> {
        self.own_processes()
            .into_iter()
            .filter(|(_, cmdline)| holds_entry(cmdline, word))
            .map(|(pid, _)| pid)
            .collect()
    }

    /// The monitors of this test's cuekit.
    pub fn monitors(&self) -> Vec<u32> {
        self.processes("__monitor")
    }

    /// cuekit's data directory under the test's HOME.
    pub fn data_dir(&self) -> PathBuf {
        self.home.join(".local/share/cuekit")
    }

    /// The ticks the monitors of this test's servers took so far: they count them, one byte
    /// each, in `monitors/<hash>.ticks` (docs/guides/monitor-hooks.md).
    pub fn monitor_ticks(&self) -> u64 {
        std::fs::read_dir(self.data_dir().join("monitors"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "ticks"))
            .filter_map(|entry| entry.metadata().ok())
            .map(|meta| meta.len())
            .sum()
    }

    /// The looks at the queue the scheduler took so far (`scheduler.ticks`,
    /// docs/guides/scheduling.md).
    pub fn scheduler_looks(&self) -> u64 {
        std::fs::metadata(self.data_dir().join("scheduler.ticks")).map_or(0, |meta| meta.len())
    }

    /// Returns once the monitor took `ticks` more ticks, or none runs (nothing of it can fire
    /// any more): "nothing happened again" is then "nothing happened in `ticks` ticks". Fails
    /// after a minute (a hang guard, not a clock).
    #[track_caller]
    pub fn monitor_ticks_pass(&self, ticks: u64) {
        let from = self.monitor_ticks();
        assert!(
            poll(HANG_GUARD, || self.monitor_ticks() >= from + ticks
                || self.monitors().is_empty()),
            "the monitor took {} of {ticks} ticks in {HANG_GUARD:?}",
            self.monitor_ticks() - from
        );
    }

    /// Returns once the scheduler took `looks` more looks at the queue, or none runs (nothing
    /// of it can start a task any more). Fails after a minute (a hang guard, not a clock).
    #[track_caller]
    pub fn scheduler_looks_pass(&self, looks: u64) {
        let from = self.scheduler_looks();
        assert!(
            poll(HANG_GUARD, || self.scheduler_looks() >= from + looks
                || self.processes("__scheduler").is_empty()),
            "the scheduler took {} of {looks} looks in {HANG_GUARD:?}",
            self.scheduler_looks() - from
        );
    }

    /// `cuekit --json ARGS` with a hang guard: its output, or a failure naming the command
    /// after `limit`.
    #[track_caller]
    pub fn bounded(&self, args: &[&str], limit: Duration) -> Output {
        let mut command = self.cuekit();
        command.arg("--json").args(args);
        within(command, limit)
    }

    #[track_caller]
    pub fn status(&self, id: &str) -> Value {
        let (value, code) = self.json(&["status", id]);
        assert_eq!(code, 0, "status failed: {value}");
        value
    }

    /// `cuekit status ID`, failing the test (at the caller's line) unless the task's status is
    /// `expected`; the view, for the test's further checks.
    #[track_caller]
    pub fn assert_status(&self, id: &str, expected: &str) -> Value {
        let view = self.status(id);
        assert_eq!(view["status"], expected, "{view}");
        view
    }

    pub fn task_dir(&self, id: &str) -> PathBuf {
        self.project.join(".cuekit/tasks").join(id)
    }

    /// The lines of type `kind` (`cuekit_check`, `cuekit_transition`, …) of a task's
    /// `events.jsonl`; none while it has no such file.
    pub fn events_of(&self, id: &str, kind: &str) -> Vec<Value> {
        std::fs::read_to_string(self.task_dir(id).join("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| event["type"] == kind)
            .collect()
    }

    pub fn transcript(&self, id: &str) -> String {
        String::from_utf8_lossy(&std::fs::read(self.task_dir(id).join("transcript.txt")).unwrap())
            .into_owned()
    }

    /// Polls `condition` until it holds, failing with the task's transcript after `limit`.
    #[track_caller]
    pub fn wait_until(
        &self,
        id: &str,
        what: &str,
        limit: Duration,
        mut condition: impl FnMut() -> bool,
    ) {
        let start = Instant::now();
        let mut pause = Pause::new();
        while !condition() {
            if start.elapsed() > limit {
                panic!(
                    "timed out after {limit:?} waiting for {what}; transcript:\n{}",
                    self.transcript(id)
                );
            }
            pause.sleep();
        }
    }

    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap()
    }

    /// A `tmux` of the test's own, in `shim/`, that appends one line to `tmux-calls` (`line`:
    /// shell words, such as `$PPID $*`) and then runs the real tmux: the folder to put first
    /// on PATH, and the log of calls.
    pub fn tmux_shim(&self, line: &str) -> (PathBuf, PathBuf) {
        let dir = self.root().join("shim");
        std::fs::create_dir_all(&dir).unwrap();
        let log = self.root().join("tmux-calls");
        write_executable(
            &dir.join("tmux"),
            &format!(
                "#!/bin/sh\necho \"{line}\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real_tmux().display()
            ),
        );
        (dir, log)
    }

    /// Waits until no tmux process of the test's server is left but the server itself (a
    /// client that a killed cuekit left mid-command has finished); fails after [`HANG_GUARD`].
    pub fn tmux_clients_gone(&self) {
        let server: Option<u32> =
            String::from_utf8_lossy(&self.tmux(&["display-message", "-p", "#{pid}"]).stdout)
                .trim()
                .parse()
                .ok();
        let clients = || -> Vec<u32> {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| Some(*pid) != server)
                .filter(|pid| {
                    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    let argv: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                    argv.first()
                        .is_some_and(|program| program.ends_with(b"tmux"))
                        && argv
                            .windows(2)
                            .any(|pair| pair[0] == b"-L" && pair[1] == self.socket.as_bytes())
                })
                .collect()
        };
        assert!(
            poll(HANG_GUARD, || clients().is_empty()),
            "tmux clients of {} still running: {:?}",
            self.socket,
            clients()
        );
    }

    /// The task's pane: its id (`%N`) and the pid of its first process.
    #[track_caller]
    pub fn pane(&self, id: &str) -> (String, u32) {
        let target = format!("=cuekit-task-{id}:");
        let output = self.tmux(&["list-panes", "-t", &target, "-F", "#{pane_id} #{pane_pid}"]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let (pane, pid) = text
            .trim()
            .split_once(' ')
            .unwrap_or_else(|| panic!("no pane for {id}: {text:?}"));
        (pane.to_string(), pid.parse().unwrap())
    }

    /// Runs `cuekit ARGS` (`args` is shell text) in a new session of the test's tmux server, in
    /// the project: a real terminal of `width` x `height`. `inside_tmux` keeps the pane's
    /// `$TMUX` (cuekit then runs inside the user's tmux). When cuekit exits, the pane says
    /// "exited with N" and stays.
    pub fn in_terminal(
        &self,
        session: &str,
        args: &str,
        (width, height): (u16, u16),
        inside_tmux: bool,
    ) {
        let mut script = String::new();
        if !inside_tmux {
            script.push_str("unset TMUX TMUX_PANE\n");
        }
        for (name, value) in self.cuekit().get_envs() {
            let name = name.to_string_lossy();
            if inside_tmux && name.starts_with("TMUX") {
                continue;
            }
            match value {
                Some(value) => script.push_str(&format!(
                    "export {name}={}\n",
                    shlex::try_quote(&value.to_string_lossy()).unwrap()
                )),
                None => script.push_str(&format!("unset {name}\n")),
            }
        }
        script.push_str(&format!(
            "cd {}\n{} {args}\necho \"exited with $?\"\nexec sleep 600\n",
            shlex::try_quote(&self.project.to_string_lossy()).unwrap(),
            shlex::try_quote(env!("CARGO_BIN_EXE_cuekit")).unwrap()
        ));
        self.session_running(session, &script, (width, height));
    }

    /// Waits until session `session`'s pane shows what `condition` looks for, and returns
    /// the screen; fails with the screen after 30 s.
    #[track_caller]
    pub fn wait_pane(&self, session: &str, what: &str, condition: impl Fn(&str) -> bool) -> String {
        let target = format!("={session}:");
        let start = Instant::now();
        let mut pause = Pause::new();
        loop {
            let shown =
                String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", &target]).stdout)
                    .into_owned();
            if condition(&shown) {
                return shown;
            }
            assert!(
                start.elapsed() < limits::TASK,
                "never saw {what}; the screen:\n{shown}"
            );
            pause.sleep();
        }
    }

    /// What the task's pane shows now.
    pub fn screen(&self, id: &str) -> String {
        let (pane, _) = self.pane(id);
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", &pane]).stdout)
            .into_owned()
    }
}

impl Drop for Harness {
    /// `kill-server` alone leaves the Gemini CLI running: end every pane's process tree first.
    /// The test's scheduler and monitors go before anything, or a queued task would start on
    /// a server made anew. Every step looks at /proc once, whatever the number of panes: a look
    /// reads every process of the machine, and one look per pane (300 in `top_cost`) made this
    /// drop a minute of CPU at the end of a loaded run.
    fn drop(&mut self) {
        for (pid, cmdline) in self.own_processes() {
            if holds_entry(&cmdline, "__scheduler") || holds_entry(&cmdline, "__monitor") {
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        let panes = self.tmux(&["list-panes", "-a", "-F", "#{pane_pid}"]);
        let panes = String::from_utf8_lossy(&panes.stdout)
            .lines()
            .filter_map(|l| l.parse().ok())
            .collect();
        cuekit::effects::process::terminate(panes, Duration::from_millis(500));
        let _ = self.tmux(&["kill-server"]);
        // This test's processes still running (its server's monitor recording the endings, a
        // detached stopper, a daemon an agent CLI left, such as Codex's app server) would write
        // into the temp dir while it is removed, or be found by the next test. Each runs with
        // this test's HOME, a temp dir no other test has.
        let pids: Vec<u32> = self
            .own_processes()
            .into_iter()
            .map(|(pid, _)| pid)
            .collect();
        for pid in &pids {
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
        poll(Duration::from_secs(2), || {
            pids.iter().all(|pid| !self.is_own_process(*pid))
        });
    }
}

impl Harness {
    /// This test's processes (other than this one): those running with its HOME, a temp dir no
    /// other test has; each with its command line.
    fn own_processes(&self) -> Vec<(u32, Vec<u8>)> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .filter(|pid| *pid != std::process::id() && self.is_own_process(*pid))
            .map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                (pid, cmdline)
            })
            .collect()
    }

    /// Whether `pid` runs with this test's HOME.
    fn is_own_process(&self, pid: u32) -> bool {
        let home = format!("HOME={}", self.home.display());
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| holds_entry(&env, &home))
    }
}

/// Whether a NUL-separated list of `/proc` (a `cmdline`, an `environ`) holds `entry` whole.
fn holds_entry(list: &[u8], entry: &str) -> bool {
    list.split(|b| *b == 0).any(|e| e == entry.as_bytes())
}

/// Whether an environment variable may carry an agent's login (an API key, a token, a provider
/// endpoint): the tests see each agent as a fresh machine does, whatever the shell that runs them
/// holds, so a real CLI shows its login screen and a fake is never handed a real key.
fn is_agent_credential(name: &str) -> bool {
    const PREFIXES: [&str; 12] = [
        "OPENAI_",
        "CODEX_",
        "ANTHROPIC_",
        "CLAUDE_",
        "GEMINI_",
        "GOOGLE_",
        "QWEN_",
        "DASHSCOPE_",
        "OPENROUTER_",
        "COPILOT_",
        "AZURE_OPENAI",
        "VERTEX",
    ];
    name.contains("API_KEY")
        || name.ends_with("_TOKEN")
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// The argv of a task of the `command` agent running `sh -c SCRIPT`, `extra` flags before it:
/// `--agent command EXTRA… -- sh -c SCRIPT` (words pushed after it are the script's `$0`,
/// `$1`…).
pub fn sh_task<'a>(script: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--agent", "command"];
    args.extend_from_slice(extra);
    args.extend(["--", "sh", "-c", script]);
    args
}

/// Canned Gemini replies, one text each.
pub fn canned_texts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| canned_text(text)).collect()
}

/// Asserts a `--json` answer is the refusal `expected` with exit status `status`.
#[track_caller]
pub fn assert_refused(answer: &Value, code: i32, expected: &str, status: i32) {
    assert_eq!(
        (answer["error"]["code"].as_str(), code),
        (Some(expected), status),
        "{answer}"
    );
}

/// The ids of the tasks an answer lists under `tasks` (a `team submit`, a race), in order.
#[track_caller]
pub fn task_ids(answer: &Value) -> Vec<String> {
    answer["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks in {answer}"))
        .iter()
        .map(|task| {
            task["id"]
                .as_str()
                .unwrap_or_else(|| panic!("a task without an id in {answer}"))
                .to_string()
        })
        .collect()
}

/// How long a wait on something the code records may take before the test fails, saying what
/// it waited for: generous, so that only a hang fails it, never a slow machine.
pub const HANG_GUARD: Duration = limits::AGENT;

/// Runs `command` to its end with a hang guard: its output, or a failure naming it (killed)
/// after `limit`.
#[track_caller]
pub fn within(mut command: Command, limit: Duration) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output().unwrap()));
    finished.recv_timeout(limit).unwrap_or_else(|_| {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        panic!("{command:?} hung for more than {limit:?}")
    })
}

/// Polls `condition` until it holds or `limit` passes; returns whether it held. The looks
/// come [`Pause`]'s way: often at first, then at most every 250 ms.
/// The file at `path` (made if missing) with an exclusive `flock` held on it until it is
/// dropped: cuekit's own locks are `flock`'s, so another process finds the lock taken.
pub fn held_lock(path: &Path) -> std::fs::File {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap();
    lock.lock().unwrap();
    lock
}

pub fn poll(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    let mut pause = Pause::new();
    while start.elapsed() < limit {
        if condition() {
            return true;
        }
        pause.sleep();
    }
    condition()
}

/// The pauses between a wait's looks: 50 ms at first (a short wait ends as soon as it did
/// with a fixed 50 ms), then half as long again after each look, up to 250 ms. Most looks start
/// a process or two (`cuekit status`, `tmux capture-pane`), and the suite is CPU-bound on two
/// cores: a 10 s wait took 200 looks at a fixed 50 ms, and takes about 40.
pub struct Pause(Duration);

impl Pause {
    /// The first pause.
    pub const FIRST: Duration = Duration::from_millis(50);
    /// The longest pause: how late at most a wait sees its condition hold.
    pub const LONGEST: Duration = Duration::from_millis(250);

    pub fn new() -> Pause {
        Pause(Self::FIRST)
    }

    /// Sleeps this pause, and makes the next one longer.
    pub fn sleep(&mut self) {
        std::thread::sleep(self.0);
        self.0 = (self.0 * 3 / 2).min(Self::LONGEST);
    }
}

impl Default for Pause {
    fn default() -> Pause {
        Pause::new()
    }
}

/// Writes an executable at `path`. The test process never holds `path` open for writing: a
/// child another test thread forks meanwhile would inherit that descriptor until its exec, and
/// every exec of `path` until then fails with "Text file busy". `cp` writes it instead.
pub fn write_executable(path: &Path, content: &str) {
    let source = path.with_extension("source");
    std::fs::write(&source, content).unwrap();
    install_executable(&source, path);
    std::fs::remove_file(&source).unwrap();
}

/// Copies `from` to an executable at `to`, by a `cp` child (see [`write_executable`]).
pub fn install_executable(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let copied = Command::new("cp").arg(from).arg(to).status().unwrap();
    assert!(copied.success(), "cp {} {}", from.display(), to.display());
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The tmux on PATH, as a shim of a test's own finds it to run it.
pub fn real_tmux() -> PathBuf {
    let found = Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .unwrap()
        .stdout;
    PathBuf::from(String::from_utf8(found).unwrap().trim())
}

/// Fails the test when it runs in nextest's `quick` profile (.config/nextest.toml), which is for
/// the tests that need nothing but tmux, /bin/sh and git: a test that needs `what` (an agent CLI,
/// the browser, sshd) belongs in that profile's filter, and a test missing from it says so here
/// instead of waiting on an install the quick loop never made.
pub fn needs(what: &str) {
    if std::env::var_os("NEXTEST_PROFILE").is_some_and(|profile| profile == "quick") {
        panic!(
            "this test needs {what}, which the quick profile leaves out: \
             name it in the quick profile's default-filter in .config/nextest.toml"
        );
    }
}

/// Waits until the install of the tools scripts/test runs in the background is over, when
/// `CUEKIT_TEST_TOOLS_READY` names the file its exit status goes to: the tests that need no
/// tool start while it still runs. Fails if it failed, or is not over in ten minutes.
#[track_caller]
pub fn tools_ready() {
    needs("the agent CLIs and Python that scripts/test installs into .tools/");
    let Some(ready) = std::env::var_os("CUEKIT_TEST_TOOLS_READY").map(PathBuf::from) else {
        return;
    };
    assert!(
        poll(Duration::from_secs(600), || ready.exists()),
        "the tools' install (scripts/test) was not over in 10 minutes: {}",
        ready.display()
    );
    let status = std::fs::read_to_string(&ready).unwrap_or_default();
    assert_eq!(
        status.trim(),
        "0",
        "the tools' install (scripts/test) failed; its log follows the tests"
    );
}

/// The real Gemini CLI installed by scripts/test (or named by CUEKIT_TEST_GEMINI).
#[track_caller]
pub fn real_gemini() -> PathBuf {
    tools_ready();
    let path = std::env::var_os("CUEKIT_TEST_GEMINI")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/node_modules/.bin/gemini")
        });
    assert!(
        path.exists(),
        "the real Gemini CLI is not installed at {}: run scripts/test, which installs it into .tools/",
        path.display()
    );
    path
}

/// The folder of the CLIs scripts/test installs: `.tools/node_modules/.bin`, or the same under
/// `CUEKIT_TEST_TOOLS` when that names another npm prefix (an install kept outside the
/// checkout). A bridge such as pi-acp runs its agent from PATH, so tests put this folder there.
pub fn tools_bin() -> PathBuf {
    tools_ready();
    std::env::var_os("CUEKIT_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools"))
        .join("node_modules/.bin")
}

/// The folder scripts/test installs into, `.tools/` (or `CUEKIT_TEST_TOOLS`): the agent CLIs, the
/// Node they run on, its compile cache and the Python venv. A sandboxed test agent is shown it.
pub fn tools_root() -> PathBuf {
    tools_bin()
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

/// A CLI installed by scripts/test into .tools/ (the real binary, not a stand-in).
#[track_caller]
pub fn installed_tool(name: &str) -> PathBuf {
    let path = tools_bin().join(name);
    assert!(
        path.exists(),
        "{} is not installed: run scripts/test, which installs it into .tools/",
        path.display()
    );
    path
}

/// The live processes carrying `CUEKIT_TASK_ID=<id>`, found the way a person would: /proc.
/// Waits (10 s at most) until no process of task `id` is left, failing with the ones that are.
#[track_caller]
pub fn assert_nothing_left(id: &str) {
    assert!(
        poll(limits::SHORT, || processes_of(id).is_empty()),
        "processes of {id} left running: {:?}",
        processes_of(id)
    );
}

/// Whether a live process of task `id` runs `argv` (its command line, words joined by spaces):
/// the task's own command is up, not only the short-lived helpers of its launch (the start
/// gate's `sleep 0.01`, which carry the task id too and come and go).
pub fn runs(id: &str, argv: &str) -> bool {
    processes_of(id).into_iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
            let words: Vec<&[u8]> = cmdline
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .collect();
            words.join(&b' ') == argv.as_bytes()
        })
    })
}

pub fn processes_of(id: &str) -> Vec<u32> {
    let marker = format!("CUEKIT_TASK_ID={id}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.rsplit(')').next().unwrap_or("").starts_with(" Z"));
            alive
                && std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                    env.split(|b| *b == 0)
                        .any(|entry| entry == marker.as_bytes())
                })
        })
        .collect()
}

//! `cuekit top` in a real terminal: a tmux pane on the test's private server runs it, tasks are
//! submitted from outside, keys go in with `send-keys` and the screen is read back with
//! `capture-pane`.

use crate::harness::limits;
use std::time::{Duration, Instant};

use crate::harness::{Harness, MODEL, canned_text};

const TOP: &str = "=top:";

/// Starts `cuekit top` in its own session with the environment every cuekit the harness runs
/// gets: as a person outside tmux would run it (no `$TMUX`), or inside the user's tmux (here
/// the test's server, which sets `$TMUX` in its panes). When it exits, the pane says so and
/// stays.
fn start_top(h: &Harness, inside_tmux: bool) {
    h.in_terminal("top", "top --refresh 300ms", (150, 40), inside_tmux);
}

/// Waits until the top pane shows what `condition` looks for; fails with the screen.
fn wait_screen(h: &Harness, what: &str, condition: impl Fn(&str) -> bool) -> String {
    h.wait_pane("top", what, condition)
}

fn keys(h: &Harness, text: &str) {
    assert!(
        h.tmux(&["send-keys", "-t", TOP, "-l", "--", text])
            .status
            .success()
    );
}

fn key(h: &Harness, name: &str) {
    assert!(h.tmux(&["send-keys", "-t", TOP, name]).status.success());
}

/// The table row of a task, as drawn.
fn row_of(shown: &str, id: &str) -> Option<String> {
    shown
        .lines()
        .find(|line| line.contains(id))
        .map(str::to_string)
}

fn selected(shown: &str) -> Option<String> {
    shown
        .lines()
        .find(|line| line.starts_with('▶'))
        .map(str::to_string)
}

#[test]
fn rows_appear_attach_comes_back_cancel_asks_and_q_restores_the_terminal() {
    let h = Harness::new();
    start_top(&h, false);
    wait_screen(&h, "its header", |s| s.contains("cuekit top"));
    let first = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        "echo first-child; sleep 600",
    ]);
    let second = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        "echo second-child; sleep 600",
    ]);
    let shown = wait_screen(&h, "both tasks", |s| {
        s.contains(&first) && s.contains(&second)
    });
    assert!(shown.contains("2 running"), "{shown}");

    // The first row is selected and its live screen previewed.
    let shown = wait_screen(&h, "the first task's screen", |s| {
        s.contains(&format!("{first} — running — screen")) && s.contains("first-child")
    });
    assert!(selected(&shown).unwrap().contains(&first), "{shown}");

    // Enter attaches this terminal to the task; detaching comes back to the dashboard.
    key(&h, "Enter");
    wait_screen(&h, "the child's own pane", |s| {
        s.contains("first-child") && !s.contains("cuekit top")
    });
    key(&h, "C-b");
    key(&h, "d");
    wait_screen(&h, "the dashboard again", |s| {
        s.contains("cuekit top") && s.contains(&second)
    });

    // x asks first; y cancels.
    keys(&h, "j");
    wait_screen(&h, "the second task selected", |s| {
        selected(s).is_some_and(|row| row.contains(&second))
    });
    keys(&h, "x");
    wait_screen(&h, "the confirmation", |s| {
        s.contains(&format!("cancel {second}? y cancels it"))
    });
    keys(&h, "y");
    let shown = wait_screen(&h, "the task cancelled", |s| {
        row_of(s, &second).is_some_and(|row| row.contains("cancelled"))
    });
    assert!(
        row_of(&shown, &first).unwrap().contains("running"),
        "{shown}"
    );
    assert_eq!(h.status(&second)["status"], "cancelled");
    assert_eq!(h.status(&first)["status"], "running");

    keys(&h, "q");
    let shown = wait_screen(&h, "the shell's screen back", |s| {
        s.contains("exited with 0")
    });
    assert!(!shown.contains("cuekit top"), "{shown}");
    let alternate = h.tmux(&["display-message", "-p", "-t", TOP, "#{alternate_on}"]);
    assert_eq!(String::from_utf8_lossy(&alternate.stdout).trim(), "0");
}

#[test]
fn a_child_waiting_on_a_human_moves_to_the_top_and_a_steer_reaches_it_once() {
    let h =
        Harness::new().with_real_gemini(&[canned_text("Answer one."), canned_text("Answer two.")]);
    // Created first, so without the attention rule it would stay the first row.
    let busy = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    start_top(&h, false);
    wait_screen(&h, "the running task", |s| s.contains(&busy));
    let id = h.submit(&["--model", MODEL, "First question"]);
    let shown = wait_screen(&h, "the Gemini task waiting on its human", |s| {
        row_of(s, &id).is_some_and(|row| row.contains("finished its turn"))
    });
    let rows: Vec<&str> = shown
        .lines()
        .filter(|line| line.contains(&id) || line.contains(&busy))
        .filter(|line| !line.contains('─'))
        .collect();
    assert!(rows[0].contains(&id), "not first:\n{shown}");
    // The selection stayed on its task while rows moved; `g` goes to the first row.
    keys(&h, "g");
    wait_screen(&h, "it selected", |s| {
        selected(s).is_some_and(|row| row.contains(&id))
    });

    keys(&h, "s");
    wait_screen(&h, "the steer line", |s| {
        s.contains(&format!("steer {id}>"))
    });
    keys(&h, "Second question from top");
    key(&h, "Enter");
    wait_screen(&h, "the receipt", |s| {
        s.contains(&format!("{id}: steered — the child received your message"))
    });
    h.wait_until(&id, "the second answer", limits::AGENT, || {
        h.transcript(&id).contains("Answer two.")
    });
    let (pane, _) = h.pane(&id);
    let history = h.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", &pane]);
    let history = String::from_utf8_lossy(&history.stdout);
    wait_screen(&h, "the answer in the preview", |s| {
        s.contains("Answer two.")
    });
    assert_eq!(
        history.matches("Second question from top").count(),
        1,
        "{history}"
    );
    keys(&h, "q");
    wait_screen(&h, "top gone", |s| s.contains("exited with 0"));
}

/// A second tmux server standing for the user's terminal: its one pane runs a client attached
/// to the dashboard's session, so popups have a client to open on.
struct Client {
    socket: String,
}

impl Client {
    fn attach(h: &Harness) -> Client {
        Client::attach_to(h, "top")
    }

    /// A client of session `session` of the test's server.
    fn attach_to(h: &Harness, session: &str) -> Client {
        let client = Client {
            socket: format!("{}-client", h.socket),
        };
        let attach = format!("env -u TMUX tmux -L {} attach -t ={session}", h.socket);
        let started = std::process::Command::new("tmux")
            .args(["-L", &client.socket, "new-session", "-d", "-s", "terminal"])
            .args(["-x", "150", "-y", "40", &attach])
            .output()
            .unwrap();
        assert!(started.status.success(), "{started:?}");
        client
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap()
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-t", "=terminal:"])
                .stdout,
        )
        .into_owned()
    }

    fn wait_screen(&self, what: &str, condition: impl Fn(&str) -> bool) -> String {
        self.shows(limits::TASK, &condition)
            .unwrap_or_else(|shown| panic!("the terminal never showed {what}:\n{shown}"))
    }

    /// The screen once it meets `condition`, or the last one seen after `limit`.
    fn shows(&self, limit: Duration, condition: &impl Fn(&str) -> bool) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let shown = self.screen();
            if condition(&shown) {
                return Ok(shown);
            }
            if start.elapsed() >= limit {
                return Err(shown);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

#[test]
fn inside_the_users_tmux_attach_opens_a_popup_and_detaching_closes_it() {
    let h = Harness::new();
    let id = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        "echo popup-child; sleep 600",
    ]);
    start_top(&h, true);
    let terminal = Client::attach(&h);
    terminal.wait_screen("the dashboard", |s| {
        s.contains(&id) && s.contains("1 running")
    });
    key(&h, "Enter");
    // The popup's border is drawn over the dashboard, the child's screen inside it. tmux opens
    // no popup on a client it does not count as ready yet (a loaded machine, once in a CI
    // run): a second Enter then must open it, and the first screen is kept for the failure.
    let popup = |s: &str| {
        s.lines()
            .any(|line| line.contains('│') && line.contains("popup-child"))
    };
    let shown = match terminal.shows(limits::SHORT, &popup) {
        Ok(shown) => shown,
        Err(first) => {
            key(&h, "Enter");
            terminal
                .shows(limits::TASK, &popup)
                .unwrap_or_else(|shown| {
                    panic!("no popup after two Enters:\n{first}\nthen:\n{shown}")
                })
        }
    };
    assert!(shown.lines().next().unwrap().contains('┌'), "{shown}");
    // Keys typed now go to the popup: detaching there closes it.
    terminal.tmux(&["send-keys", "-t", "=terminal:", "C-b", "d"]);
    terminal.wait_screen("the dashboard back", |s| {
        s.contains(&format!("back from {id}")) && !s.contains('┌')
    });
    assert_eq!(h.status(&id)["status"], "running");
}

#[test]
fn a_child_on_its_login_screen_shows_first_and_a_steer_from_top_is_blocked() {
    let h = Harness::new().with_real_gemini(&[canned_text("unused")]);
    std::fs::remove_file(h.home.join(".gemini/settings.json")).unwrap();
    let h = h.env("GEMINI_API_KEY", "");
    let busy = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    let id = h.submit(&["--model", MODEL, "hello"]);
    start_top(&h, false);
    let shown = wait_screen(&h, "the login screen noticed", |s| {
        row_of(s, &id).is_some_and(|row| row.contains("waiting for you — needs a login or API key"))
    });
    let first_row = shown
        .lines()
        .find(|line| line.contains(&id) || line.contains(&busy))
        .unwrap();
    assert!(first_row.contains(&id), "{shown}");
    keys(&h, "g");
    wait_screen(&h, "its login dialog previewed", |s| {
        selected(s).is_some_and(|row| row.contains(&id)) && s.contains("Use Gemini API Key")
    });
    keys(&h, "s");
    keys(&h, "1");
    key(&h, "Enter");
    wait_screen(&h, "the blocked receipt", |s| {
        s.contains(&format!(
            "{id}: not sent — a dialog holds the child: needs a login or API key"
        ))
    });
    assert!(
        h.screen(&id).contains("How would you like to authenticate"),
        "nothing may be typed into the dialog"
    );
}

/// An ACP task's permission request is answered from the dashboard: its row says what it waits
/// for, `p` then `y` allows it, and the tool really runs.
#[test]
fn an_acp_tasks_permission_request_is_answered_from_top() {
    let shell = crate::harness::canned_shell_call("echo top > t.txt");
    let h = Harness::new().with_real_gemini(&[shell, canned_text("Wrote t.txt.")]);
    start_top(&h, false);
    let id = h.submit(&[
        "--mode",
        "acp",
        "--model",
        MODEL,
        "--no-skip-permissions",
        "--sandbox=none",
        "Write t.txt",
    ]);
    wait_screen(&h, "the request in its row", |s| {
        row_of(s, &id).is_some_and(|row| row.contains("waiting for you — asks a permission"))
    });
    keys(&h, "g");
    wait_screen(&h, "it selected", |s| {
        selected(s).is_some_and(|row| row.contains(&id))
    });
    keys(&h, "p");
    wait_screen(&h, "the question", |s| {
        s.contains(&format!("{id} asks a permission"))
    });
    assert!(
        !h.project.join("t.txt").exists(),
        "ran before it was allowed"
    );
    keys(&h, "y");
    wait_screen(&h, "the answer", |s| s.contains(&format!("{id}: Allow")));
    h.wait_until(&id, "the tool's file", limits::TASK, || {
        h.project.join("t.txt").exists()
    });
    wait_screen(&h, "the turn's end in its row", |s| {
        row_of(s, &id).is_some_and(|row| row.contains("finished its turn"))
    });
    keys(&h, "q");
    wait_screen(&h, "top gone", |s| s.contains("exited with 0"));
}

/// Moves the selection onto task `id`'s row.
fn select(h: &Harness, id: &str) {
    keys(h, "g");
    let mut shown = String::new();
    for round in 1..=20 {
        shown = h.wait_pane("top", "a selected row", |s| selected(s).is_some());
        if selected(&shown).is_some_and(|row| row.contains(id)) {
            return;
        }
        // Rows move as their states change (a dialog sorts first): from the top again, now
        // and then.
        keys(h, if round % 3 == 0 { "g" } else { "j" });
        std::thread::sleep(Duration::from_millis(400));
    }
    panic!("{id} never selected; the screen:\n{shown}");
}

/// An interactive Gemini child's permission dialog is answered from the dashboard as an ACP
/// request is: `p` then `y` types the dialog's "Allow once" digit (the tool runs), `p` then `n`
/// its "No" (it never runs).
#[test]
fn an_interactive_childs_dialog_is_allowed_and_rejected_from_top() {
    let h = Harness::new().with_real_gemini(&[
        crate::harness::canned_shell_call("echo top > t.txt"),
        canned_text("Wrote t.txt."),
    ]);
    // The two tasks work in folders of their own (each a project): every task is shown.
    h.in_terminal("top", "top --all --refresh 300ms", (150, 40), false);
    let submit = |folder: &str| {
        let dir = h.project.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.to_string_lossy().into_owned();
        let args = [
            "--cwd",
            &dir,
            "--model",
            MODEL,
            "--no-skip-permissions",
            "--sandbox=none",
            "Write t.txt",
        ];
        h.submit(&args)
    };
    let allowed = submit("allowed");
    let rejected = submit("rejected");
    for id in [&allowed, &rejected] {
        wait_screen(&h, "the dialog in its row", |s| {
            row_of(s, id).is_some_and(|row| row.contains("waiting for you — asks to run"))
        });
    }
    for (id, key, answer) in [
        (&allowed, "y", "Allow once"),
        (&rejected, "n", "No, suggest changes (esc)"),
    ] {
        select(&h, id);
        keys(&h, "p");
        wait_screen(&h, "the question", |s| {
            s.contains(&format!("{id} asks a permission"))
        });
        keys(&h, key);
        wait_screen(&h, "the answer", |s| s.contains(&format!("{id}: {answer}")));
    }
    h.wait_until(&allowed, "the tool's file", limits::TASK, || {
        h.project.join("allowed/t.txt").exists()
    });
    wait_screen(&h, "both turns' ends in their rows", |s| {
        [&allowed, &rejected]
            .iter()
            .all(|id| row_of(s, id).is_some_and(|row| row.contains("finished its turn")))
    });
    assert!(
        !h.project.join("rejected/t.txt").exists(),
        "a rejected tool ran"
    );
    keys(&h, "q");
    wait_screen(&h, "top gone", |s| s.contains("exited with 0"));
}

/// `cuekit attach` run inside the user's tmux (a pane with a client on a terminal) opens the
/// task in a popup of it, as `top` does: the task's own detach key closes it, and the pane
/// says how to come back.
#[test]
fn attach_inside_the_users_tmux_opens_a_popup_and_says_how_to_come_back() {
    let h = Harness::new();
    let id = h.submit_sh("echo popup-attached; sleep 600", &[]);
    // The pane waits for its terminal's client before it runs `cuekit attach`.
    let cuekit = env!("CARGO_BIN_EXE_cuekit");
    h.in_terminal(
        "person",
        &format!("--version; tmux wait-for person-go; '{cuekit}' attach {id}"),
        (150, 40),
        true,
    );
    let terminal = Client::attach_to(&h, "person");
    terminal.wait_screen("the pane", |s| s.contains("cuekit "));
    assert!(h.tmux(&["wait-for", "-S", "person-go"]).status.success());
    let shown = terminal.wait_screen("the task in a popup", |s| {
        s.lines()
            .any(|line| line.contains('│') && line.contains("popup-attached"))
    });
    assert!(shown.lines().next().unwrap().contains('┌'), "{shown}");
    assert!(
        shown.contains(&format!("[cuekit {id}, detach: C-b d]")),
        "{shown}"
    );
    terminal.tmux(&["send-keys", "-t", "=terminal:", "C-b", "d"]);
    let shown = terminal.wait_screen("the pane back", |s| {
        s.contains("exited with") && !s.contains('┌')
    });
    assert!(
        shown.contains(&format!("`cuekit attach {id}` comes back")),
        "{shown}"
    );
    assert_eq!(h.status(&id)["status"], "running");
}

/// `h` hands a running task off: a batch Gemini attempt that works on (a long sleep) is ended
/// from the dashboard, and the next attempt runs on jcode (tests/fixtures/fake-jcode, which
/// answers its prompt), told the recap and the message typed in top.
#[test]
fn h_hands_a_running_task_off_to_another_agent_from_top() {
    let h = Harness::new();
    crate::harness::write_executable(&h.bin.join("gemini"), "#!/bin/sh\nexec sleep 300\n");
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-jcode");
    crate::harness::install_executable(&fixture, &h.bin.join("jcode"));
    let id = h.submit(&["--mode", "batch", "Write the release notes"]);
    start_top(&h, false);
    wait_screen(&h, "the running task", |s| {
        row_of(s, &id).is_some_and(|row| row.contains("running"))
    });
    select(&h, &id);
    keys(&h, "h");
    let prompt = format!("hand {id} off to ");
    // The agent the prompt offers now.
    let offered = |shown: &str| {
        shown
            .lines()
            .find_map(|line| line.split_once(prompt.as_str()))
            .map(|(_, rest)| rest.split('▏').next().unwrap_or_default().to_string())
    };
    // ↓ steps through the agents installed here until jcode is offered.
    let mut agent = offered(&wait_screen(&h, "the hand-off prompt", |s| {
        offered(s).is_some()
    }))
    .unwrap();
    for _ in 0..12 {
        if agent == "jcode" {
            break;
        }
        key(&h, "Down");
        let shown = wait_screen(&h, "the next agent offered", |s| {
            offered(s).is_some_and(|next| next != agent)
        });
        agent = offered(&shown).unwrap();
    }
    assert_eq!(agent, "jcode");
    key(&h, "Enter");
    wait_screen(&h, "the message line", |s| {
        s.contains("message for jcode (optional)>")
    });
    keys(&h, "Keep the draft");
    key(&h, "Enter");
    wait_screen(&h, "the hand-off's outcome", |s| {
        s.contains(&format!("{id} handed off to jcode"))
    });
    h.wait_until(&id, "jcode's answer", limits::TASK, || {
        h.transcript(&id).contains("JCODE-RUN-REPLY")
    });
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::TASK)]);
    let task = h.status(&id);
    assert_eq!(code, 0, "{waited}\n{task}\n{}", h.transcript(&id));
    assert_eq!(task["agent_kind"], "jcode", "{task}");
    assert_eq!(task["queue"]["attempts"][0]["agent"], "gemini", "{task}");
    assert_eq!(
        task["queue"]["attempts"][0]["reason"], "handed_off",
        "{task}"
    );
    assert_eq!(task["queue"]["attempts"][1]["agent"], "jcode", "{task}");
    let transcript = h.transcript(&id);
    for part in ["Keep the draft", "END OF THE PREVIOUS AGENT'S NOTES"] {
        assert!(transcript.contains(part), "{part:?} missing:\n{transcript}");
    }
    wait_screen(&h, "the task's new agent on its row", |s| {
        row_of(s, &id).is_some_and(|row| row.contains("jcode"))
    });
    keys(&h, "q");
    wait_screen(&h, "top gone", |s| s.contains("exited with 0"));
}

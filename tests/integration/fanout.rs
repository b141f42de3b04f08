//! Fan-out for parents: roles (agent profiles), teams, and children that report back. Real
//! cuekit binary, real tmux on a private socket, real /bin/sh; the fake Gemini only to see the
//! argv a role produces.

use crate::harness::limits;

use crate::harness::sh_task;
use crate::harness::{HANG_GUARD, Harness, poll, write_executable};
use serde_json::Value;

/// The test's cuekit binary as `cuekit` on the pane's PATH, as an installed cuekit would be.
fn cuekit_on_path(h: &Harness) {
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cuekit"), h.bin.join("cuekit")).unwrap();
}

/// The prompt in a dry run's launch command: its last shell word.
fn dry_run_prompt(launch_command: &str) -> String {
    shlex::split(launch_command)
        .expect("well-formed quoting")
        .pop()
        .unwrap()
}

fn ids(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn roles_resolve_across_project_user_and_builtin_scopes() {
    let h = Harness::new();
    let user = h.home.join(".config/cuekit/agents");
    let project = h.project.join(".cuekit/agents");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    // The user replaces the built-in reviewer's instructions and names a model for it.
    std::fs::write(
        user.join("reviewer.md"),
        "---\ndescription: Our reviewer.\nmodel: gemini-2.5-pro\n---\nUser review rules.\n",
    )
    .unwrap();
    // The project adds to the user's reviewer, and to the built-in worker (switching its mode).
    std::fs::write(
        project.join("reviewer.md"),
        "---\ninstructions_mode: append\n---\nProject: focus on src/.\n",
    )
    .unwrap();
    std::fs::write(
        project.join("worker.md"),
        "---\ninstructions_mode: append\nmode: batch\n---\nProject: run make check.\n",
    )
    .unwrap();
    std::fs::write(project.join("triage.md"), "Sort the open issues.\n").unwrap();
    // Found from a subdirectory, as `.cuekit.yaml` is.
    let sub = h.project.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let output = h
        .cuekit()
        .current_dir(&sub)
        .args(["--json", "roles"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let roles: Value = serde_json::from_slice(&output.stdout).unwrap();
    let role = |name: &str| -> Value {
        roles
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no role {name} in {roles}"))
            .clone()
    };
    let reviewer = role("reviewer");
    assert_eq!(
        reviewer["instructions"],
        "User review rules.\n\nProject: focus on src/."
    );
    assert_eq!(reviewer["description"], "Our reviewer.");
    assert_eq!(reviewer["model"], "gemini-2.5-pro");
    // The built-in's approval mode is inherited: no nearer profile set another.
    assert_eq!(reviewer["approval_mode"], "plan");
    let layers: Vec<&str> = reviewer["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["kind"].as_str().unwrap())
        .collect();
    assert_eq!(layers, ["built_in", "user", "project"]);
    assert_eq!(
        reviewer["source"]["path"],
        project.join("reviewer.md").to_str().unwrap()
    );
    let worker = role("worker");
    assert!(
        worker["instructions"]
            .as_str()
            .unwrap()
            .starts_with("You are a worker")
    );
    assert!(
        worker["instructions"]
            .as_str()
            .unwrap()
            .ends_with("Project: run make check.")
    );
    assert_eq!(worker["mode"], "batch");
    assert_eq!(role("tester")["source"]["kind"], "built_in");
    assert_eq!(role("planner")["source"]["kind"], "built_in");
    assert_eq!(role("triage")["instructions"], "Sort the open issues.");
    let text = h.ok(&["roles"]);
    assert!(
        text.contains(project.join("reviewer.md").to_str().unwrap()),
        "{text}"
    );

    // The prompt of a task with a role: the flag's model beats the profile's, the profile's
    // approval mode beats the built-in default, and the instructions come before the constraints.
    let (dry, code) = h.json(&[
        "submit",
        "--dry-run",
        "--role",
        "reviewer",
        "--model",
        "gemini-2.5-flash",
        "--constraint",
        "be brief",
        "Review PR 7",
    ]);
    assert_eq!(code, 0, "{dry}");
    let launch = dry["launch_command"].as_str().unwrap();
    assert!(launch.contains("-m 'gemini-2.5-flash'"), "{launch}");
    assert!(launch.contains("--approval-mode plan"), "{launch}");
    let prompt = dry_run_prompt(launch);
    assert!(
        prompt.starts_with(
            "Review PR 7\n\nInstructions for your role (reviewer):\nUser review rules.\n\n\
             Project: focus on src/.\n\nConstraints:\n- be brief\n\nReporting back:"
        ),
        "{prompt}"
    );
    assert!(prompt.contains("cuekit report --blocked"), "{prompt}");
    // Without the flag, the profile's model applies; the role's mode too, unless a flag says.
    let (dry, _) = h.json(&["submit", "--dry-run", "--role", "reviewer", "x"]);
    assert!(
        dry["launch_command"]
            .as_str()
            .unwrap()
            .contains("-m 'gemini-2.5-pro'")
    );
    let (dry, _) = h.json(&["submit", "--dry-run", "--role", "worker", "x"]);
    assert_eq!(dry["mode"], "batch", "{dry}");
    let (dry, _) = h.json(&[
        "submit",
        "--dry-run",
        "--role",
        "worker",
        "--mode",
        "interactive",
        "x",
    ]);
    assert_eq!(dry["mode"], "interactive", "{dry}");
    // A plain task's prompt is the objective alone, as before.
    let (dry, _) = h.json(&["submit", "--dry-run", "plain"]);
    assert_eq!(dry["launch_command"], "gemini --skip-trust -y 'plain'");
}

#[test]
fn a_task_submitted_with_a_role_gets_the_instructions_in_its_real_launch() {
    let h = Harness::new().with_fake_gemini();
    let argv_file = h.root().join("argv");
    let h = h.env("FAKE_GEMINI_ARGV", argv_file.to_str().unwrap());
    let id = h.submit(&["--role", "tester", "--team", "qa", "Test the parser"]);
    h.wait_until(&id, "the fake gemini's argv", limits::SHORT, || {
        argv_file.exists() && !std::fs::read(&argv_file).unwrap().is_empty()
    });
    let argv = std::fs::read(&argv_file).unwrap();
    let argv: Vec<&str> = std::str::from_utf8(&argv)
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .collect();
    let prompt = argv.last().unwrap();
    assert!(
        prompt.starts_with(
            "Test the parser\n\nInstructions for your role (tester):\nYou are a tester"
        ),
        "{argv:?}"
    );
    assert!(prompt.contains("cuekit report --blocked"), "{prompt}");
    let status = h.status(&id);
    assert_eq!(
        (status["role"].as_str(), status["team"].as_str()),
        (Some("tester"), Some("qa"))
    );
    let record: Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(&id).join("task.json")).unwrap()).unwrap();
    assert_eq!(record["spec"]["role"], "tester");
    assert!(
        record["spec"]["role_instructions"]
            .as_str()
            .unwrap()
            .starts_with("You are a tester")
    );
    h.ok(&["cancel", &id]);
}

#[test]
fn a_broken_or_unknown_profile_is_refused_with_its_location() {
    let h = Harness::new();
    let project = h.project.join(".cuekit/agents");
    std::fs::create_dir_all(&project).unwrap();
    let broken = project.join("broken.md");
    std::fs::write(&broken, "---\ndescription: fine\nmode: [batch\n---\nbody\n").unwrap();
    // `roles` lists it broken, located, beside the others (one broken profile hides none).
    let (roles, code) = h.json(&["roles"]);
    assert_eq!(code, 0, "{roles}");
    let rows = roles.as_array().unwrap();
    assert!(rows.iter().any(|row| row["name"] == "worker"), "{roles}");
    let error = rows
        .iter()
        .find(|row| row["name"] == "broken")
        .expect("the broken profile is listed");
    assert_eq!(error["error"]["code"], "config_invalid");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{}:3:", broken.display())),
        "{message}"
    );
    let (error, code) = h.json(&["submit", "--role", "broken", "x"]);
    assert_eq!(code, 12, "{error}");
    std::fs::write(&broken, "---\nmodle: x\n---\nbody\n").unwrap();
    let (error, _) = h.json(&["submit", "--dry-run", "--role", "broken", "x"]);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}:2:1: unknown field `modle`", broken.display())),
        "{error}"
    );
    let (error, code) = h.json(&["submit", "--role", "nobody", "x"]);
    assert_eq!(code, 3, "{error}");
    assert!(
        error["error"]["hint"].as_str().unwrap().contains("worker"),
        "{error}"
    );
    assert!(
        !h.project.join(".cuekit/tasks").exists(),
        "nothing was submitted"
    );
}

/// A member that runs until its gate file appears.
fn gated(h: &Harness, team: &str, n: usize) -> String {
    let gate = h.root().join(format!("go{n}"));
    let script = format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display());
    h.submit_sh(&script, &["--team", team, "--mode", "batch"])
}

#[test]
fn a_team_of_five_is_listed_waited_on_cancelled_and_read_together() {
    let h = Harness::new();
    let members: Vec<String> = (0..5).map(|n| gated(&h, "five", n)).collect();
    // Another team and a task without one stay out of it.
    let other = gated(&h, "other", 9);
    let (listed, code) = h.json(&["list", "--team", "five"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(ids(&listed), members, "members, oldest first");
    let (summary, _) = h.json(&["status", "--team", "five"]);
    assert_eq!(summary["total"], 5, "{summary}");
    assert_eq!(summary["counts"]["running"], 5, "{summary}");
    let text = h.ok(&["status", "--team", "five"]);
    assert!(text.starts_with("team five: 5 tasks (5 running)"), "{text}");

    let (waited, code) = h.json(&["wait", "--team", "five", "--timeout", "300ms"]);
    assert_eq!(code, 21, "nobody ended yet: {waited}");
    std::fs::write(h.root().join("go2"), "").unwrap();
    let (waited, code) = h.json(&["wait", "--team", "five", "--any", "--timeout", "20s"]);
    assert_eq!(code, 0, "{waited}");
    let statuses: Vec<&str> = waited["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses[2], "completed", "{waited}");
    assert_eq!(
        statuses.iter().filter(|s| **s == "running").count(),
        4,
        "{waited}"
    );

    let (cancelled, code) = h.json(&["cancel", "--team", "five", "--grace", "1s"]);
    assert_eq!(code, 0, "{cancelled}");
    let statuses: Vec<&str> = cancelled
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "cancelled",
            "cancelled",
            "completed",
            "cancelled",
            "cancelled"
        ]
    );
    let (waited, code) = h.json(&["wait", "--team", "five", "--timeout", "20s"]);
    assert_eq!(code, 20, "ended, not all completed: {waited}");
    assert_eq!(
        h.status(&other)["status"],
        "running",
        "another team is untouched"
    );

    let (results, code) = h.json(&["result", "--team", "five"]);
    assert_eq!(code, 0, "{results}");
    assert_eq!(results["team"], "five");
    let result_ids: Vec<&str> = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(result_ids, members);
    assert_eq!(results["results"][2]["status"], "completed");
    assert_eq!(results["results"][0]["status"], "cancelled");
    let (error, code) = h.json(&["steer", "--team", "five", "hello"]);
    assert_eq!(code, 5, "no running interactive member: {error}");
    let (error, code) = h.json(&["steer"]);
    assert_eq!((code, error["error"]["code"].as_str()), (2, Some("usage")));
    let (error, code) = h.json(&["wait", "--team", "nobody"]);
    assert_eq!(
        (code, error["error"]["code"].as_str()),
        (4, Some("task_not_found"))
    );
    let (error, code) = h.json(&["list", "--team", "bad name"]);
    assert_eq!(code, 3, "{error}");
    std::fs::write(h.root().join("go9"), "").unwrap();

    // A wait on a whole team returns once the last member ends, all completed: exit 0.
    let trio: Vec<String> = (10..13).map(|n| gated(&h, "trio", n)).collect();
    let waiter = h
        .cuekit()
        .args(["--json", "wait", "--team", "trio", "--timeout", "30s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for n in 10..13 {
        std::fs::write(h.root().join(format!("go{n}")), "").unwrap();
    }
    let output = waiter.wait_with_output().unwrap();
    let waited: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{waited}");
    assert_eq!(ids(&waited["tasks"]), trio);
    assert!(
        waited["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "completed"),
        "{waited}"
    );
}

#[test]
fn team_submit_starts_every_member_and_steer_reaches_each_interactive_one() {
    let h = Harness::new();
    let spec = h.root().join("team.yaml");
    let reader = h.root().join("reader.sh");
    write_executable(
        &reader,
        "#!/bin/sh\nprintf 'ready\\n> '; read line; echo \"got $line\"\n",
    );
    let reader = reader.display();
    std::fs::write(
        &spec,
        format!(
            "- objective: first reader\n  agent: command\n  argv: ['{reader}']\n\
             - objective: second reader\n  agent: command\n  argv: ['{reader}']\n\
             - objective: a batch member\n  agent: command\n  mode: batch\n  argv: [sleep, '30']\n"
        ),
    )
    .unwrap();
    // Members that run their own words as the program start only from a spec the user trusts.
    let (refused, code) = h.json(&["team", "submit", "pair", "--spec", spec.to_str().unwrap()]);
    assert_eq!(
        (refused["error"]["code"].as_str(), code),
        (Some("config_untrusted"), 14),
        "{refused}"
    );
    h.trust(&[spec.to_str().unwrap()]);
    let (submitted, code) = h.json(&["team", "submit", "pair", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{submitted}");
    let members = crate::harness::task_ids(&submitted);
    assert_eq!(members.len(), 3, "{submitted}");
    for id in &members[..2] {
        h.wait_until(id, "the prompt", limits::SHORT, || {
            h.screen(id).contains("ready")
        });
    }
    let (receipts, code) = h.json(&["steer", "--team", "pair", "hello team"]);
    assert_eq!(code, 0, "{receipts}");
    let receipts = receipts.as_array().unwrap();
    assert_eq!(
        receipts.len(),
        2,
        "the batch member is not steered: {receipts:?}"
    );
    for (receipt, id) in receipts.iter().zip(&members) {
        assert_eq!(receipt["task_id"], id.as_str());
        assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    }
    let (waited, code) = h.json(&[
        "wait",
        &members[0],
        &members[1],
        "--timeout",
        &limits::arg(limits::SHORT),
    ]);
    assert_eq!(code, 0, "{waited}");
    assert!(h.transcript(&members[1]).contains("got hello team"));
    h.ok(&["cancel", "--team", "pair"]);

    // A bad spec starts nothing and names the line.
    std::fs::write(
        &spec,
        "- objective: a\n  agent: command\n  argv: [true]\n- objectiv: b\n",
    )
    .unwrap();
    let (error, code) = h.json(&["team", "submit", "bad", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, 3, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}:4:", spec.display())),
        "{error}"
    );
    // A member that cannot start (an unknown role) is found before any member starts.
    std::fs::write(
        &spec,
        "- objective: a\n  agent: gemini\n- objective: b\n  role: nobody\n",
    )
    .unwrap();
    let (error, code) = h.json(&["team", "submit", "bad", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, 3, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("member 2:"),
        "{error}"
    );
    let (error, code) = h.json(&["list", "--team", "bad"]);
    assert_eq!(code, 4, "no member of the bad team was started: {error}");
}

/// Starts `cuekit wait --until report`, then opens the child's gate; returns what the wait
/// printed. A report made before the wait began does not count: the gate opens once the wait
/// asked tmux about the task, which it does right after it noted the reports so far.
fn wait_for_report_after(h: &Harness, id: &str, gate: &std::path::Path) -> Value {
    let (shim_dir, calls) = h.tmux_shim("$PPID");
    let path = format!("{}:{}", shim_dir.display(), std::env::var("PATH").unwrap());
    let waiter = h
        .cuekit()
        .env("PATH", format!("{}:{path}", h.bin.display()))
        .args([
            "--json",
            "wait",
            id,
            "--until",
            "report",
            "--timeout",
            "30s",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = waiter.id().to_string();
    assert!(
        poll(HANG_GUARD, || std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .any(|caller| caller == pid)),
        "the wait never looked at the task"
    );
    std::fs::write(gate, "").unwrap();
    let output = waiter.wait_with_output().unwrap();
    let waited: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{waited}\n{}",
        h.transcript(id)
    );
    assert_eq!(waited["timed_out"], false, "{waited}");
    waited
}

#[test]
fn a_child_reports_from_its_own_pane_and_nobody_else_can() {
    let h = Harness::new();
    cuekit_on_path(&h);
    let (first, second) = (h.root().join("go1"), h.root().join("go2"));
    // The child reports blocked once its first gate opens, done at its second, then idles until
    // cancelled.
    let script = format!(
        "while [ ! -e '{first}' ]; do sleep 0.05; done; \
         cuekit report --blocked 'need the API key' --data '{{\"missing\":\"GEMINI_API_KEY\"}}' \
         || exit 9; while [ ! -e '{second}' ]; do sleep 0.05; done; \
         cuekit report --done all set || exit 9; sleep 30",
        first = first.display(),
        second = second.display()
    );
    let id = h.submit_sh(&script, &["--team", "solo", "--mode", "batch"]);
    let waited = wait_for_report_after(&h, &id, &first);
    let report = &waited["tasks"][0]["last_report"];
    assert_eq!(
        (
            report["kind"].as_str(),
            report["message"].as_str(),
            report["seq"].as_u64()
        ),
        (Some("blocked"), Some("need the API key"), Some(1)),
        "{waited}"
    );
    assert_eq!(report["data"]["missing"], "GEMINI_API_KEY");
    let status = h.status(&id);
    assert_eq!(status["status"], "running");
    assert_eq!(status["blocked"], true);
    assert!(h.ok(&["status", &id]).contains("report:     blocked #1"));
    let list = h.ok(&["list"]);
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains(" blocked "), "{list}");
    let (summary, _) = h.json(&["status", "--team", "solo"]);
    assert_eq!(summary["waiting"][0]["reason"], "blocked", "{summary}");
    assert_eq!(summary["waiting"][0]["message"], "need the API key");

    // A report made before a wait began does not end it.
    let (waited, code) = h.json(&["wait", &id, "--until", "report", "--timeout", "300ms"]);
    assert_eq!(code, 21, "{waited}");

    // Outside the pane, the id alone proves nothing.
    let outside = h
        .cuekit()
        .env("CUEKIT_TASK_ID", &id)
        .args(["--json", "report", "--done", "forged"])
        .output()
        .unwrap();
    assert_eq!(outside.status.code(), Some(17), "{outside:?}");
    let error: Value = serde_json::from_slice(&outside.stdout).unwrap();
    assert_eq!(error["error"]["code"], "not_task_pane");
    let (error, code) = h.json(&["report", "no env"]);
    assert_eq!(
        (code, error["error"]["code"].as_str()),
        (17, Some("not_task_pane"))
    );

    // Another task's child cannot write into this task's record by naming it.
    let forger = h.submit_batch_sh(&format!(
        "CUEKIT_TASK_ID={id} cuekit report --done forged; exit $?"
    ));
    let (_, code) = h.json(&["wait", &forger, "--timeout", "20s"]);
    assert_eq!(code, 20);
    assert_eq!(
        h.status(&forger)["exit_code"],
        17,
        "{}",
        h.transcript(&forger)
    );

    let waited = wait_for_report_after(&h, &id, &second);
    assert_eq!(waited["tasks"][0]["last_report"]["kind"], "done");
    assert_eq!(waited["tasks"][0]["last_report"]["seq"], 2);
    let (result, _) = h.json(&["result", &id]);
    let kinds: Vec<&str> = result["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["blocked", "done"], "{result}");

    // An ended task takes no more reports.
    h.ok(&["cancel", &id]);
    let late = h
        .cuekit()
        .env("CUEKIT_TASK_ID", &id)
        .args(["--json", "report", "late"])
        .output()
        .unwrap();
    assert_eq!(late.status.code(), Some(5), "{late:?}");
    let error: Value = serde_json::from_slice(&late.stdout).unwrap();
    assert_eq!(error["error"]["code"], "invalid_state");
    let (result, _) = h.json(&["result", &id]);
    assert_eq!(result["reports"].as_array().unwrap().len(), 2, "{result}");
}

#[test]
fn a_child_finds_cuekit_when_the_parent_ran_it_by_its_full_path() {
    // No `cuekit` on the submitter's PATH (an MCP client starts cuekit by its full path):
    // the pane's PATH gets this binary's directory, at the end.
    let h = Harness::new();
    let id = String::from_utf8(
        h.cuekit()
            .env("PATH", format!("{}:/usr/bin:/bin", h.bin.display()))
            .args(["--json", "submit"])
            .args(sh_task(
                "cuekit report --done found it || exit 9; sleep 30",
                &["--mode", "batch"],
            ))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let id: Value = serde_json::from_str(&id).unwrap();
    let id = id["id"].as_str().unwrap().to_string();
    // The report may come before any wait could begin: read it off the status.
    h.wait_until(&id, "the report", limits::TASK, || {
        h.status(&id)["last_report"]["message"] == "found it"
    });
    h.ok(&["cancel", &id]);
}

#[test]
fn a_real_gemini_child_reports_blocked_through_its_shell_tool() {
    // The real Gemini CLI, offline: its canned model reply calls the shell tool with
    // `cuekit report`, which runs in the task's pane as any agent's shell command would.
    let tool_call = serde_json::json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {
            "name": "run_shell_command",
            "args": {"command": "cuekit report --blocked \"need the API key\"",
                     "description": "Tell the parent what is missing"}}}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}]})
    .to_string();
    let h = Harness::new().with_real_gemini(&[
        tool_call,
        crate::harness::canned_text("I told the parent I need the API key."),
    ]);
    cuekit_on_path(&h);
    let id = h.submit(&[
        "--mode",
        "batch",
        "--model",
        crate::harness::MODEL,
        "--team",
        "deploy",
        "Deploy the service",
    ]);
    let waiter = h
        .cuekit()
        .args([
            "--json",
            "wait",
            &id,
            "--until",
            "report",
            "--timeout",
            "90s",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = waiter.wait_with_output().unwrap();
    let returned = std::time::SystemTime::now();
    let waited: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{waited}\n{}",
        h.transcript(&id)
    );
    let report = &waited["tasks"][0]["last_report"];
    assert_eq!(report["kind"], "blocked", "{waited}\n{}", h.transcript(&id));
    assert_eq!(report["message"], "need the API key");
    let reported = humantime::parse_rfc3339(report["at"].as_str().unwrap()).unwrap();
    // A figure, not an assertion: how long after the report the parent's wait returned.
    eprintln!(
        "wait --until report returned {} ms after the report",
        returned
            .duration_since(reported)
            .unwrap_or_default()
            .as_millis()
    );

    let (ended, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{ended}\n{}", h.transcript(&id));
    let status = h.status(&id);
    assert_eq!(
        (
            status["blocked"].as_bool(),
            status["last_report"]["kind"].as_str()
        ),
        (Some(true), Some("blocked")),
        "{status}"
    );
    let list = h.ok(&["list"]);
    let line = list.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains(" blocked "), "{list}");
    // The stream and the report share events.jsonl: the result keeps them apart.
    let (result, _) = h.json(&["result", &id]);
    assert_eq!(
        result["tool_calls"][0]["name"], "run_shell_command",
        "{result}"
    );
    assert_eq!(result["tool_calls"][0]["status"], "success", "{result}");
    assert_eq!(result["reports"].as_array().unwrap().len(), 1, "{result}");
    assert_eq!(result["unknown_events"], serde_json::json!([]), "{result}");
    assert_eq!(
        result["final_text"],
        "I told the parent I need the API key."
    );
}

#[test]
fn a_team_spec_puts_each_member_in_its_own_worktree() {
    let h = Harness::new();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&h.project)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(h.project.join("a.txt"), "a\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "base"]);
    let spec = h.root().join("team.yaml");
    std::fs::write(
        &spec,
        "- objective: one\n  agent: command\n  worktree: true\n  argv: [sh, -c, 'echo one > a.txt']\n\
         - objective: two\n  agent: command\n  worktree: true\n  base: main\n  argv: [sh, -c, 'echo two > a.txt']\n",
    )
    .unwrap();
    h.trust(&[spec.to_str().unwrap()]);
    let (submitted, code) = h.json(&["team", "submit", "wt", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{submitted}");
    let ids = crate::harness::task_ids(&submitted);
    h.json(&["wait", "--team", "wt", "--timeout", "20s"]);
    for (id, text) in ids.iter().zip(["one", "two"]) {
        let status = h.status(id);
        assert_eq!(status["branch"], format!("cuekit/{id}"), "{status}");
        let diff = h.ok(&["diff", id]);
        assert!(diff.contains(&format!("+{text}")), "{diff}");
    }
    // The main checkout is untouched.
    assert_eq!(
        std::fs::read_to_string(h.project.join("a.txt")).unwrap(),
        "a\n"
    );
}

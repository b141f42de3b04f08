//! The scheduler with real tmux and `/bin/sh` children (and the real Gemini CLI where the
//! agent's behaviour matters): limits, priorities, exactly-once starts under racing submitters
//! and a killed scheduler, dependencies, the queue's cancel/rm/wait, retries that resume the
//! agent's session, and recovery after the tmux server died.

use crate::harness::limits;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::harness::*;

/// The lines of a log the children append their ids to as they start.
fn starts(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Counts the live panes of the harness's tmux server every 20 ms until stopped; returns the
/// most seen at once and how many looks were taken.
struct PaneSampler {
    stop: Arc<AtomicBool>,
    most: Arc<AtomicUsize>,
    looks: Arc<AtomicUsize>,
    thread: std::thread::JoinHandle<()>,
}

impl PaneSampler {
    fn start(socket: &str) -> PaneSampler {
        let (stop, most, looks) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let socket = socket.to_string();
        let thread = {
            let (stop, most, looks) = (stop.clone(), most.clone(), looks.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let out = std::process::Command::new("tmux")
                        .args(["-L", &socket, "list-panes", "-a", "-F", "#{pane_dead}"])
                        .output()
                        .unwrap();
                    let live = String::from_utf8_lossy(&out.stdout)
                        .lines()
                        .filter(|line| *line == "0")
                        .count();
                    most.fetch_max(live, Ordering::SeqCst);
                    looks.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        PaneSampler {
            stop,
            most,
            looks,
            thread,
        }
    }

    fn finish(self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
        (
            self.most.load(Ordering::SeqCst),
            self.looks.load(Ordering::SeqCst),
        )
    }
}

#[test]
fn twenty_tasks_under_running_three_start_once_each_with_racing_submitters_and_a_killed_scheduler()
{
    let h = Harness::new();
    h.user_config("limits:\n  running: 3\n");
    let log = h.root().join("starts.log");
    // Each waits for a gate the test opens once the scheduler was killed, so tasks still wait
    // then however slow the machine.
    let gate = h.root().join("go");
    let script = format!(
        "echo \"$CUEKIT_TASK_ID\" >> '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; sleep 0.4",
        log.display(),
        gate.display()
    );
    let sampler = PaneSampler::start(&h.socket);
    let ids: Vec<String> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..8)
            .map(|racer| {
                let (h, script) = (&h, &script);
                scope.spawn(move || {
                    (0..20)
                        .filter(|n| n % 8 == racer)
                        .map(|_| h.submit_sh(script, &["--mode", "batch"]))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        racers
            .into_iter()
            .flat_map(|racer| racer.join().unwrap())
            .collect()
    });
    assert_eq!(ids.len(), 20);
    // The scheduler is killed while tasks still wait; the next cuekit call starts another.
    assert!(
        poll(limits::SHORT, || !h.processes("__scheduler").is_empty()),
        "no scheduler ran while tasks waited"
    );
    for pid in h.processes("__scheduler") {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    std::fs::write(&gate, "").unwrap();
    let waited = h.wait_ended(&ids, &limits::arg(limits::LONG));
    let (most, looks) = sampler.finish();
    for task in waited["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
    }
    let started = starts(&log);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for id in &started {
        *counts.entry(id.as_str()).or_default() += 1;
    }
    for id in &ids {
        assert_eq!(
            counts.get(id.as_str()),
            Some(&1),
            "{id} started {started:?}"
        );
    }
    assert_eq!(started.len(), 20, "{started:?}");
    assert!(looks > 20, "the sampler looked only {looks} times");
    assert!(most <= 3, "{most} live panes at once under running: 3");
    assert!(
        most >= 2,
        "only {most} live panes at once: the limit was never reached"
    );
}

#[test]
fn queued_tasks_start_in_priority_order_then_submit_order() {
    let h = Harness::new();
    h.user_config("limits:\n  running: 1\n");
    let log = h.root().join("starts.log");
    let task = |name: &str, extra: &[&str]| {
        let script = format!("echo {name} >> '{}'; sleep 0.3", log.display());
        let mut args = vec!["--mode", "batch"];
        args.extend_from_slice(extra);
        h.submit_sh(&script, &args)
    };
    // The blocker holds the one slot until the five others are submitted and one's queue place
    // was read, however slow the machine: it waits for a gate the test opens.
    let gate = h.root().join("go");
    let blocker = h.submit_sh(
        &format!(
            "echo blocker >> '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
            log.display(),
            gate.display()
        ),
        &["--mode", "batch"],
    );
    let low = task("low", &[]);
    let high = task("high", &["--priority", "5"]);
    let middle = task("middle", &["--priority", "1"]);
    let negative = task("negative", &["--priority=-2"]);
    let also_middle = task("also_middle", &["--priority", "1"]);
    let status = h.assert_status(&high, "queued");
    assert_eq!(status["queue"]["place"], 1, "{status}");
    assert_eq!(status["queue"]["limit"], "running 1/1", "{status}");
    std::fs::write(&gate, "").unwrap();
    h.wait_ended(
        &[blocker, low, high, middle, negative, also_middle],
        &limits::arg(limits::AGENT),
    );
    assert_eq!(
        starts(&log),
        [
            "blocker",
            "high",
            "middle",
            "also_middle",
            "low",
            "negative"
        ]
    );
}

/// `script`, once the test opened `gate` (a file): however slow the machine, it does not run
/// before the test read what it must.
fn after_gate(gate: &std::path::Path, script: &str) -> String {
    format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; {script}",
        gate.display()
    )
}

#[test]
fn a_chain_runs_in_order_and_a_failing_head_cancels_the_rest_unless_after_ended() {
    let h = Harness::new();
    let log = h.root().join("starts.log");
    let step = |name: &str, code: i32| {
        format!("sleep 0.3; echo {name} >> '{}'; exit {code}", log.display())
    };
    // The head holds until the chain was read, however slow the machine: a gate the test opens.
    let gate = h.root().join("go");
    let a = h.submit_sh(&after_gate(&gate, &step("a", 0)), &[]);
    let b = h.submit_sh(&step("b", 0), &["--after", &a]);
    let c = h.submit_sh(&step("c", 0), &["--after", &b]);
    let queued = h.assert_status(&c, "queued");
    assert_eq!(queued["queue"]["waiting_for"][0], b.as_str(), "{queued}");
    // Without a mode, a task that waits on others runs to its end by itself.
    assert_eq!(queued["mode"], "batch", "{queued}");
    std::fs::write(&gate, "").unwrap();
    let waited = h.wait_ended(
        &[a.clone(), b.clone(), c.clone()],
        &limits::arg(limits::AGENT),
    );
    for task in waited["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
    }
    assert_eq!(starts(&log), ["a", "b", "c"]);

    std::fs::remove_file(&log).unwrap();
    let gate = h.root().join("go-again");
    let x = h.submit_sh(&after_gate(&gate, &step("x", 3)), &[]);
    let y = h.submit_sh(&step("y", 0), &["--after", &x]);
    let z = h.submit_sh(&step("z", 0), &["--after", &y]);
    let w = h.submit_sh(&step("w", 0), &["--after", &x, "--after-ended"]);
    std::fs::write(&gate, "").unwrap();
    let waited = h.wait_ended(
        &[x.clone(), y.clone(), z.clone(), w.clone()],
        &limits::arg(limits::AGENT),
    );
    let by_id: HashMap<String, serde_json::Value> = waited["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_string(), t.clone()))
        .collect();
    assert_eq!(by_id[&x]["status"], "failed");
    for dependent in [&y, &z] {
        assert_eq!(by_id[dependent]["status"], "cancelled", "{waited}");
        assert_eq!(by_id[dependent]["reason"], "dependency_failed", "{waited}");
    }
    assert!(
        by_id[&y]["hint"].as_str().unwrap().contains(&x),
        "the hint names the failed dependency: {waited}"
    );
    assert_eq!(by_id[&w]["status"], "completed", "{waited}");
    assert_eq!(starts(&log), ["x", "w"], "y and z never started");
}

/// A dependency on an interactive task is met once its child reported `done`, while it still
/// idles (and holds its slot).
#[test]
fn a_done_report_meets_a_dependency_on_an_interactive_task() {
    let h = Harness::new();
    let log = h.root().join("starts.log");
    let interactive = h.submit_sh(
        "cuekit report --done 'the parser is written'; sleep 60",
        &["--mode", "interactive"],
    );
    let after = h.submit_sh(
        &format!("echo after >> '{}'", log.display()),
        &["--after", &interactive],
    );
    let (waited, code) = h.json(&["wait", &after, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0, "{waited}");
    assert_eq!(starts(&log), ["after"]);
    assert_eq!(h.status(&interactive)["status"], "running");
    h.ok(&["cancel", &interactive]);
}

#[test]
fn a_queued_task_cancelled_or_removed_never_starts_and_bad_dependencies_are_refused() {
    let h = Harness::new();
    h.user_config("limits:\n  running: 1\n");
    let log = h.root().join("starts.log");
    let script = |name: &str| format!("echo {name} >> '{}'; sleep 1", log.display());
    // The blocker holds the one slot until the cancel and the removal are done, however slow
    // the machine: it waits for a gate the test opens.
    let gate = h.root().join("go");
    let blocker = h.submit_sh(
        &format!(
            "echo blocker >> '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
            log.display(),
            gate.display()
        ),
        &["--mode", "batch"],
    );
    let cancelled = h.submit_sh(&script("cancelled"), &["--mode", "batch"]);
    let removed = h.submit_sh(&script("removed"), &["--mode", "batch"]);
    let waited_on = h.submit_sh(&script("waited_on"), &["--mode", "batch"]);
    // Held by the gate too: a second of work could end before a loaded machine's status.
    let now = h.submit_sh(
        &format!(
            "echo now >> '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
            log.display(),
            gate.display()
        ),
        &["--mode", "batch", "--now"],
    );
    assert_eq!(
        h.status(&now)["status"],
        "running",
        "--now ignores the limit"
    );

    let (view, code) = h.json(&["cancel", &cancelled]);
    assert_eq!(code, 0, "{view}");
    assert_eq!(view[0]["status"], "cancelled", "{view}");
    let (removal, code) = h.json(&["rm", &removed]);
    assert_eq!(code, 0, "{removal}");
    assert!(!h.task_dir(&removed).exists());
    std::fs::write(&gate, "").unwrap();

    // `wait` on a queued task waits through its start to its end.
    let (waited, code) = h.json(&["wait", &waited_on, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}");
    assert_eq!(waited["tasks"][0]["status"], "completed", "{waited}");
    h.wait_ended(&[blocker, now], &limits::arg(limits::TASK));
    let started = starts(&log);
    assert!(!started.contains(&"cancelled".to_string()), "{started:?}");
    assert!(!started.contains(&"removed".to_string()), "{started:?}");

    let (error, code) = h.json(&[
        "submit",
        "--agent",
        "command",
        "--after",
        "t_0123456789ab",
        "--",
        "true",
    ]);
    assert_ne!(code, 0);
    assert_eq!(error["error"]["code"], "task_not_found", "{error}");
    let (error, code) = h.json(&["submit", "--after", "nonsense", "--", "true"]);
    assert_ne!(code, 0);
    assert_eq!(error["error"]["code"], "invalid_input", "{error}");
}

#[test]
fn a_team_spec_is_a_pipeline_under_its_max_parallel() {
    let h = Harness::new();
    let log = h.root().join("starts.log");
    let spec = h.project.join("pipeline.yaml");
    let step = |name: &str| {
        format!(
            "  agent: command\n  argv: [sh, -c, 'echo {name} start >> {log}; sleep 0.4; echo {name} end >> {log}']\n",
            log = log.display()
        )
    };
    std::fs::write(
        &spec,
        format!(
            "max_parallel: 1\nmembers:\n\
             - name: review\n  after: [test]\n  objective: review it\n{}\
             - name: implement\n  objective: write it\n{}\
             - name: docs\n  objective: document it\n{}\
             - name: test\n  after: [implement]\n  objective: test it\n{}",
            step("review"),
            step("implement"),
            step("docs"),
            step("test")
        ),
    )
    .unwrap();
    h.trust(&[spec.to_str().unwrap()]);
    let (submitted, code) = h.json(&["team", "submit", "crew", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{submitted}");
    let ids = crate::harness::task_ids(&submitted);
    assert_eq!(ids.len(), 4);
    let waited = h.wait_ended(&ids, &limits::arg(limits::AGENT));
    for task in waited["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
    }
    let lines = starts(&log);
    // One at a time (each ends before the next starts), and each after what it names.
    for pair in lines.chunks(2) {
        let name = pair[0].split(' ').next().unwrap();
        assert_eq!(
            pair,
            [format!("{name} start"), format!("{name} end")],
            "{lines:?}"
        );
    }
    let order: Vec<&str> = lines
        .iter()
        .step_by(2)
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let at = |name: &str| order.iter().position(|n| *n == name).unwrap();
    assert!(
        at("implement") < at("test") && at("test") < at("review"),
        "{order:?}"
    );
}

/// `--base-from` and `--context-from` a task whose dependency is met by the time the submit
/// decides its start, though it read the task running (here an interactive child that reported
/// `done` and idles; so too one that ends between those two looks, as under load): the new task
/// is still started from that task's work and with its answer, which only the scheduler's start
/// takes — never at once in the project folder without them.
#[test]
fn base_and_context_from_a_task_done_while_it_runs_are_taken_at_the_start() {
    let h = Harness::new();
    crate::harness::git::project_repo(&h.project, "shared\n");
    let implementer = h.submit_sh(
        "echo implemented > feature.txt; cuekit report --done 'the feature is written'; sleep 60",
        &["--mode", "interactive", "--worktree"],
    );
    h.wait_until(&implementer, "its done report", limits::TASK, || {
        h.status(&implementer)["last_report"]["kind"] == "done"
    });
    let log = h.root().join("seen.log");
    let tester = h.submit_sh(
        &format!("cat feature.txt >> '{}'", log.display()),
        &["--base-from", &implementer, "--context-from", &implementer],
    );
    let (waited, code) = h.json(&["wait", &tester, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0, "{waited}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "implemented\n");
    let started = h.status(&tester);
    assert!(started["worktree"].is_string(), "{started}");
    // A command's argv carries no prompt: the answer is in its spec's context.
    let record = std::fs::read_to_string(h.task_dir(&tester).join("task.json")).unwrap();
    assert!(record.contains("the feature is written"), "{record}");
    h.ok(&["cancel", &implementer]);
}

/// A reviewer submitted while the implementer still runs waits for it, and its prompt takes
/// the implementer's answer at its start.
#[test]
fn context_from_a_running_task_waits_for_it_and_takes_its_answer() {
    let h = Harness::new().with_real_gemini(&[canned_text("The answer is PINEAPPLE-42.")]);
    let implementer = h.submit(&["--mode", "batch", "--model", MODEL, "Find the answer"]);
    let reviewer = h.submit(&[
        "--model",
        MODEL,
        "--context-from",
        &implementer,
        "Review the answer",
    ]);
    let queued = h.assert_status(&reviewer, "queued");
    assert_eq!(queued["mode"], "batch", "{queued}");
    let waited = h.wait_ended(&[implementer.clone(), reviewer.clone()], "90s");
    for task in waited["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
    }
    let prompt = std::fs::read_to_string(h.task_dir(&reviewer).join("prompt.txt")).unwrap();
    assert!(prompt.contains("Review the answer"), "{prompt}");
    assert!(
        prompt.contains(&format!(
            "Task {implementer} (Find the answer) ended completed"
        )),
        "{prompt}"
    );
    assert!(prompt.contains("PINEAPPLE-42"), "{prompt}");
}

/// A budget judges a Gemini batch run at its end (its stream reports usage in its `result`),
/// and stops an ACP session at the end of the turn that passed it; an interactive task, which
/// reports no usage, is refused one.
#[test]
fn a_budget_stops_a_child_and_is_refused_where_no_usage_is_reported() {
    let h = Harness::new().with_real_gemini(&[canned_text("An answer of fifteen tokens.")]);
    let batch = h.submit(&[
        "--mode",
        "batch",
        "--model",
        MODEL,
        "--max-tokens",
        "10",
        "Answer",
    ]);
    // An ACP session stays open for steering: its budget ends it once the turn reported.
    let acp = h.submit(&[
        "--mode",
        "acp",
        "--model",
        MODEL,
        "--max-tokens",
        "10",
        "Answer",
    ]);
    let waited = h.wait_ended(&[batch.clone(), acp.clone()], "90s");
    for task in waited["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "failed", "{task}");
        assert_eq!(task["reason"], "budget_exceeded", "{task}");
        assert!(
            task["hint"]
                .as_str()
                .unwrap()
                .contains("tokens, over its 10"),
            "{task}"
        );
    }
    assert_eq!(h.status(&batch)["exit_code"], 0, "the run itself succeeded");
    assert!(
        poll(limits::SHORT, || processes_of(&acp).is_empty()),
        "the ACP child's processes outlived its budget: {:?}",
        processes_of(&acp)
    );

    let (error, code) = h.json(&[
        "submit",
        "--mode",
        "interactive",
        "--model",
        MODEL,
        "--max-turns",
        "3",
        "chat",
    ]);
    assert_ne!(code, 0);
    assert_eq!(error["error"]["code"], "invalid_input", "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reports no usage"),
        "{error}"
    );
}

/// A tester whose worktree starts from the implementer's branch sees the implementer's
/// uncommitted work: committed onto its branch when the tester starts, and the tester's
/// worktree made from that tip then.
#[test]
fn base_from_starts_a_worktree_from_another_tasks_work_once_it_completed() {
    let h = Harness::new();
    crate::harness::git::project_repo(&h.project, "shared\n");
    let log = h.root().join("seen.log");
    let implementer = h.submit_sh(
        "sleep 0.5; echo implemented > feature.txt",
        &["--mode", "batch", "--worktree"],
    );
    let tester = h.submit_sh(
        &format!("cat feature.txt >> '{}'", log.display()),
        &["--base-from", &implementer],
    );
    let queued = h.assert_status(&tester, "queued");
    assert!(queued["worktree"].is_null(), "made at its start: {queued}");
    let waited = h.wait_ended(
        &[implementer.clone(), tester.clone()],
        &limits::arg(limits::AGENT),
    );
    for task in waited["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
    }
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "implemented\n",
        "the tester saw the implementer's file"
    );
    let implementer_branch = h.status(&implementer)["branch"]
        .as_str()
        .unwrap()
        .to_string();
    let message = crate::harness::git::git(
        &h.project,
        &["log", "-1", "--format=%s", &implementer_branch],
    );
    assert!(message.contains("uncommitted work"), "{message}");
    let started = h.status(&tester);
    assert!(started["worktree"].is_string(), "{started}");
    assert_eq!(
        started["base_ref"],
        implementer_branch.as_str(),
        "{started}"
    );

    // From a task that ended already, the worktree is made at submit.
    let again = h.submit_sh(
        &format!("cat feature.txt >> '{}'", log.display()),
        &["--base-from", &implementer],
    );
    h.wait_ended(std::slice::from_ref(&again), &limits::arg(limits::AGENT));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "implemented\nimplemented\n"
    );
    let (error, code) = h.json(&[
        "submit",
        "--agent",
        "command",
        "--base-from",
        &again,
        "--base",
        "main",
        "--",
        "true",
    ]);
    assert_ne!(code, 0, "{error}");
}

/// A team spec's budget spans its members: the second member's usage takes the team past it,
/// so it ends budget_exceeded and the member after it never starts.
#[test]
fn a_team_budget_spans_its_members() {
    let h = Harness::new().with_real_gemini(&[canned_text("Fifteen tokens of answer.")]);
    let spec = h.project.join("team.yaml");
    std::fs::write(
        &spec,
        format!(
            "budget: {{tokens: 20}}\nmembers:\n\
             - {{name: one, objective: first, model: {MODEL}}}\n\
             - {{name: two, after: [one], objective: second, model: {MODEL}}}\n\
             - {{name: three, after: [two], objective: third, model: {MODEL}}}\n"
        ),
    )
    .unwrap();
    let (submitted, code) = h.json(&["team", "submit", "crew", "--spec", spec.to_str().unwrap()]);
    assert_eq!(code, 0, "{submitted}");
    let ids = crate::harness::task_ids(&submitted);
    let waited = h.wait_ended(&ids, "90s");
    let statuses: Vec<(String, String)> = waited["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["status"].as_str().unwrap().to_string(),
                t["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("completed".to_string(), String::new()),
            ("failed".to_string(), "budget_exceeded".to_string()),
            ("cancelled".to_string(), "dependency_failed".to_string()),
        ],
        "{waited}"
    );
}

/// What a child could do: rewrite the task's record to `queued` and plant the queue's mark.
fn forge_queued(h: &Harness, id: &str) {
    let record_path = h.task_dir(id).join("task.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    record["status"] = "queued".into();
    std::fs::write(&record_path, record.to_string()).unwrap();
    std::fs::write(h.home.join(".local/share/cuekit/queue").join(id), "").unwrap();
}

/// A record in the project is data a child can write: one rewritten to `queued`, with the
/// queue's mark beside it, never starts an ended task again (the user's own plan says its
/// attempt ran).
#[test]
fn a_forged_queued_record_never_runs_a_task_twice() {
    let h = Harness::new();
    h.user_config("limits:\n  running: 1\n");
    let log = h.root().join("starts.log");
    let script = |name: &str| format!("echo {name} >> '{}'; sleep 0.3", log.display());
    let first = h.submit_sh(&script("first"), &["--mode", "batch"]);
    let second = h.submit_sh(&script("second"), &["--mode", "batch"]);
    h.wait_ended(&[first, second.clone()], &limits::arg(limits::TASK));
    forge_queued(&h, &second);
    // Any look starts the scheduler; a new queued task makes it look at the queue.
    let third = h.submit_sh(&script("third"), &["--mode", "batch"]);
    h.wait_ended(std::slice::from_ref(&third), &limits::arg(limits::TASK));
    h.ok(&["list"]);
    h.scheduler_looks_pass(2);
    assert_eq!(starts(&log), ["first", "second", "third"]);

    // Nor one cancelled while it waited.
    let blocker = h.submit_sh("sleep 60", &["--mode", "batch"]);
    let cancelled = h.submit_sh(&script("cancelled"), &["--mode", "batch"]);
    h.ok(&["cancel", &cancelled]);
    forge_queued(&h, &cancelled);
    h.ok(&["cancel", &blocker]);
    let last = h.submit_sh(&script("last"), &["--mode", "batch"]);
    h.wait_ended(std::slice::from_ref(&last), &limits::arg(limits::TASK));
    h.scheduler_looks_pass(2);
    assert_eq!(starts(&log), ["first", "second", "third", "last"]);
}

/// An interactive child idle at its prompt under the API's 429 (its TUI's error line) never
/// exits by itself: the attempt's end is recorded rate_limited, the child ended, and under a
/// retry policy a second attempt continues its session.
#[test]
fn an_interactive_child_stuck_on_a_quota_error_is_ended_and_retried() {
    let marker = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let marker_path = marker.to_path_buf();
    drop(marker);
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_QUOTA_ONCE", marker_path.to_str().unwrap());
    h.user_config("monitor:\n  interval: 200ms\n  dwell: 600ms\nretry:\n  max: 1\n  backoff:\n    first: 1s\n",
    );
    let id = h.submit(&["--mode", "interactive", "Work on it"]);
    // A follower opened on the first attempt looks at the task every 250 ms across the retry:
    // it judges the second attempt by that attempt's pane, never the first's (one that kept
    // the first's would read the second `pane_disappeared` and end it).
    let mut follower = h
        .cuekit()
        .args(["logs", "--follow", &id])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The second attempt idles at its prompt too, which a look may read as input_required.
    // A failure says where the task stood last (seen once in a loaded CI run, not since).
    let mut last = serde_json::Value::Null;
    let second = poll(HANG_GUARD, || {
        last = h.status(&id);
        (last["status"] == "running" || last["status"] == "input_required")
            && last["queue"]["attempt"] == 2
    });
    assert!(
        second,
        "no second attempt in {HANG_GUARD:?}; last seen: {last}\ntranscript:\n{}",
        std::fs::read_to_string(h.task_dir(&id).join("transcript.txt")).unwrap_or_default()
    );
    let task = h.status(&id);
    assert_eq!(
        task["queue"]["attempts"][0]["reason"], "rate_limited",
        "{task}"
    );
    assert!(
        task["launch_command"]
            .as_str()
            .unwrap()
            .contains(&format!("--resume '{id}'")),
        "{task}"
    );
    assert!(
        follower.try_wait().unwrap().is_none(),
        "logs --follow ended while the second attempt ran: {task}"
    );
    h.ok(&["cancel", &id]);
    let ended = poll(HANG_GUARD, || follower.try_wait().unwrap().is_some());
    assert!(ended, "logs --follow outlived the cancel");
}

/// A `gemini` on PATH that runs the real CLI offline and, the first `fail_first` times, then
/// fails the way Gemini fails on quota: the API's 429 on stderr and exit status 1. Every argv
/// is logged.
fn quota_failing_gemini(h: &Harness, fail_first: usize) -> std::path::PathBuf {
    let real = real_gemini();
    let canned = h.root().join("canned.jsonl");
    std::fs::write(&canned, canned_text("Finished the task.") + "\n").unwrap();
    let argv_log = h.root().join("argv.log");
    let count = h.root().join("runs");
    let wrapper = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{argv}'\n\
         n=$(cat '{count}' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '{count}'\n\
         '{real}' --fake-responses-non-strict '{canned}' \"$@\"\n\
         status=$?\n\
         if [ $n -le {fail_first} ]; then\n\
           echo '[API Error: {{\"error\":{{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}}}]' >&2\n\
           exit 1\n\
         fi\n\
         exit $status\n",
        argv = argv_log.display(),
        count = count.display(),
        real = real.display(),
        canned = canned.display(),
    );
    write_executable(&h.bin.join("gemini"), &wrapper);
    h.gemini_api_key_auth();
    argv_log
}

#[test]
fn a_rate_limited_gemini_attempt_is_retried_after_its_backoff_resuming_its_session() {
    let h = Harness::new().env("GEMINI_API_KEY", "offline-test-key");
    let argv_log = quota_failing_gemini(&h, 1);
    let id = h.submit(&[
        "--mode",
        "batch",
        "--model",
        MODEL,
        "--retry",
        "2",
        "Write the report",
    ]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::LONG)]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let status = h.status(&id);
    let task = &status;
    assert_eq!(task["status"], "completed", "{status}");
    assert_eq!(task["queue"]["attempt"], 2, "{status}");
    assert_eq!(task["queue"]["attempts_max"], 3, "{status}");
    assert_eq!(
        task["queue"]["attempts"][0]["reason"], "rate_limited",
        "{status}"
    );
    let runs: Vec<String> = std::fs::read_to_string(&argv_log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].contains(&format!("--session-id {id}")), "{runs:?}");
    // Gemini refuses --resume with --session-id: the second attempt has only the resume.
    assert!(runs[1].contains(&format!("--resume {id}")), "{runs:?}");
    assert!(!runs[1].contains("--session-id"), "{runs:?}");
    // The continuation, never the prompt again.
    let prompt = std::fs::read_to_string(h.task_dir(&id).join("prompt.txt")).unwrap();
    assert!(prompt.contains("You were interrupted"), "{prompt}");
    assert!(!prompt.contains("Write the report"), "{prompt}");
    let result = h.ok(&["result", &id]);
    assert!(result.contains("Finished the task."), "{result}");
    assert!(result.contains("attempt:  1 of 2"), "{result}");
    assert!(result.contains(": rate_limited"), "{result}");
    let (json, _) = h.json(&["result", &id]);
    assert_eq!(json["attempts"][0]["reason"], "rate_limited", "{json}");
}

#[test]
fn retries_stop_after_n_and_the_task_ends_rate_limited() {
    let h = Harness::new().env("GEMINI_API_KEY", "offline-test-key");
    let argv_log = quota_failing_gemini(&h, 99);
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "--retry", "1", "Do it"]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", "120s"]);
    assert_eq!(code, 20, "{waited}");
    let task = &h.status(&id);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["reason"], "rate_limited", "{task}");
    assert_eq!(
        std::fs::read_to_string(&argv_log).unwrap().lines().count(),
        2,
        "one attempt and one retry"
    );
    // On purpose: `cuekit retry` starts one more, continuing the session.
    let (view, code) = h.json(&["retry", &id]);
    assert_eq!(code, 0, "{view}");
    let (waited, _) = h.json(&["wait", &id, "--timeout", "120s"]);
    let runs = std::fs::read_to_string(&argv_log).unwrap();
    assert_eq!(runs.lines().count(), 3, "{runs}\n{view}\n{waited}");
    assert!(
        runs.lines()
            .last()
            .unwrap()
            .contains(&format!("--resume {id}")),
        "{runs}"
    );
}

#[test]
fn after_the_tmux_server_is_killed_running_gemini_tasks_with_a_retry_policy_continue_their_sessions()
 {
    // As users run it: a relaunched Gemini's child may outlive the server it was killed with.
    let h = Harness::new()
        .gemini_relaunches()
        .with_real_gemini(&[canned_text("Ready.")]);
    h.user_config("retry:\n  max: 2\n  backoff:\n    first: 1s\n");
    let ids: Vec<String> = (0..5)
        .map(|n| h.submit(&["--model", MODEL, &format!("Task number {n}")]))
        .collect();
    for id in &ids {
        h.wait_until(id, "the first reply", limits::LONG, || {
            h.transcript(id).contains("Ready.")
        });
    }
    let killed = h.tmux(&["kill-server"]);
    assert!(killed.status.success());
    for id in &ids {
        h.wait_until(id, "a second attempt", limits::LONG, || {
            let task = &h.status(id);
            (task["status"] == "running" || task["status"] == "input_required")
                && task["queue"]["attempt"] == 2
        });
        let task = &h.status(id);
        let launch = task["launch_command"].as_str().unwrap();
        assert!(launch.contains(&format!("--resume '{id}'")), "{task}");
        assert!(!launch.contains("--session-id"), "{task}");
        assert_eq!(
            task["queue"]["attempts"][0]["reason"], "pane_disappeared",
            "{task}"
        );
    }
    let (view, code) = h.json(&["cancel", &ids[0], &ids[1], &ids[2], &ids[3], &ids[4]]);
    assert_eq!(code, 0, "{view}");
}

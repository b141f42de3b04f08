//! `--check` (issue 34): a task's check runs on its work in a scratch checkout whose protected
//! paths are restored from the base, with real git, real tmux, real /bin/sh, and the real
//! Gemini CLI offline (canned replies, a file per run) where the child's behaviour matters.

use crate::harness::limits;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::git::{commit_all, project_repo};
use crate::harness::{Harness, MODEL, canned_shell_call, canned_text, poll, write_executable};

/// The project's own test: prints noise, escape sequences, then passes only when
/// `answer.txt` says `answer=42`.
const CHECK_SCRIPT: &str = "#!/bin/sh\n\
i=0; while [ $i -lt 200 ]; do echo \"noise line $i\"; i=$((i+1)); done\n\
printf '\\033[31mred\\033[0m \\033]0;retitled\\007 after the escapes\\n'\n\
if grep -qx 'answer=42' answer.txt 2>/dev/null; then echo PASS; exit 0; fi\n\
echo \"FAIL: answer.txt says $(cat answer.txt 2>/dev/null)\"; exit 1\n";

/// A project repository whose base holds `tests/check.sh` and a `Makefile` (runner config).
pub(crate) fn checked_project(h: &Harness) {
    project_repo(&h.project, "shared\n");
    std::fs::create_dir_all(h.project.join("tests")).unwrap();
    std::fs::write(h.project.join("tests/check.sh"), CHECK_SCRIPT).unwrap();
    std::fs::write(h.project.join("Makefile"), "check:\n\tsh tests/check.sh\n").unwrap();
    commit_all(&h.project, "a project with a test");
}

/// The interactive Gemini task most of these tests check: in a worktree, with `check` and
/// `extra` flags, told to write the answer into answer.txt.
fn submit_answer_task(h: &Harness, check: &str, extra: &[&str]) -> String {
    let mut args = vec!["--worktree", "--model", MODEL, "--check", check];
    args.extend_from_slice(extra);
    args.push("Write the answer into answer.txt");
    h.submit(&args)
}

/// The real Gemini CLI offline, each run with replies of its own (`canned-<n>.jsonl`, the
/// last one for any later run); each run's argv and (when a file: batch) stdin are kept in
/// `runs/`.
fn gemini_by_run(h: Harness, runs: &[Vec<String>]) -> Harness {
    let root = h.root().to_path_buf();
    for (n, replies) in runs.iter().enumerate() {
        std::fs::write(
            root.join(format!("canned-{}.jsonl", n + 1)),
            replies.join("\n") + "\n",
        )
        .unwrap();
    }
    std::fs::create_dir_all(root.join("runs")).unwrap();
    let last = runs.len();
    let wrapper = format!(
        "#!/bin/sh\nruns='{root}/runs'\n\
         n=$(ls \"$runs\" | grep -c '^argv-'); n=$((n + 1))\n\
         printf '%s\\n' \"$@\" > \"$runs/argv-$n\"\n\
         canned='{root}/canned-'$n'.jsonl'; [ -f \"$canned\" ] || canned='{root}/canned-{last}.jsonl'\n\
         [ -f /dev/stdin ] || exec '{real}' --fake-responses-non-strict \"$canned\" \"$@\"\n\
         cat > \"$runs/stdin-$n\"\n\
         exec '{real}' --fake-responses-non-strict \"$canned\" \"$@\" < \"$runs/stdin-$n\"\n",
        root = root.display(),
        real = crate::harness::real_gemini().display(),
    );
    write_executable(&h.bin.join("gemini"), &wrapper);
    h.gemini_api_key_auth();
    h.env("GEMINI_API_KEY", "offline-test-key")
}

fn run_file(h: &Harness, what: &str, n: usize) -> String {
    std::fs::read_to_string(h.root().join(format!("runs/{what}-{n}"))).unwrap_or_default()
}

fn runs(h: &Harness) -> usize {
    std::fs::read_dir(h.root().join("runs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("argv-"))
        .count()
}

/// A Gemini child's answer: the shell tool writes `answer.txt`, then a closing text.
pub(crate) fn answer(value: &str, text: &str) -> Vec<String> {
    vec![
        canned_shell_call(&format!("echo answer={value} > answer.txt")),
        canned_text(text),
    ]
}

fn submit_checked_gemini(h: &Harness, extra: &[&str]) -> String {
    let mut args = vec![
        "--worktree",
        "--mode",
        "batch",
        "--model",
        MODEL,
        "--check",
        "sh tests/check.sh",
    ];
    args.extend_from_slice(extra);
    args.push("Write the answer into answer.txt");
    h.submit(&args)
}

fn check_of(status: &Value) -> &Value {
    &status["check"]
}

#[test]
fn a_gemini_batch_child_gets_its_failure_and_completes_after_one_fix_round() {
    let h = gemini_by_run(
        Harness::new(),
        &[answer("41", "Done."), answer("42", "Fixed it.")],
    );
    checked_project(&h);
    let id = submit_checked_gemini(&h, &[]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let status = h.assert_status(&id, "completed");
    let check = check_of(&status);
    assert_eq!(check["phase"], "passed", "{status}");
    assert_eq!(check["fix_rounds"], 1);
    assert_eq!(check["summary"], "check passed in round 2 of 3");
    let verdicts = check["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2, "{status}");
    assert_eq!(
        (&verdicts[0]["passed"], &verdicts[0]["exit_code"]),
        (&Value::Bool(false), &Value::from(1))
    );
    assert_eq!(verdicts[1]["passed"], true);
    assert!(verdicts[0]["protected_edits"].is_null(), "{status}");
    let log = std::fs::read_to_string(verdicts[0]["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("FAIL: answer.txt says answer=41"), "{log}");

    // Two runs of the agent: the second resumed the session, with the failure on its stdin
    // and never the original prompt.
    assert_eq!(runs(&h), 2);
    let argv = run_file(&h, "argv", 2);
    assert!(argv.contains("--resume\n") && argv.contains(&id), "{argv}");
    let stdin = run_file(&h, "stdin", 2);
    assert!(
        stdin.starts_with("cuekit checked your work and the check failed (check round 1 of 3)"),
        "{stdin}"
    );
    assert!(
        stdin.contains("Command: sh tests/check.sh\nResult: exit code 1\n"),
        "{stdin}"
    );
    assert!(stdin.contains("FAIL: answer.txt says answer=41"), "{stdin}");
    assert!(
        !stdin.contains("Write the answer"),
        "the prompt again: {stdin}"
    );
    // Bounded, and no control character but newline and tab reaches the child.
    assert!(stdin.len() < 5000, "{}", stdin.len());
    assert!(!stdin.contains("noise line 100"), "{stdin}");
    assert!(stdin.contains("red  after the escapes"), "{stdin}");
    assert!(
        !stdin
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{stdin:?}"
    );
    // The fixed work is the task's.
    let worktree = h.worktree_of(&id);
    assert_eq!(
        std::fs::read_to_string(worktree.join("answer.txt")).unwrap(),
        "answer=42\n"
    );
}

#[test]
fn with_no_fix_rounds_a_failed_check_ends_the_gemini_task_check_failed() {
    let h = gemini_by_run(
        Harness::new(),
        &[answer("41", "Done."), answer("42", "Fixed it.")],
    );
    checked_project(&h);
    let id = submit_checked_gemini(&h, &["--check-rounds", "0"]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 20, "{waited}");
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["reason"].as_str()),
        (Some("failed"), Some("check_failed")),
        "{status}"
    );
    let hint = status["hint"].as_str().unwrap();
    assert!(
        hint.contains("round 1 of 1") && hint.contains("checks/1.log"),
        "{hint}"
    );
    assert_eq!(runs(&h), 1, "no fix round");
    assert_eq!(check_of(&status)["phase"], "failed");
}

/// A batch `sh -c SCRIPT` child in its own worktree, checked by `check` with `extra` flags.
fn submit_checked_sh(h: &Harness, script: &str, check: &str, extra: &[&str]) -> String {
    let mut flags = vec!["--check", check, "--check-rounds", "0"];
    flags.extend_from_slice(extra);
    h.submit_worktree_sh(&flags, script)
}

#[test]
fn a_child_that_rewrites_the_test_and_the_runner_config_is_judged_on_the_base_ones() {
    let h = Harness::new();
    checked_project(&h);
    // The child writes a wrong answer, then makes the test and the Makefile pass anyway, and
    // adds a conftest.py-like helper in tests/.
    let id = submit_checked_sh(
        &h,
        "echo answer=41 > answer.txt; printf '#!/bin/sh\\nexit 0\\n' > tests/check.sh; \
         printf 'check:\\n\\ttrue\\n' > Makefile; echo x > tests/helper.sh",
        "make check",
        &[],
    );
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 20, "{waited}");
    let status = h.status(&id);
    assert_eq!(status["reason"], "check_failed", "{status}");
    let verdict = &check_of(&status)["verdicts"][0];
    let edits: Vec<(String, String)> = verdict["protected_edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().to_string(),
                e["edit"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        edits,
        [
            ("Makefile", "changed"),
            ("tests/check.sh", "changed"),
            ("tests/helper.sh", "added")
        ]
        .map(|(p, e)| (p.to_string(), e.to_string()))
        .to_vec()
    );
    let log = std::fs::read_to_string(verdict["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("FAIL: answer.txt says answer=41"), "{log}");
    // The child's own files are as it left them: only the check's copy was restored.
    let worktree = h.worktree_of(&id);
    assert!(
        std::fs::read_to_string(worktree.join("tests/check.sh"))
            .unwrap()
            .contains("exit 0")
    );
    let details = h.ok(&["status", &id]);
    assert!(
        details.contains("protected:  Makefile, tests/check.sh, tests/helper.sh"),
        "{details}"
    );
    // `result` says the same, from the registry.
    let (result, _) = h.json(&["result", &id]);
    assert_eq!(result["check"]["phase"], "failed", "{result}");
    let text = h.ok(&["result", &id]);
    assert!(
        text.contains("check:    check failed in round 1 of 1"),
        "{text}"
    );
    assert!(
        text.contains("protected, restored: tests/check.sh"),
        "{text}"
    );
}

#[test]
fn a_passing_check_completes_the_task_and_the_right_work_passes_on_the_base_test() {
    let h = Harness::new();
    checked_project(&h);
    let id = submit_checked_sh(&h, "echo answer=42 > answer.txt", "sh tests/check.sh", &[]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let status = h.assert_status(&id, "completed");
    assert_eq!(check_of(&status)["phase"], "passed", "{status}");
    // `cuekit check ID` runs it again on demand and records the verdict.
    let (again, code) = h.json(&["check", &id]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["verdict"]["round"], 2);
    // Work changed after the end: the check says so, exit 35, recorded.
    let worktree = h.worktree_of(&id);
    std::fs::write(worktree.join("answer.txt"), "answer=7\n").unwrap();
    let (again, code) = h.json(&["check", &id]);
    assert_eq!(code, 35, "{again}");
    assert_eq!(again["verdict"]["passed"], false);
    let status = h.status(&id);
    assert_eq!(check_of(&status)["verdicts"].as_array().unwrap().len(), 3);
    // The ending stays the one recorded.
    assert_eq!(status["status"], "completed");
}

fn alive(pid_file: &Path) -> bool {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    cuekit::effects::process::is_alive(pid)
}

#[test]
fn a_check_that_never_ends_is_killed_at_its_limit_with_its_process_group() {
    let h = Harness::new();
    checked_project(&h);
    let pids = h.root().join("check.pid");
    let check = format!("sleep 300 & echo $! > '{}'; wait", pids.display());
    let id = submit_checked_sh(
        &h,
        "echo answer=42 > answer.txt",
        &check,
        &["--check-timeout", "1s"],
    );
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 20, "{waited}");
    let status = h.status(&id);
    assert_eq!(status["reason"], "check_failed", "{status}");
    assert_eq!(check_of(&status)["verdicts"][0]["timed_out"], true);
    assert!(
        status["hint"]
            .as_str()
            .unwrap()
            .contains("ran past its time limit")
    );
    assert!(!alive(&pids), "the check's process outlived it");
}

/// Issue 47: the check's runner (`__check --from-launch`) killed with SIGKILL mid-check. The
/// next look ends the check's processes (they carry `CUEKIT_CHECK=<id>.…`), removes its
/// scratch checkout, and moves the phase on from `checking`, with a verdict saying why.
#[test]
fn a_killed_check_runners_processes_and_scratch_are_reaped_by_the_next_look() {
    let h = Harness::new();
    checked_project(&h);
    let pids = h.root().join("check.pid");
    let check = format!("sleep 300 & echo $! > '{}'; wait", pids.display());
    let id = submit_checked_sh(&h, "echo answer=42 > answer.txt", &check, &[]);
    h.wait_until(&id, "the check's command to start", limits::AGENT, || {
        std::fs::read_to_string(&pids).is_ok_and(|pid| pid.ends_with('\n'))
    });
    let runners = cuekit::effects::process::clients_with_arguments(&["__check", &id]);
    assert!(!runners.is_empty(), "no check runner for {id}");
    for runner in runners {
        // SAFETY: kill takes a pid and a signal and touches no memory.
        unsafe { libc::kill(runner as libc::pid_t, libc::SIGKILL) };
    }
    let scratch = || {
        std::fs::read_dir(h.data_dir().join("checks"))
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with(&format!("{id}-"))
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    h.wait_until(
        &id,
        "the killed runner's check reaped",
        limits::TASK,
        || {
            let status = h.status(&id);
            check_of(&status)["phase"] != "checking" && !alive(&pids) && scratch() == 0
        },
    );
    let status = h.status(&id);
    assert_eq!(check_of(&status)["phase"], "failed", "{status}");
    assert_eq!(
        check_of(&status)["verdicts"][0]["error"],
        "the check's runner was killed",
        "{status}"
    );
}

#[test]
fn a_check_that_leaves_a_daemon_has_it_ended_and_a_flood_is_bounded() {
    let h = Harness::new();
    checked_project(&h);
    let daemon = h.root().join("daemon.pid");
    let check = format!(
        "setsid sleep 300 > /dev/null 2>&1 & echo $! > '{}'; \
         head -c 5000000 /dev/zero | tr '\\0' x; printf '\\033]0;t\\007'; echo; echo the end",
        daemon.display()
    );
    let id = submit_checked_sh(&h, "echo answer=42 > answer.txt", &check, &[]);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(!alive(&daemon), "the check's daemon outlived it");
    let status = h.status(&id);
    let log: PathBuf = check_of(&status)["verdicts"][0]["log"]
        .as_str()
        .unwrap()
        .into();
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(size < 1024 * 1024 + 4096, "log of {size} bytes");
    let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    assert!(
        text.contains("5000000 bytes printed") || text.contains("bytes printed"),
        "{}",
        &text[text.len() - 300..]
    );
}

#[test]
fn a_dependent_starts_only_after_the_pass_and_fails_with_a_failed_check() {
    let h = Harness::new();
    checked_project(&h);
    let passes = submit_checked_sh(&h, "echo answer=42 > answer.txt", "sh tests/check.sh", &[]);
    let fails = submit_checked_sh(&h, "echo answer=41 > answer.txt", "sh tests/check.sh", &[]);
    // The dependent looks, as it starts, at the task it waited for.
    let seen = h.root().join("seen.json");
    let look = format!("cuekit --json status {passes} > '{}'", seen.display());
    let after_pass = h.submit_sh(&look, &["--mode", "batch", "--after", &passes]);
    let after_fail = h.submit_sh("true", &["--mode", "batch", "--after", &fails]);
    h.wait_ended(
        &[&passes, &fails, &after_pass, &after_fail],
        &limits::arg(limits::LONG),
    );
    h.assert_status(&after_pass, "completed");
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        (seen["status"].as_str(), seen["check"]["phase"].as_str()),
        (Some("completed"), Some("passed")),
        "what the dependent saw at its start: {seen}"
    );
    let blocked = h.status(&after_fail);
    assert_eq!(
        (blocked["status"].as_str(), blocked["reason"].as_str()),
        (Some("cancelled"), Some("dependency_failed")),
        "{blocked}"
    );
}

#[test]
fn a_repositorys_own_check_runs_nothing_until_the_project_is_trusted() {
    let h = Harness::new();
    checked_project(&h);
    let planted = h.root().join("planted");
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        format!(
            "check:\n  run: ['touch {}']\n  rounds: 0\n  protect: []\n",
            planted.display()
        ),
    )
    .unwrap();
    commit_all(&h.project, "a check of the repository's own");
    let submit = crate::harness::sh_task(
        "echo answer=41 > answer.txt",
        &["--worktree", "--mode", "batch"],
    );
    let mut args = vec!["submit"];
    args.extend(submit.iter().copied());
    let (refused, code) = h.json(&args);
    crate::harness::assert_refused(&refused, code, "config_untrusted", 14);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("check.run"),
        "{refused}"
    );
    assert!(!planted.exists(), "a project file's check ran");
    // Trusted by the user, it is the task's check.
    h.trust(&[]);
    let id = h.submit(&submit);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert!(planted.exists(), "the trusted check did not run");
    assert_eq!(h.status(&id)["check"]["phase"], "passed");
}

#[test]
fn a_fix_round_that_cannot_reach_the_same_child_is_refused_before_anything_starts() {
    let h = Harness::new();
    checked_project(&h);
    // Asked for: refused. (Left to the default, the first verdict is final: races.rs.)
    let (refused, code) = h.json(&[
        "submit",
        "--worktree",
        "--mode",
        "batch",
        "--agent",
        "command",
        "--check",
        "true",
        "--check-rounds",
        "1",
        "--",
        "sh",
        "-c",
        "true",
    ]);
    assert_eq!(code, 3, "{refused}");
    assert!(
        refused["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--check-rounds 0"),
        "{refused}"
    );
    // In a git repository `--check` makes the task's own worktree (issue 51); asked not to,
    // the check has no checkout to read, and says so.
    let (refused, code) = h.json(&[
        "submit",
        "--mode",
        "batch",
        "--no-worktree",
        "--agent",
        "command",
        "--check",
        "true",
        "--check-rounds",
        "0",
        "--",
        "sh",
        "-c",
        "true",
    ]);
    assert_eq!(code, 3, "{refused}");
    assert!(
        refused["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--worktree"),
        "{refused}"
    );
    // The agent's own sandbox flag is no shell's: the check would run the child's code bare.
    let h = h.with_fake_gemini();
    let (refused, code) = h.json(&[
        "submit",
        "--sandbox=agent",
        "--worktree",
        "--mode",
        "batch",
        "--check",
        "true",
        "x",
    ]);
    assert_eq!(code, 3, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--sandbox=agent"),
        "{refused}"
    );
}

/// An interactive Gemini child's whole conversation, in one run: a wrong answer, then after
/// the fix message the right one (and a reply, should a `/quit` reach the model as text).
fn interactive_replies() -> Vec<Vec<String>> {
    let mut replies = answer("41", "Done.");
    replies.extend(answer("42", "Fixed it."));
    replies.push(canned_text("Bye."));
    vec![replies]
}

#[test]
fn an_interactive_gemini_child_is_steered_its_failure_and_told_to_quit_after_the_pass() {
    let h = gemini_by_run(Harness::new(), &interactive_replies());
    checked_project(&h);
    let id = submit_answer_task(&h, "sh tests/check.sh", &[]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{status}"
    );
    let check = check_of(&status);
    assert_eq!(
        (check["phase"].as_str(), check["fix_rounds"].as_u64()),
        (Some("passed"), Some(1)),
        "{status}"
    );
    // The failure reached the child: typed into its TUI, answered with the fix.
    let logs = h.ok(&["logs", &id]);
    assert!(
        logs.contains("cuekit checked your work and the check failed"),
        "{logs}"
    );
    assert!(logs.contains("Fixed it."), "{logs}");
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap_or_default();
    let sent: Vec<Value> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "cuekit_check")
        .collect();
    assert_eq!(sent[0]["sent"], "fix", "{events}");
    assert_eq!(sent[0]["receipt"], "submitted", "{events}");
    assert!(
        sent.iter()
            .any(|e| e["sent"] == "quit" && e["passed"] == true),
        "{events}"
    );
}

#[test]
fn an_interactive_gemini_child_whose_only_check_fails_ends_check_failed() {
    let h = gemini_by_run(Harness::new(), &interactive_replies());
    checked_project(&h);
    let id = submit_answer_task(&h, "sh tests/check.sh", &["--check-rounds", "0"]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 20, "{waited}\n{}", h.screen(&id));
    let status = h.status(&id);
    assert_eq!(status["reason"], "check_failed", "{status}");
    assert_eq!(check_of(&status)["phase"], "failed");
    assert!(!h.ok(&["logs", &id]).contains("cuekit checked your work"));
}

fn submit_checked_acp(h: &Harness, extra: &[&str]) -> String {
    let mut args = vec![
        "--worktree",
        "--mode",
        "acp",
        "--once",
        "--model",
        MODEL,
        "--check",
        "sh tests/check.sh",
    ];
    args.extend_from_slice(extra);
    args.push("Write the answer into answer.txt");
    h.submit(&args)
}

/// The prompts the ACP client sent the agent (`session/prompt`), from its message log.
fn acp_prompts(h: &Harness, id: &str) -> Vec<String> {
    let events = std::fs::read_to_string(h.task_dir(id).join("events.jsonl")).unwrap_or_default();
    events
        .lines()
        .filter(|line| line.contains("session/prompt"))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|event| {
            let message = event.get("message").cloned().unwrap_or(event);
            let message = match message {
                Value::String(text) => serde_json::from_str(&text).ok()?,
                other => other,
            };
            let prompt = &message["params"]["prompt"];
            Some(
                prompt
                    .as_array()?
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect::<String>(),
            )
        })
        .collect()
}

#[test]
fn an_acp_gemini_child_gets_its_failure_as_its_next_prompt_and_completes() {
    let h = gemini_by_run(Harness::new(), &interactive_replies());
    checked_project(&h);
    let id = submit_checked_acp(&h, &[]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{status}"
    );
    assert_eq!(check_of(&status)["fix_rounds"], 1, "{status}");
    assert_eq!(check_of(&status)["phase"], "passed", "{status}");
    let prompts = acp_prompts(&h, &id);
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(
        prompts[1]
            .starts_with("cuekit checked your work and the check failed (check round 1 of 3)"),
        "{prompts:?}"
    );
    assert!(
        prompts[1].contains("FAIL: answer.txt says answer=41"),
        "{prompts:?}"
    );
    assert_eq!(
        std::fs::read_to_string(h.worktree_of(&id).join("answer.txt")).unwrap(),
        "answer=42\n"
    );
}

#[test]
fn an_acp_gemini_child_whose_only_check_fails_ends_check_failed() {
    let h = gemini_by_run(Harness::new(), &interactive_replies());
    checked_project(&h);
    let id = submit_checked_acp(&h, &["--check-rounds", "0"]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 20, "{waited}\n{}", h.transcript(&id));
    let status = h.status(&id);
    assert_eq!(status["reason"], "check_failed", "{status}");
    assert_eq!(acp_prompts(&h, &id).len(), 1);
}

#[test]
fn checks_wait_for_a_slot_under_limits_checks() {
    let h = Harness::new();
    h.user_config("limits:\n  checks: 1\n");
    checked_project(&h);
    let trace = h.root().join("trace");
    let check = format!(
        "echo start >> '{t}'; sleep 1; echo end >> '{t}'",
        t = trace.display()
    );
    let ids: Vec<String> = (0..2)
        .map(|_| submit_checked_sh(&h, "true", &check, &[]))
        .collect();
    h.wait_ok(&ids, &limits::arg(limits::AGENT));
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        "start\nend\nstart\nend\n",
        "two checks ran at once under limits.checks: 1"
    );
}

#[test]
fn a_team_members_check_needs_the_spec_trusted_and_then_checks_its_work() {
    let h = gemini_by_run(Harness::new(), &[answer("42", "Done.")]);
    checked_project(&h);
    let spec = h.root().join("team.yaml");
    std::fs::write(
        &spec,
        format!(
            "- objective: Write the answer into answer.txt\n  mode: batch\n  model: {MODEL}\n  \
             worktree: true\n  check:\n    run: ['sh tests/check.sh']\n    rounds: 0\n"
        ),
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let (refused, code) = h.json(&["team", "submit", "crew", "--spec", spec]);
    crate::harness::assert_refused(&refused, code, "config_untrusted", 14);
    assert_eq!(runs(&h), 0, "nothing started");
    h.trust(&[spec]);
    let (submitted, code) = h.json(&["team", "submit", "crew", "--spec", spec]);
    assert_eq!(code, 0, "{submitted}");
    let id = submitted["tasks"][0]["id"].as_str().unwrap().to_string();
    h.wait_ok(&[&id], &limits::arg(limits::LONG));
    let status = h.status(&id);
    assert_eq!(check_of(&status)["phase"], "passed", "{status}");
}

#[test]
fn a_done_report_of_a_checked_child_does_not_start_its_dependent() {
    let h = gemini_by_run(
        Harness::new(),
        &[vec![
            canned_shell_call("echo answer=41 > answer.txt && cuekit report --done finished"),
            canned_text("Done."),
            canned_text("Bye."),
        ]],
    );
    checked_project(&h);
    let id = submit_answer_task(&h, "sh tests/check.sh", &["--check-rounds", "0"]);
    let ran = h.root().join("dependent-ran");
    let dependent = h.submit_sh(
        &format!("touch '{}'", ran.display()),
        &["--mode", "batch", "--after", &id],
    );
    h.wait_ended(&[&id, &dependent], &limits::arg(limits::LONG));
    let status = h.status(&id);
    assert_eq!(status["reason"], "check_failed", "{status}");
    assert_eq!(status["last_report"]["kind"], "done", "{status}");
    let blocked = h.status(&dependent);
    assert_eq!(blocked["reason"], "dependency_failed", "{blocked}");
    assert!(
        !ran.exists(),
        "the child's done report started its dependent"
    );
}

/// The `cuekit_check` lines of a task's `events.jsonl`: what cuekit sent its child after each
/// interactive check.
fn check_events(h: &Harness, id: &str) -> Vec<Value> {
    h.events_of(id, "cuekit_check")
}

#[test]
fn keep_open_leaves_a_passing_interactive_child_at_its_prompt() {
    let h = gemini_by_run(
        Harness::new(),
        &[vec![
            canned_shell_call("echo answer=42 > answer.txt"),
            canned_text("Done."),
            canned_text("Still here."),
        ]],
    );
    checked_project(&h);
    let id = submit_answer_task(&h, "sh tests/check.sh", &["--keep-open"]);
    h.wait_until(
        &id,
        "the check's verdict",
        crate::harness::HANG_GUARD,
        || !check_events(&h, &id).is_empty(),
    );
    let events = check_events(&h, &id);
    assert_eq!(
        (events[0]["passed"].as_bool(), events[0]["sent"].as_str()),
        (Some(true), Some("nothing")),
        "{events:?}"
    );
    // The pass leaves the next move to the parent: announced as a wait on a person, on the
    // screen of the turn it checked — that turn, not a new one, so nothing is checked again
    // (a second round of the same turn once ran at that announcement, `running` meanwhile).
    h.wait_until(&id, "the wait announced", limits::TASK, || {
        h.events_of(&id, "cuekit_transition")
            .iter()
            .any(|e| e["transition"]["new_status"] == "input_required")
    });
    h.monitor_ticks_pass(2);
    let status = h.status(&id);
    assert_eq!(status["status"], "input_required", "told to quit: {status}");
    let events = check_events(&h, &id);
    assert_eq!(events.len(), 1, "checked again: {events:?}\n{status}");
    // The parent ends it: completed, on the pass. (A `/quit` the TUI takes for chat text is
    // answered instead; it is sent again then, as gemini_real.rs does.)
    let mut attempts = 0;
    let (waited, code) = loop {
        attempts += 1;
        let receipt = h.ok(&["steer", &id, "/quit"]);
        assert!(receipt.contains("submitted"), "{receipt}");
        let (waited, code) = h.wait_all(&[&id], "20s");
        if code != 21 || attempts == 3 {
            break (waited, code);
        }
    };
    assert_eq!(code, 0, "{waited}");
    assert_eq!(h.status(&id)["status"], "completed");
}

/// The child exits while its turn's check runs (here the parent tells it `/quit` then; a
/// keep-open child told `/quit` after a pass has that last turn checked again): the verdict of
/// that check decides its ending, not the exit — it completes on the pass, and `wait` says so.
#[test]
fn a_child_that_exits_while_its_check_runs_ends_on_that_checks_verdict() {
    let h = gemini_by_run(
        Harness::new(),
        &[vec![
            canned_shell_call("echo answer=42 > answer.txt"),
            canned_text("Done."),
        ]],
    );
    checked_project(&h);
    let started = h.root().join("check-started");
    let check = format!("touch '{}'; sleep 3; sh tests/check.sh", started.display());
    let id = submit_answer_task(&h, &check, &[]);
    h.wait_until(&id, "its check to start", limits::TASK, || started.exists());
    let receipt = h.ok(&["steer", &id, "/quit"]);
    assert!(receipt.contains("submitted"), "{receipt}");
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0, "{waited}");
    let status = h.status(&id);
    assert_eq!(
        (&status["status"], &status["check"]["phase"]),
        (
            &serde_json::json!("completed"),
            &serde_json::json!("passed")
        ),
        "{status}"
    );
}

#[test]
fn a_sandboxed_tasks_check_runs_in_its_sandbox() {
    let h = Harness::new();
    checked_project(&h);
    let outside = h.home.join("written-by-the-check");
    let check = format!(
        "touch '{}' 2>/dev/null; sh tests/check.sh",
        outside.display()
    );
    let id = submit_checked_sh(&h, "echo answer=42 > answer.txt", &check, &["--sandbox"]);
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    assert_eq!(h.status(&id)["check"]["phase"], "passed");
    assert!(
        !outside.exists(),
        "the check of a sandboxed task wrote into the user's HOME"
    );
}

/// A parent's re-check of a sandboxed task (the step "changed since its check" asks for) runs
/// the child's code with the parent's environment sifted as the agent's was: no variable whose
/// name says secret reaches it.
#[test]
fn a_recheck_of_a_sandboxed_task_hands_its_code_no_secret() {
    let h = Harness::new();
    checked_project(&h);
    let check =
        "if env | grep -q '^GITHUB_TOKEN='; then echo LEAKED; exit 1; fi; sh tests/check.sh";
    let id = submit_checked_sh(&h, "echo answer=42 > answer.txt", check, &["--sandbox"]);
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0, "{waited}");
    let out = h
        .cuekit()
        .env("GITHUB_TOKEN", "ghp_0123456789abcdef0123456789abcdef0123")
        .args(["check", &id])
        .output()
        .unwrap();
    let log = std::fs::read_to_string(h.task_dir(&id).join("checks/2.log")).unwrap_or_default();
    assert!(out.status.success(), "{out:?}\n{log}");
    assert!(!log.lines().any(|line| line.trim() == "LEAKED"), "{log}");
}

#[test]
fn a_sandboxed_batch_tasks_fix_round_resumes_inside_the_same_sandbox() {
    let h = Harness::new().with_fake_gemini();
    checked_project(&h);
    let id = h.submit(&[
        "--sandbox",
        "--worktree",
        "--mode",
        "batch",
        "--check",
        "sh tests/check.sh",
        "Write the answer",
    ]);
    let status = h.status(&id);
    h.ok(&["cancel", &id]);
    let command = status["launch_command"].as_str().unwrap();
    let check = command.find("__check --from-launch").expect("the check");
    let resume = command
        .find("--resume")
        .expect("a fix round's continuation");
    assert!(check < resume, "{command}");
    let continuation = &command[check..];
    assert!(
        continuation.contains("bwrap")
            && continuation.find("bwrap") < continuation.find("--resume"),
        "the continuation runs outside the sandbox: {command}"
    );
}

#[test]
fn package_scripts_are_restored_and_the_childs_dependencies_kept() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::write(
        h.project.join("package.json"),
        "{\"name\": \"p\", \"scripts\": {\"test\": \"sh tests/check.sh\"}}\n",
    )
    .unwrap();
    commit_all(&h.project, "a node project");
    let id = submit_checked_sh(
        &h,
        "printf '{\"name\": \"p\", \"scripts\": {\"test\": \"true\"}, \"dependencies\": {\"left-pad\": \"1\"}}' > package.json",
        "grep -q 'sh tests/check.sh' package.json && grep -q left-pad package.json",
        &[],
    );
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0, "{waited}");
    let status = h.status(&id);
    let verdict = &check_of(&status)["verdicts"][0];
    assert_eq!(verdict["passed"], true, "{status}");
    assert_eq!(
        verdict["protected_edits"][0]["path"], "package.json (scripts)",
        "{status}"
    );
}

#[test]
fn a_parents_check_of_a_running_task_records_a_verdict_but_decides_nothing() {
    let h = Harness::new();
    checked_project(&h);
    let go = h.root().join("go");
    let id = submit_checked_sh(
        &h,
        &format!(
            "echo answer=42 > answer.txt; while [ ! -e '{}' ]; do sleep 0.05; done; echo answer=41 > answer.txt",
            go.display()
        ),
        "sh tests/check.sh",
        &[],
    );
    h.wait_until(&id, "the first answer", crate::harness::HANG_GUARD, || {
        h.worktree_of(&id).join("answer.txt").exists()
    });
    // The work passes now (as a child could run it at a good moment): recorded, not decided.
    let (now, code) = h.json(&["check", &id]);
    assert_eq!(code, 0, "{now}");
    assert_eq!(now["check"]["phase"], "working", "{now}");
    std::fs::write(&go, "").unwrap();
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 20, "{waited}");
    let status = h.status(&id);
    assert_eq!(status["reason"], "check_failed", "{status}");
    assert_eq!(check_of(&status)["verdicts"].as_array().unwrap().len(), 2);
}

#[test]
fn a_batch_childs_fix_rounds_count_against_its_token_budget() {
    let h = gemini_by_run(
        Harness::new(),
        &[answer("41", "Done."), answer("42", "Fixed it.")],
    );
    checked_project(&h);
    // One run of the agent reports 30 tokens (two replies of 15): within 40; the fix round's
    // run brings the task to 60.
    let id = submit_checked_gemini(&h, &["--max-tokens", "40"]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 20, "{waited}");
    let status = h.status(&id);
    assert_eq!(status["reason"], "budget_exceeded", "{status}");
    assert_eq!(runs(&h), 2, "{status}");
}

/// A role profile may carry a check: the user's own is used for a task that names none; a
/// project's (the repository's word: code it would run) is left out with a warning.
#[test]
fn a_users_role_carries_a_check_and_a_projects_role_check_is_not_used() {
    let h = Harness::new();
    checked_project(&h);
    let profile =
        "---\ncheck:\n  run: [\"sh tests/check.sh\"]\n  rounds: 0\n---\nWrite the answer.\n";
    let user_roles = h.home.join(".config/cuekit/agents");
    std::fs::create_dir_all(&user_roles).unwrap();
    std::fs::write(user_roles.join("checker.md"), profile).unwrap();
    let checked = h.submit_worktree_sh(&["--role", "checker"], "echo answer=41 > answer.txt");
    let (waited, code) = h.wait_all(&[&checked], "60s");
    assert_eq!(code, 20, "{waited}");
    assert_eq!(h.status(&checked)["reason"], "check_failed");

    let project_roles = h.project.join(".cuekit/agents");
    std::fs::create_dir_all(&project_roles).unwrap();
    std::fs::write(project_roles.join("theirs.md"), profile).unwrap();
    let mut args = vec!["submit"];
    args.extend(crate::harness::sh_task(
        "echo answer=41 > answer.txt",
        &["--worktree", "--mode", "batch", "--role", "theirs"],
    ));
    let (submitted, code) = h.json(&args);
    assert_eq!(code, 0, "{submitted}");
    assert!(
        submitted["warnings"]
            .to_string()
            .contains("names a check, which runs code"),
        "{submitted}"
    );
    let id = submitted["id"].as_str().unwrap();
    h.wait_ok(&[id], &limits::arg(limits::AGENT));
    assert!(h.status(id)["check"].is_null());
}

/// The monitor running an interactive child's check is killed mid-check: the phase it left
/// (`checking`) holds no runner, so the next monitor checks the work again and the task ends
/// on that verdict instead of idling in `checking` for good.
#[test]
fn a_check_whose_monitor_died_is_run_again_by_the_next_monitor() {
    let mut replies = answer("42", "Done.");
    replies.push(canned_text("Bye."));
    let h = gemini_by_run(Harness::new(), &[replies]);
    checked_project(&h);
    let first = h.root().join("first-check");
    let check = format!(
        "if [ ! -e '{0}' ]; then touch '{0}'; sleep 60; fi; sh tests/check.sh",
        first.display()
    );
    let id = submit_answer_task(&h, &check, &[]);
    h.wait_until(&id, "the first check to start", limits::LONG, || {
        first.exists()
    });
    for monitor in h.monitors() {
        // SAFETY: kill takes a pid and a signal and touches no memory.
        unsafe { libc::kill(monitor as libc::pid_t, libc::SIGKILL) };
    }
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    let status = h.status(&id);
    assert_eq!(check_of(&status)["phase"], "passed", "{status}");
}

/// A check that says it began (`started`), waits until the child's leftover rewrote the
/// checkout (at most 30 s), then runs the project's test on its snapshot.
fn rewritten_during_check(h: &Harness, started: &Path) -> String {
    format!(
        "touch '{m}'; i=0; while ! grep -qs answer=41 '{wt}'/*/answer.txt && [ $i -lt 300 ]; \
         do sleep 0.1; i=$((i+1)); done; sh tests/check.sh",
        m = started.display(),
        wt = h.project.with_extension("worktrees").display()
    )
}

/// A checked task that writes the right answer, and a writer that, once the check has begun
/// (its snapshot is taken before the command runs), writes a wrong one into its checkout: its
/// id. The writer is this test's, not a leftover of the child's: those are ended before the
/// check runs (48 work F2); what can still change the checkout meanwhile (you, an editor, a
/// process that escaped the task) is what the snapshot is for.
fn submit_rewritten_during_check(h: &Harness) -> String {
    let started = h.root().join("check-started");
    let id = submit_checked_sh(
        h,
        "echo answer=42 > answer.txt",
        &rewritten_during_check(h, &started),
        &[],
    );
    let answer = h.worktree_of(&id).join("answer.txt");
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !started.exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = std::fs::write(answer, "answer=41\n");
    });
    id
}

/// Issue 42: the work is rewritten while the check runs on a snapshot.
/// The verdict names the commit it checked; the task reads "changed since its check"; the
/// merge carries the checked content, and the later work stays in the task's checkout.
#[test]
fn a_leftover_rewriting_the_work_during_the_check_does_not_reach_the_merge() {
    let h = Harness::new();
    checked_project(&h);
    let id = submit_rewritten_during_check(&h);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let worktree = h.worktree_of(&id);
    assert_eq!(
        std::fs::read_to_string(worktree.join("answer.txt")).unwrap(),
        "answer=41\n",
        "the leftover rewrote the checkout"
    );
    let status = h.status(&id);
    let check = check_of(&status);
    assert_eq!(check["phase"], "passed", "{status}");
    let commit = check["verdicts"][0]["commit"]
        .as_str()
        .unwrap_or_else(|| panic!("the verdict names no commit: {status}"))
        .to_string();
    let kept = crate::harness::git::git(
        &h.project,
        &["rev-parse", &format!("refs/cuekit/checked/{id}/1")],
    );
    assert_eq!(kept.trim(), commit);
    assert_eq!(check["changed_since_check"], true, "{status}");
    assert!(
        h.ok(&["status", &id]).contains("changed since its check"),
        "{}",
        h.ok(&["status", &id])
    );
    // `diff` and `result` show what was checked.
    let (diff, code) = h.json(&["diff", &id]);
    assert_eq!(code, 0, "{diff}");
    assert!(
        diff["patch"].as_str().unwrap().contains("+answer=42"),
        "{diff}"
    );
    assert_eq!(diff["checked_commit"], commit.as_str(), "{diff}");
    let (merged, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(merged["later_work_left"], true, "{merged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("answer.txt")).unwrap(),
        "answer=42\n",
        "the merge carried the rewritten work: {merged}"
    );
    // The later work stays in the task's checkout.
    assert_eq!(
        std::fs::read_to_string(worktree.join("answer.txt")).unwrap(),
        "answer=41\n"
    );
}

/// The refs of a task's check commits go with the task: `rm` after the merge drops the ones
/// the merge holds, `rm --force` every one; neither is left to pin objects for ever.
#[test]
fn removing_a_checked_task_drops_its_check_commits_refs() {
    let h = Harness::new();
    checked_project(&h);
    let checked_refs = |id: &str| {
        crate::harness::git::git(
            &h.project,
            &[
                "for-each-ref",
                "--format=%(refname)",
                &format!("refs/cuekit/checked/{id}/"),
            ],
        )
    };
    let merged = submit_checked_sh(&h, "echo answer=42 > answer.txt", "sh tests/check.sh", &[]);
    let unmerged = submit_checked_sh(&h, "echo answer=42 > answer.txt", "sh tests/check.sh", &[]);
    h.wait_ok(&[&merged, &unmerged], &limits::arg(limits::AGENT));
    for id in [&merged, &unmerged] {
        assert_eq!(
            checked_refs(id).trim(),
            format!("refs/cuekit/checked/{id}/1")
        );
    }
    let (out, code) = h.json(&["merge", &merged, "--yes"]);
    assert_eq!(code, 0, "{out}");
    let (out, code) = h.json(&["rm", &merged]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        checked_refs(&merged),
        "",
        "the merged task's check ref stayed: {out}"
    );
    // Unmerged, a plain rm keeps the task (its branch holds work), refs and all.
    let (out, code) = h.json(&["rm", &unmerged]);
    assert_eq!(code, 36, "{out}");
    assert_ne!(checked_refs(&unmerged), "");
    let (out, code) = h.json(&["rm", &unmerged, "--force"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        checked_refs(&unmerged),
        "",
        "rm --force left the check ref: {out}"
    );
}

/// A passing check, then a process the child left breaks the work, and a re-check fails: the
/// commit that passed is still the only checked work. A plain `merge` and a `--base-from` take
/// it, never the failing tree; a checked task that never passed is refused without
/// `--unchecked`.
#[test]
fn after_a_failed_recheck_merge_and_base_from_take_the_commit_that_passed() {
    let h = Harness::new();
    checked_project(&h);
    let id = submit_rewritten_during_check(&h);
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let (out, code) = h.json(&["check", &id]);
    assert_eq!(code, 35, "the re-check of the rewritten work fails: {out}");
    let next = h.submit_sh(
        "cat answer.txt > seen.txt",
        &["--base-from", &id, "--mode", "batch"],
    );
    h.wait_ok(&[&next], &limits::arg(limits::TASK));
    assert_eq!(
        std::fs::read_to_string(h.worktree_of(&next).join("seen.txt")).unwrap(),
        "answer=42\n",
        "--base-from started on the work that failed its re-check"
    );
    let (merged, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("answer.txt")).unwrap(),
        "answer=42\n",
        "the merge took the tree that failed its re-check: {merged}"
    );
    // Never passed: refused, and `--unchecked` takes it as it is.
    let failed = submit_checked_sh(&h, "echo answer=40 > answer.txt", "sh tests/check.sh", &[]);
    let _ = h.wait_all(&[&failed], &limits::arg(limits::AGENT));
    let (out, code) = h.json(&["merge", &failed, "--yes"]);
    assert_eq!(code, 35, "{out}");
    assert!(
        out["error"]["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("--unchecked"),
        "{out}"
    );
    let (out, code) = h.json(&["merge", &failed, "--yes", "--unchecked"]);
    assert_eq!(code, 0, "{out}");
}

/// Issue 42, the ACP case: the real Gemini CLI's shell tool leaves a process that rewrites
/// `answer.txt` after `end_turn`, while the check runs on its snapshot. The task completes on
/// the checked work, and `merge` carries that, not the rewrite.
#[test]
fn an_acp_childs_leftover_rewriting_the_work_during_the_check_does_not_reach_the_merge() {
    // The leftover waits for the check to have begun (its snapshot is taken before the
    // command runs), then rewrites the work.
    let started = std::env::temp_dir().join(format!("cuekit-42-acp-{}", std::process::id()));
    let _ = std::fs::remove_file(&started);
    let _ = std::fs::remove_file(format!("{}.detached", started.display()));
    // The tool's shell waits until the leftover left its process group (a tool that ends
    // the group at once would otherwise kill it before `setsid` ran).
    let detached = format!("{}.detached", started.display());
    let leftover = format!(
        "echo answer=42 > answer.txt; \
         setsid sh -c 'touch {d}; i=0; while [ ! -e {m} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; \
         echo answer=41 > answer.txt' </dev/null >/dev/null 2>&1 & \
         while [ ! -e {d} ]; do sleep 0.05; done",
        m = started.display(),
        d = detached,
    );
    let h = gemini_by_run(
        Harness::new(),
        &[vec![canned_shell_call(&leftover), canned_text("Done.")]],
    );
    checked_project(&h);
    let check = rewritten_during_check(&h, &started);
    let id = h.submit(&[
        "--worktree",
        "--mode",
        "acp",
        "--once",
        "--model",
        MODEL,
        "--check",
        &check,
        "--check-rounds",
        "0",
        "Write the answer into answer.txt",
    ]);
    let (waited, code) = h.wait_all(&[&id], "120s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    let worktree = h.worktree_of(&id);
    assert!(
        poll(limits::SHORT, || {
            std::fs::read_to_string(worktree.join("answer.txt")).unwrap_or_default()
                == "answer=41\n"
        }),
        "the leftover rewrote the checkout: {:?} (marker there: {})\n{}\n{}",
        std::fs::read_to_string(worktree.join("answer.txt")),
        started.exists(),
        h.transcript(&id),
        String::from_utf8_lossy(
            &std::process::Command::new("ps")
                .args(["-eo", "pid,pgid,sid,args"])
                .output()
                .unwrap()
                .stdout
        )
        .lines()
        .filter(|l| l.contains("answer=41"))
        .collect::<Vec<_>>()
        .join("\n")
    );
    let status = h.status(&id);
    assert_eq!(check_of(&status)["phase"], "passed", "{status}");
    assert_eq!(check_of(&status)["changed_since_check"], true, "{status}");
    let (merged, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("answer.txt")).unwrap(),
        "answer=42\n",
        "the merge carried the rewritten work: {merged}"
    );
    let _ = std::fs::remove_file(&started);
    let _ = std::fs::remove_file(format!("{}.detached", started.display()));
}

/// A sandboxed task's check passes when the user's HOME is a git repository: the scratch
/// checkout lies in cuekit's data dir, inside that repository, which is hidden whole and none
/// of the work's (it was refused as an in-place sandbox in an unreadable repository).
#[test]
fn a_sandboxed_check_passes_under_a_home_kept_in_git() {
    let h = Harness::new();
    checked_project(&h);
    crate::harness::git::git(&h.home, &["init", "-q"]);
    let id = submit_checked_sh(
        &h,
        "echo answer=42 > answer.txt",
        "sh tests/check.sh",
        &["--sandbox"],
    );
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    assert_eq!(
        h.status(&id)["check"]["phase"],
        "passed",
        "{}",
        h.status(&id)
    );
}

/// Audit 48 F5: a child's own `cuekit check` mid-work is refused (`inside_task`), in every
/// mode. And after a mid-work check passed on a tree the child then changed, the final check
/// fails: that failure stands (verification round V1: the mid-work pass may have been timed
/// by a process the child left), so a plain merge is refused and lands nothing, and `diff`
/// and `result` show the work as it is — never another tree than a merge would land.
#[test]
fn a_childs_own_check_is_refused_and_the_review_shows_what_merge_takes() {
    let h = Harness::new();
    checked_project(&h);
    let said = h.root().join("self-check");
    let go = h.root().join("go");
    let id = submit_checked_sh(
        &h,
        &format!(
            "echo answer=42 > answer.txt; echo evil > evil.txt; \
             cuekit check \"$CUEKIT_TASK_ID\" >/dev/null 2>&1; echo \"code $?\" > '{}'; \
             while [ ! -e '{}' ]; do sleep 0.05; done; rm evil.txt; echo answer=41 > answer.txt",
            said.display(),
            go.display()
        ),
        "sh tests/check.sh",
        &[],
    );
    h.wait_until(
        &id,
        "the child's own check",
        crate::harness::HANG_GUARD,
        || std::fs::read_to_string(&said).is_ok_and(|text| text.ends_with('\n')),
    );
    assert_eq!(
        std::fs::read_to_string(&said).unwrap().trim(),
        "code 30",
        "the child's own check was not refused as inside_task"
    );
    let (now, code) = h.json(&["check", &id]);
    assert_eq!(code, 0, "the parent's mid-work check passes: {now}");
    std::fs::write(&go, "").unwrap();
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 20, "the final check fails: {waited}");
    let paths = |files: &Value| -> Vec<String> {
        files
            .as_array()
            .map(|files| {
                files
                    .iter()
                    .filter_map(|f| f["path"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (diff, code) = h.json(&["diff", &id, "--stat"]);
    assert_eq!(code, 0, "{diff}");
    assert!(
        !paths(&diff["files"]).contains(&"evil.txt".to_string()),
        "diff shows the mid-work pass's tree, which no plain merge takes: {diff}"
    );
    let (result, _) = h.json(&["result", &id]);
    assert!(
        !paths(&result["files_changed"]).contains(&"evil.txt".to_string()),
        "result shows the mid-work pass's tree, which no plain merge takes: {result}"
    );
    let (merged, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 35, "{merged}");
    assert!(!h.project.join("evil.txt").exists(), "{merged}");
}

/// Audit 48 F9: `rm` of an ended task while a parent's `cuekit check` of it ran went ahead;
/// the check died with `io` and left its verdict file in the registry for a task no record
/// names. Now `rm` refuses while the check runs, and removes the task once it ended.
#[test]
fn rm_refuses_while_a_parents_check_of_the_task_runs() {
    let h = Harness::new();
    checked_project(&h);
    let started = h.root().join("check-started");
    let id = submit_checked_sh(
        &h,
        "echo answer=42 > answer.txt",
        &format!(
            "if [ -e '{0}' ]; then sleep 3; fi; touch '{0}'; sh tests/check.sh",
            started.display()
        ),
        &[],
    );
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let mut check = h.cuekit().args(["check", &id]).spawn().unwrap();
    h.wait_until(
        &id,
        "the parent's check",
        crate::harness::HANG_GUARD,
        || h.status(&id)["check"]["phase"] == "checking",
    );
    let (refused, code) = h.json(&["rm", &id, "--force"]);
    assert_eq!(code, 5, "rm went ahead during the check: {refused}");
    assert!(h.task_dir(&id).exists(), "{refused}");
    assert!(check.wait().unwrap().success(), "the check was cut off");
    let (removed, code) = h.json(&["rm", &id, "--force"]);
    assert_eq!(code, 0, "{removed}");
    let left: Vec<String> = std::fs::read_dir(h.data_dir().join("tasks"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&id))
        .collect();
    assert!(left.is_empty(), "left in the registry: {left:?}");
}

/// Audit 48 (work F7): `--check-protect ''` (an unset variable) or a glob that can never match
/// replaced the default protection silently, and `--check-timeout 0s` was taken; each is
/// refused now as bad input, before anything starts.
#[test]
fn a_protect_glob_that_protects_nothing_or_a_zero_timeout_is_refused() {
    let h = Harness::new();
    checked_project(&h);
    for extra in [
        ["--check-protect", ""],
        ["--check-protect", "../../**"],
        ["--check-timeout", "0s"],
    ] {
        let mut args = vec![
            "submit",
            "--worktree",
            "--agent",
            "command",
            "--mode",
            "batch",
            "--check",
            "true",
        ];
        args.extend(extra);
        args.extend(["--", "true"]);
        let (answer, code) = h.json(&args);
        crate::harness::assert_refused(&answer, code, "invalid_input", 3);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains(extra[0]),
            "{answer}"
        );
        let (listed, _) = h.json(&["list", "--all"]);
        assert_eq!(
            listed,
            serde_json::json!([]),
            "{extra:?}: a task was started"
        );
    }
}

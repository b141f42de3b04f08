//! Best-of-N races (issue 34, part 2): one `submit --best-of N` makes N checked candidates,
//! each in a worktree of its own; the pick names the one whose check passed. Real git, real
//! tmux, real /bin/sh, and the real Gemini CLI offline (canned replies per model) where the
//! candidates' behaviour matters.

use std::path::PathBuf;

use serde_json::Value;

use super::checks::{answer, checked_project};
use crate::harness::git::git;
use crate::harness::{Harness, assert_refused, canned_text, limits, poll, write_executable};

/// The real Gemini CLI offline, with replies chosen by the model it runs (`-m`) and the how
/// manyth run of that model it is: `canned-<model>-<n>.jsonl`, else `canned-<model>-last`.
fn gemini_by_model(h: Harness, replies: &[(&str, Vec<Vec<String>>)]) -> Harness {
    let root = h.root().to_path_buf();
    for (model, runs) in replies {
        for (n, run) in runs.iter().enumerate() {
            let text = run.join("\n") + "\n";
            std::fs::write(root.join(format!("canned-{model}-{}.jsonl", n + 1)), &text).unwrap();
            std::fs::write(root.join(format!("canned-{model}-last.jsonl")), &text).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("runs")).unwrap();
    let wrapper = format!(
        "#!/bin/sh\nruns='{root}/runs'\n\
         model=; prev=\n\
         for a in \"$@\"; do [ \"$prev\" = -m ] && model=$a; prev=$a; done\n\
         n=$(ls \"$runs\" | grep -c \"^$model-\"); n=$((n + 1)); : > \"$runs/$model-$n\"\n\
         canned='{root}/canned-'$model-$n.jsonl; [ -f \"$canned\" ] || canned='{root}/canned-'$model-last.jsonl\n\
         [ -f /dev/stdin ] || exec '{real}' --fake-responses-non-strict \"$canned\" \"$@\"\n\
         cat > \"$runs/stdin-$model-$n\"\n\
         exec '{real}' --fake-responses-non-strict \"$canned\" \"$@\" < \"$runs/stdin-$model-$n\"\n",
        root = root.display(),
        real = crate::harness::real_gemini().display(),
    );
    write_executable(&h.bin.join("gemini"), &wrapper);
    h.gemini_api_key_auth();
    h.env("GEMINI_API_KEY", "offline-test-key")
}

const MODELS: [&str; 3] = [
    "gemini-2.5-flash",
    "gemini-2.5-pro",
    "gemini-2.5-flash-lite",
];

/// `submit --best-of …`: the race id and the candidates' ids, in submit order.
fn submit_race(h: &Harness, args: &[&str]) -> (String, Vec<String>) {
    let mut all = vec!["submit"];
    all.extend_from_slice(args);
    let (value, code) = h.json(&all);
    assert_eq!(code, 0, "the race was refused: {value}");
    let ids = value["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    (value["race"].as_str().unwrap().to_string(), ids)
}

/// A race of `command` candidates running `sh -c SCRIPT` in batch mode, checked by the
/// project's test with no fix round; `flags` say how many and how it is decided.
pub(crate) fn sh_race(h: &Harness, flags: &[&str], script: &str) -> (String, Vec<String>) {
    let mut args = flags.to_vec();
    args.extend([
        "--mode",
        "batch",
        "--check",
        "sh tests/check.sh",
        "--check-rounds",
        "0",
    ]);
    submit_race(h, &crate::harness::sh_task(script, &args))
}

/// A race of two [`sh_race`] candidates running `script`, waited for: its result, the loser's
/// id and the loser's checkout.
fn race_of_two_with_its_loser(h: &Harness, script: &str) -> (Value, String, PathBuf) {
    let (race, ids) = sh_race(h, &["--best-of", "2"], script);
    let (waited, code) = h.json(&["wait", &race, "--timeout", "90s"]);
    assert_eq!(code, 0, "{waited}");
    let (result, _) = h.json(&["result", &race]);
    let winner = result["pick"]["winner"].as_str().unwrap().to_string();
    let loser = ids.into_iter().find(|id| *id != winner).unwrap();
    let checkout = h.worktree_of(&loser);
    (result, loser, checkout)
}

fn kept_ref(h: &Harness, race: &str, id: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .current_dir(&h.project)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/cuekit/races/{race}/{id}"))
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn candidate<'a>(result: &'a Value, id: &str) -> &'a Value {
    result["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no candidate {id} in {result}"))
}

#[test]
fn a_race_of_three_is_won_by_the_one_that_passes_after_its_fix_round_and_merges_alone() {
    let h = Harness::new();
    checked_project(&h);
    let wrong = |value: &str| answer(value, "Done.");
    let h = gemini_by_model(
        h,
        &[
            (MODELS[0], vec![wrong("41"), wrong("41")]),
            (MODELS[1], vec![wrong("41"), answer("42", "Fixed.")]),
            (MODELS[2], vec![wrong("7"), vec![canned_text("I cannot.")]]),
        ],
    );
    let models = MODELS.join(",");
    let (race, ids) = submit_race(
        &h,
        &[
            "--best-of",
            "3",
            "--models",
            &models,
            "--mode",
            "batch",
            "--check",
            "sh tests/check.sh",
            "--check-rounds",
            "1",
            "Write the answer into answer.txt",
        ],
    );
    assert_eq!(ids.len(), 3);
    // The race id stands for its candidates.
    let (waited, code) = h.json(&["wait", &race, "--timeout", "120s"]);
    assert_eq!(code, 20, "two candidates fail their checks: {waited}");
    let (listed, _) = h.json(&["status", &race]);
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");

    let (result, code) = h.json(&["result", &race]);
    assert_eq!(code, 0, "{result}");
    assert_eq!(result["state"], "decided", "{result}");
    let winner = &ids[1];
    assert_eq!(result["pick"]["winner"], winner.as_str(), "{result}");
    assert!(
        result["pick"]["why"]
            .as_str()
            .unwrap()
            .starts_with("passed its check, unlike"),
        "{result}"
    );
    let won = candidate(&result, winner);
    assert_eq!(won["model"], MODELS[1]);
    assert_eq!(won["fix_rounds"], 1, "{won}");
    for loser in [&ids[0], &ids[2]] {
        let row = candidate(&result, loser);
        assert_eq!(row["passed"], false, "{row}");
        // Its work is kept at the race's ref, its checkout is gone, its branch stays.
        let kept = kept_ref(&h, &race, loser).expect("the loser's work is kept");
        let file = git(&h.project, &["show", &format!("{kept}:answer.txt")]);
        assert!(file.starts_with("answer="), "{file}");
        let worktree = h.status(loser)["worktree"].as_str().unwrap().to_string();
        assert!(!std::path::Path::new(&worktree).exists(), "{worktree}");
    }
    assert!(kept_ref(&h, &race, winner).is_none());
    assert!(h.worktree_of(winner).join("answer.txt").exists());
    let text = h.ok(&["result", &race]);
    assert!(text.contains(&format!("winner: {winner}")), "{text}");

    // Two candidates compared, one of them from its kept branch.
    let (diff, code) = h.json(&[
        "diff",
        &race,
        "--candidates",
        &format!("{},{winner}", ids[0]),
    ]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(diff["files"][0]["path"], "answer.txt", "{diff}");
    assert!(
        diff["patch"].as_str().unwrap().contains("+answer=42"),
        "{diff}"
    );

    // `merge RACE` brings exactly the winner's change.
    let (merged, code) = h.json(&["merge", &race]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("answer.txt")).unwrap(),
        "answer=42\n"
    );
    let changed = git(&h.project, &["diff", "--name-only", "HEAD^1", "HEAD"]);
    assert_eq!(changed.trim(), "answer.txt");

    // `rm RACE` removes every candidate and what the race kept.
    let (removed, code) = h.json(&["rm", &race, "--force"]);
    assert_eq!(code, 0, "{removed}");
    assert!(kept_ref(&h, &race, &ids[0]).is_none());
    let (gone, code) = h.json(&["result", &race]);
    assert_refused(&gone, code, "task_not_found", 4);
}

/// Each candidate is the `command` agent running the same script: the first to take the
/// claim passes at once, the others hold until cancelled.
#[test]
fn first_decides_at_the_first_pass_and_cancels_the_others() {
    let h = Harness::new();
    checked_project(&h);
    let claim = h.root().join("claim");
    let script = format!(
        "if mkdir '{}' 2>/dev/null; then echo answer=42 > answer.txt; \
         else echo answer=1 > answer.txt; sleep 60; fi",
        claim.display()
    );
    let (race, ids) = sh_race(&h, &["--best-of", "3", "--first"], &script);
    let (waited, _) = h.json(&["wait", &race, "--timeout", "60s"]);
    let statuses: Vec<&str> = waited["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{waited}"))
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == "completed").count(),
        1,
        "{waited}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == "cancelled").count(),
        2,
        "{waited}"
    );
    let (result, _) = h.json(&["result", &race]);
    assert_eq!(result["state"], "decided", "{result}");
    let winner = result["pick"]["winner"].as_str().unwrap().to_string();
    assert_eq!(result["cancelled"].as_array().unwrap().len(), 2, "{result}");
    for loser in ids.iter().filter(|id| **id != winner) {
        assert!(kept_ref(&h, &race, loser).is_some(), "{result}");
    }
}

/// Issue 42: a candidate passes with a large change, then a process it left shrinks its work
/// to a one-line wrong change. The pick weighs the commit each check ran on, so the shrink
/// wins nothing, and `--merge` puts the honest candidate's checked work on the target.
#[test]
fn a_candidate_that_shrinks_its_work_after_passing_does_not_win_on_a_smaller_diff() {
    let h = Harness::new();
    checked_project(&h);
    let claim = h.root().join("claim");
    // The first to take the claim is the hostile one: 30 extra lines, then a shrink once its
    // check began (the check's snapshot is taken before its command runs), by a process that
    // hid from cuekit (its environment cleaned, a session of its own: the task's leftovers
    // cuekit can tell are ended before its check, 48 work F2). The other waits for the
    // shrink, then passes with 5 extra lines.
    let started = h.root().join("check-started");
    let script = format!(
        "if mkdir '{claim}' 2>/dev/null; then \\
           echo answer=42 > answer.txt; seq 1 30 > extra.txt; \\
           env -u CUEKIT_TASK_ID setsid sh -c 'i=0; while [ ! -e {started} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; \\
             echo answer=1 > answer.txt; rm -f extra.txt; touch {claim}/shrunk' \\
             </dev/null >/dev/null 2>&1 & \\
         else \\
           echo answer=42 > answer.txt; seq 1 5 > extra.txt; \\
           i=0; while [ ! -e '{claim}/shrunk' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; \\
         fi",
        claim = claim.display(),
        started = started.display(),
    );
    let check = format!("touch '{}'; sh tests/check.sh", started.display());
    let (race, ids) = submit_race(
        &h,
        &crate::harness::sh_task(
            &script,
            &[
                "--best-of",
                "2",
                "--merge",
                "--mode",
                "batch",
                "--check",
                &check,
                "--check-rounds",
                "0",
            ],
        ),
    );
    let (waited, code) = h.json(&["wait", &race, "--timeout", "90s"]);
    assert_eq!(code, 0, "{waited}");
    assert!(claim.join("shrunk").exists(), "the shrink happened");
    let (result, _) = h.json(&["result", &race]);
    assert_eq!(result["state"], "decided", "{result}");
    let winner = result["pick"]["winner"].as_str().unwrap().to_string();
    assert_eq!(
        candidate(&result, &winner)["diff_lines"],
        6,
        "the shrunk candidate won: {result}"
    );
    let hostile = ids.iter().find(|id| **id != winner).unwrap();
    // Weighed by the commit its check ran on: 31 lines, not the one it shrank to.
    assert_eq!(candidate(&result, hostile)["diff_lines"], 31, "{result}");
    let merged = result["merged"].as_str().unwrap_or_default();
    assert!(merged.contains("merged into"), "{result}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("answer.txt")).unwrap(),
        "answer=42\n"
    );
    // The loser's kept ref is the commit its check passed, not the shrunk work.
    let kept = kept_ref(&h, &race, hostile).expect("the loser's work is kept");
    let file = git(&h.project, &["show", &format!("{kept}:answer.txt")]);
    assert_eq!(file.trim(), "answer=42");
}

#[test]
fn a_race_nobody_passes_fails_and_keeps_every_candidate() {
    let h = Harness::new();
    checked_project(&h);
    let (race, ids) = sh_race(
        &h,
        &["--best-of", "2", "--merge"],
        "echo answer=1 > answer.txt",
    );
    let (waited, code) = h.json(&["wait", &race, "--timeout", "60s"]);
    assert_eq!(code, 20, "{waited}");
    let (result, _) = h.json(&["result", &race]);
    assert_eq!(result["state"], "failed", "{result}");
    assert!(result["pick"]["winner"].is_null(), "{result}");
    assert!(result.get("merged").is_none(), "{result}");
    for id in &ids {
        assert!(h.worktree_of(id).join("answer.txt").exists());
        assert!(kept_ref(&h, &race, id).is_none());
    }
    // Nothing to merge unless a candidate is named.
    let (refused, code) = h.json(&["merge", &race]);
    assert_refused(&refused, code, "invalid_state", 5);
    assert!(!h.project.join("answer.txt").exists());
}

#[test]
fn a_race_needs_a_check_and_starts_nothing_without_one() {
    let h = Harness::new();
    checked_project(&h);
    let (refused, code) = h.json(&[
        "submit",
        "--best-of",
        "2",
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        "true",
    ]);
    assert_refused(&refused, code, "invalid_input", 3);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("picks its winner by a check"),
        "{refused}"
    );
    let (listed, _) = h.json(&["list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    let (one, code) = h.json(&["submit", "--best-of", "1", "--check", "true", "x"]);
    assert_refused(&one, code, "invalid_input", 3);
}

/// A loser that left a job running in its checkout (a build, a server) keeps the checkout when
/// the race is decided, as `rm` would: the job's output would have nowhere to go. The race
/// says why. (The job hides from cuekit — its environment cleaned, a session of its own —:
/// the task's leftovers cuekit can tell are ended before its check, 48 work F2.)
#[test]
fn a_losers_checkout_with_a_process_working_in_it_is_kept() {
    let h = Harness::new();
    checked_project(&h);
    let claim = h.root().join("claim");
    // The job leaves the task (a session of its own, no CUEKIT_TASK_ID) before the candidate
    // ends: else the sweep of its leftovers before its check could end it on its way out.
    let started = h.root().join("job-started");
    let script = format!(
        "if mkdir '{claim}' 2>/dev/null; then \
           echo answer=42 > answer.txt; seq 1 30 > extra.txt; \
           env -u CUEKIT_TASK_ID setsid sh -c \"touch '{started}'; exec sleep 60\" </dev/null >/dev/null 2>&1 & \
           while [ ! -e '{started}' ]; do sleep 0.05; done; \
         else echo answer=42 > answer.txt; fi",
        claim = claim.display(),
        started = started.display(),
    );
    let (result, _, checkout) = race_of_two_with_its_loser(&h, &script);
    let kept = checkout.is_dir();
    // The job (whatever works in the checkout) is ended either way, so that it outlives
    // nothing.
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{pid}/cwd"))
            .is_ok_and(|cwd| cwd.starts_with(&checkout))
        {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
        }
    }
    assert!(
        kept,
        "the loser's checkout went with its job running in it: {result}"
    );
    let problems = result["problems"].to_string();
    assert!(problems.contains("works in"), "{result}");
}

/// The audit (round 1 F5): a race's cleanup removed a loser's checkout although it held work
/// hidden by a `.gitignore` the loser wrote itself (a folder whose own `.gitignore` says `*`):
/// the race's kept ref holds its commits and tracked files, never those. The checkout is kept
/// and the race says why.
#[test]
fn a_losers_work_hidden_by_its_own_gitignore_keeps_its_checkout() {
    let h = Harness::new();
    checked_project(&h);
    let claim = h.root().join("claim");
    let script = format!(
        "if mkdir '{claim}' 2>/dev/null; then \
           echo answer=42 > answer.txt; seq 1 30 > extra.txt; \
           mkdir notes; echo '*' > notes/.gitignore; echo keep me > notes/plan.md; \
         else echo answer=42 > answer.txt; fi",
        claim = claim.display(),
    );
    let (result, loser, checkout) = race_of_two_with_its_loser(&h, &script);
    assert!(
        checkout.join("notes/plan.md").is_file(),
        "the loser's hidden work went with its checkout: {result}"
    );
    let problems = result["problems"].to_string();
    // Either the race names the hidden work, or it was decided while a process of the loser's
    // (its launch ending) still worked in its checkout, and kept it for that, which it says.
    assert!(
        problems.contains("notes/plan.md") || problems.contains("works in"),
        "{result}"
    );
    // Either way, once that process is gone, removing the loser names the hidden work (on
    // stdout, with the other reasons `rm` keeps a task) and keeps it all the same.
    let mut last = String::new();
    let refused = poll(limits::TASK, || {
        let output = h.run(&["rm", &loser]);
        last = String::from_utf8_lossy(&output.stdout).into_owned();
        output.status.code() == Some(36) && last.contains("notes/plan.md")
    });
    assert!(
        refused,
        "rm never named the hidden work (its last answer: {last}): {result}"
    );
    assert!(checkout.join("notes/plan.md").is_file());
}

/// A race of `command` candidates in batch mode needs no `--check-rounds 0`: their check's
/// first verdict is final (a fix round would need cuekit to resume the same child's session
/// with the message, which it cannot for a program of yours), and the submit says so.
#[test]
fn a_command_race_needs_no_check_rounds_and_says_its_first_verdict_is_final() {
    let h = Harness::new();
    checked_project(&h);
    let args = crate::harness::sh_task(
        "echo answer=42 > answer.txt",
        &[
            "--best-of",
            "2",
            "--mode",
            "batch",
            "--check",
            "sh tests/check.sh",
        ],
    );
    let mut all = vec!["submit"];
    all.extend_from_slice(&args);
    let (value, code) = h.json(&all);
    assert_eq!(code, 0, "the race was refused: {value}");
    assert!(
        value
            .to_string()
            .contains("first verdict is final (no fix round): a fix round of a batch command task"),
        "{value}"
    );
    let race = value["race"].as_str().unwrap().to_string();
    let (waited, code) = h.json(&["wait", &race, "--timeout", "60s"]);
    assert_eq!(code, 0, "{waited}");
    let (result, _) = h.json(&["result", &race]);
    assert_eq!(result["state"], "decided", "{result}");
}

/// A race left `complete: false` with no mark of who submits it (here written so, as an older
/// cuekit's killed submit left it): `wait` on it refuses, naming what there is, instead of
/// reading its few (or no) candidates as the whole field and answering 0.
#[test]
fn waiting_on_a_race_whose_submit_was_cut_short_is_refused() {
    let h = Harness::new();
    checked_project(&h);
    let (race, _) = sh_race(&h, &["--best-of", "2"], "echo answer=42 > answer.txt");
    let record = h
        .home
        .join(format!(".local/share/cuekit/races/{race}.json"));
    let mut value: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    value["complete"] = Value::Bool(false);
    value["candidates"] = Value::Array(Vec::new());
    std::fs::write(&record, serde_json::to_vec(&value).unwrap()).unwrap();
    let (out, code) = h.json(&["wait", &race, "--timeout", "10s"]);
    assert_eq!(code, 5, "{out}");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not wholly submitted"),
        "{out}"
    );
}

/// A `submit --best-of 3` killed while it makes its candidates (here by a `git` that kills it at
/// its second `worktree add`): the next listing completes the race with the candidates that
/// were registered, and `wait` decides it as any race; with none registered the race is
/// forgotten. Never a race that can never be decided.
#[test]
fn a_race_whose_submit_was_killed_is_finished_with_its_registered_candidates_or_forgotten() {
    let h = Harness::new();
    checked_project(&h);
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .unwrap();
    let bin = h.root().join("killer-git");
    std::fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join("git"),
        &format!(
            "#!/bin/sh\ncase \" $* \" in\n  *\" worktree add \"*)\n    mkdir \"{0}/first\" 2>/dev/null || {{ kill -9 $PPID; exit 137; }} ;;\nesac\nexec {1} \"$@\"\n",
            bin.display(),
            real.display()
        ),
    );
    let mut args = vec!["submit"];
    args.extend(crate::harness::sh_task(
        "echo answer=42 > answer.txt",
        &[
            "--best-of",
            "3",
            "--mode",
            "batch",
            "--check",
            "sh tests/check.sh",
        ],
    ));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let killed = h.cuekit().args(&args).env("PATH", &path).output().unwrap();
    assert_eq!(
        killed.status.code(),
        None,
        "the submit was not killed: {killed:?}"
    );
    let races = h.home.join(".local/share/cuekit/races");
    let race = std::fs::read_dir(&races)
        .unwrap()
        .flatten()
        .find_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json").map(str::to_string)
        })
        .expect("the killed submit recorded its race");
    let (listed, code) = h.json(&["list"]);
    assert_eq!(code, 0, "{listed}");
    let (waited, code) = h.json(&["wait", &race, "--timeout", "60s"]);
    if races.join(format!("{race}.json")).exists() {
        assert_eq!(code, 0, "{waited}");
        let (result, _) = h.json(&["result", &race]);
        assert_eq!(result["state"], "decided", "{result}");
    } else {
        assert_eq!(code, 4, "a forgotten race is unknown: {waited}");
    }
    assert!(
        !races
            .join("submitting")
            .join(format!("{race}.json"))
            .exists()
    );
}

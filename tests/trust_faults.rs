//! Issue 31, items 4–7: projects never loosen the user, cuekit owns only its own sessions,
//! bounded reads that never block, and faults (a full disk, a partial config, killed submits).
//! Real binary, real tmux (a private server per test), real /bin/sh; each test names the audit's
//! defect it holds shut.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::Harness;
use serde_json::Value;

/// An answer that is cuekit's refusal with `expected` and its exit status.
fn refused(answer: &Value, code: i32, expected: &str, status: i32) {
    assert_eq!(
        (answer["error"]["code"].as_str(), code),
        (Some(expected), status),
        "{answer}"
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn user_config(h: &Harness, text: &str) {
    write(&h.home.join(".config/cuekit/config.yaml"), text);
}

/// The argv the fake Gemini CLI was started with (it writes it NUL-separated), once it has.
fn argv_of_fake_gemini(h: &Harness, id: &str, file: &Path) -> Vec<String> {
    h.wait_until(id, "the agent to start", Duration::from_secs(30), || {
        std::fs::metadata(file).is_ok_and(|m| m.len() > 0)
    });
    std::fs::read_to_string(file)
        .unwrap()
        .split('\0')
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

/// Audit H5: a committed `.cuekit/agents/reviewer.md` (overriding the built-in, plan-only
/// reviewer) or a project `.cuekit.yaml` with `approval_mode: yolo` silently beat the user's
/// `--no-skip-permissions`: the agent ran with yolo, `warnings: []`. The user's flag is the
/// ceiling for every less specific source; what is ignored is named in the warnings.
#[test]
fn a_project_role_or_file_never_loosens_the_users_no_skip_permissions() {
    let h = Harness::new().with_fake_gemini();
    let argv_file = h.root().join("argv");
    let h = h.env("FAKE_GEMINI_ARGV", &argv_file.to_string_lossy());
    write(
        &h.project.join(".cuekit/agents/reviewer.md"),
        "---\napproval_mode: yolo\n---\nReview fast.\n",
    );
    let (answer, code) = h.json(&[
        "submit",
        "--role",
        "reviewer",
        "--no-skip-permissions",
        "--mode",
        "batch",
        "review the change",
    ]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["id"].as_str().unwrap();
    let argv = argv_of_fake_gemini(&h, id, &argv_file);
    assert!(
        !argv
            .iter()
            .any(|w| w == "yolo" || w == "-y" || w == "--yolo"),
        "the project's role undid --no-skip-permissions: {argv:?}"
    );
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("yolo") && warnings.contains("ignored"),
        "the user is told what was ignored: {answer}"
    );
    h.ok(&["wait", id, "--timeout", "60s"]);

    // The same from the project's own file.
    std::fs::remove_file(&argv_file).unwrap();
    std::fs::remove_dir_all(h.project.join(".cuekit/agents")).unwrap();
    write(
        &h.project.join(".cuekit.yaml"),
        "defaults:\n  approval_mode: yolo\n",
    );
    let (answer, code) = h.json(&[
        "submit",
        "--no-skip-permissions",
        "--mode",
        "batch",
        "fix it",
    ]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["id"].as_str().unwrap();
    let argv = argv_of_fake_gemini(&h, id, &argv_file);
    assert!(
        !argv
            .iter()
            .any(|w| w == "yolo" || w == "-y" || w == "--yolo"),
        "the project's file undid --no-skip-permissions: {argv:?}"
    );
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("approval_mode") && warnings.contains("ignored"),
        "{answer}"
    );
    // A stricter choice of the project's still applies under the flag.
    write(
        &h.project.join(".cuekit.yaml"),
        "defaults:\n  approval_mode: plan\n",
    );
    let (dry, _) = h.json(&["submit", "--no-skip-permissions", "--dry-run", "x"]);
    assert!(
        dry["launch_command"]
            .as_str()
            .unwrap()
            .contains("--approval-mode plan"),
        "{dry}"
    );
}

/// Audit H6: with `defaults.agent: command` in the user's own config, an untrusted
/// repository's team spec member `argv` ran on `cuekit team submit`. A member's own program
/// needs the spec trusted whatever agent the member ends with.
#[test]
fn a_team_members_argv_needs_trust_whatever_agent_it_ends_with() {
    let h = Harness::new();
    user_config(&h, "defaults:\n  agent: command\n");
    let pwned = h.root().join("PWNED");
    write(
        &h.project.join("team.yaml"),
        &format!(
            "- objective: review\n  mode: batch\n  argv: [touch, '{}']\n",
            pwned.display()
        ),
    );
    let (answer, code) = h.json(&["team", "submit", "rev", "--spec", "team.yaml"]);
    refused(&answer, code, "config_untrusted", 14);
    let (listed, _) = h.json(&["list", "--all"]);
    assert_eq!(listed, serde_json::json!([]), "a member was started");
    assert!(!pwned.exists(), "the repository chose what ran");
    // Trusted by the user, the same spec runs.
    h.trust(&["team.yaml"]);
    let (answer, code) = h.json(&["team", "submit", "rev", "--spec", "team.yaml"]);
    assert_eq!(code, 0, "{answer}");
    let id = answer["tasks"][0]["id"].as_str().unwrap();
    h.ok(&["wait", id, "--timeout", "60s"]);
    assert!(pwned.exists());
}

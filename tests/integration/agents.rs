//! Every adapter through the real runtime (tmux, /bin/sh, transcript, sentinel, steering): a
//! stand-in for each CLI that parses argv as the real one does (tests/fixtures/fake-agent).

use crate::harness::limits;

use crate::harness::Harness;
use crate::harness::sh_task;

/// The CLIs that cannot run here, by agent kind and binary name.
const AGENTS: [(&str, &str); 6] = [
    ("claude-code", "claude"),
    ("codex", "codex"),
    ("opencode", "opencode"),
    ("pi", "pi"),
    ("qwen", "qwen"),
    ("copilot", "copilot"),
];

fn with_fake(binary: &str) -> Harness {
    let h = Harness::new();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agent");
    crate::harness::install_executable(&fixture, &h.bin.join(binary));
    h
}

#[test]
fn every_agent_runs_a_batch_task_with_a_hostile_prompt_intact() {
    let prompt = "-v keeps 'quotes', \"double\", $(subshells) and spaces";
    for (kind, binary) in AGENTS {
        let h = with_fake(binary);
        let id = h.submit(&["--agent", kind, "--mode", "batch", "--", prompt]);
        let (waited, code) = h.json(&["wait", &id, "--timeout", "20s"]);
        assert_eq!(code, 0, "{kind}: {waited}\n{}", h.transcript(&id));
        let logs = h.ok(&["logs", &id]);
        assert!(
            logs.contains(&format!("reply to: {prompt}")),
            "{kind}: the prompt arrived changed:\n{logs}"
        );
        let status = h.status(&id);
        assert_eq!(status["capabilities"]["supports_steering"], false, "{kind}");
        let (error, code) = h.json(&["steer", &id, "more"]);
        assert_eq!(
            (error["error"]["code"].as_str(), code),
            (Some("steering_unsupported"), 6),
            "{kind}"
        );
    }
}

#[test]
fn every_agent_runs_interactively_takes_a_steer_and_quits() {
    for (kind, binary) in AGENTS {
        let h = with_fake(binary);
        let id = h.submit(&["--agent", kind, "first question"]);
        h.wait_until(&id, "the first reply", limits::SHORT, || {
            h.screen(&id).contains("Type your message")
                && h.transcript(&id)
                    .contains(&format!("FAKE-{binary} mode=interactive"))
        });
        let (receipt, code) = h.json(&["steer", &id, "--", "-second, with 'quotes'"]);
        assert_eq!(
            (receipt["receipt"].as_str(), code),
            (Some("submitted"), 0),
            "{kind}: {receipt}"
        );
        h.wait_until(&id, "the steered reply", limits::SHORT, || {
            h.ok(&["logs", &id])
                .contains("reply to: -second, with 'quotes'")
        });
        h.ok(&["steer", &id, "/quit"]);
        let (waited, code) = h.json(&[
            "wait",
            &id,
            "--until",
            "ended",
            "--timeout",
            &limits::arg(limits::SHORT),
        ]);
        assert_eq!(code, 0, "{kind}: {waited}");
    }
}

#[test]
fn without_the_bypass_the_flags_stay_out_and_the_adapters_say_so() {
    let h = Harness::new();
    let cases = [
        (
            "claude-code",
            "DISABLE_AUTOUPDATER=1 claude -p -- 'x' </dev/null",
        ),
        (
            "codex",
            "codex exec --skip-git-repo-check -- 'x' </dev/null",
        ),
        (
            "opencode",
            "OPENCODE_DISABLE_AUTOUPDATE=1 opencode run < \"$cuekit_prompt\"",
        ),
        ("pi", "pi -p < \"$cuekit_prompt\""),
        ("qwen", "NO_UPDATE_NOTIFIER=1 qwen --prompt='x' </dev/null"),
        (
            "copilot",
            "COPILOT_AUTO_UPDATE=false copilot --prompt='x' </dev/null",
        ),
        (
            "antigravity",
            "AGY_CLI_DISABLE_AUTO_UPDATE=true agy --add-dir=\"$(pwd -P)\" --output-format stream-json --print-timeout=2562047h --disable-slash-commands -p='x' </dev/null",
        ),
    ];
    for (kind, expected) in cases {
        let (dry, _) = h.json(&[
            "submit",
            "--dry-run",
            "--agent",
            kind,
            "--mode",
            "batch",
            "--no-skip-permissions",
            "x",
        ]);
        assert_eq!(dry["launch_command"], expected, "{kind}");
    }
    let (dry, _) = h.json(&[
        "submit",
        "--dry-run",
        "--agent",
        "pi",
        "--no-skip-permissions",
        "x",
    ]);
    assert!(
        dry["warnings"][0]
            .as_str()
            .unwrap()
            .contains("no permission prompts")
    );
    let (adapters, _) = h.json(&["adapters"]);
    let kinds: Vec<&str> = adapters
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "gemini",
            "claude-code",
            "codex",
            "opencode",
            "pi",
            "jcode",
            "qwen",
            "copilot",
            "antigravity",
            "command"
        ]
    );
}

#[test]
fn the_fakes_reject_what_the_real_clis_reject() {
    // Guards the stand-ins themselves: the unsafe forms the adapters avoid really fail.
    for (binary, args, expect_help) in [
        ("claude", &["-p", "-hello"][..], false),
        ("codex", &["exec", "-hello"][..], true),
        ("pi", &["-p", "--", "-hello"][..], false),
        ("qwen", &["-hello"][..], true),
        ("copilot", &["-p", "-hello"][..], false),
    ] {
        let fake = with_fake(binary);
        let output = std::process::Command::new(fake.bin.join(binary))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        if expect_help {
            assert!(
                stdout.starts_with("Usage:") && output.status.success(),
                "{binary} {args:?}"
            );
        } else {
            assert!(!output.status.success(), "{binary} {args:?} should fail");
        }
    }
}

#[test]
fn any_command_runs_with_the_same_runtime() {
    let h = Harness::new();
    let mut args = sh_task("echo \"it's $0\"; exit 3", &["--mode", "batch"]);
    args.push("me");
    let id = h.submit(&args);
    let (_, code) = h.json(&["wait", &id, "--timeout", "10s"]);
    assert_eq!(code, 20);
    let status = h.status(&id);
    assert_eq!(
        (status["exit_code"].as_i64(), status["reason"].as_str()),
        (Some(3), Some("nonzero_exit"))
    );
    assert!(h.transcript(&id).contains("it's me"));
    // Interactive: a program reading the terminal is steered like an agent.
    let id = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        "printf 'ready\\n> '; read line; echo \"got $line\"",
    ]);
    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("ready")
    });
    let (receipt, _) = h.json(&["steer", &id, "hello there"]);
    assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    let (_, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::SHORT)]);
    assert_eq!(code, 0);
    assert!(h.ok(&["logs", &id]).contains("got hello there"));
    let (error, code) = h.json(&[
        "submit",
        "--agent",
        "command",
        "--mode",
        "batch",
        "--file",
        "/dev/null",
    ]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_input"), 3)
    );
}

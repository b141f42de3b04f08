//! Real agent CLIs that start offline without credentials (installed by scripts/test): cuekit
//! must see that they wait on a login screen rather than report them running forever.

use crate::harness::limits;

use crate::harness::{Harness, installed_tool, poll};

#[test]
fn a_real_cli_on_its_login_screen_is_input_required_and_blocks_steering() {
    for (kind, binary) in [("qwen", "qwen"), ("codex", "codex")] {
        let h = Harness::new();
        std::os::unix::fs::symlink(installed_tool(binary), h.bin.join(binary)).unwrap();
        let id = h.submit(&["--agent", kind, "hello"]);
        let waited = h.wait_input_required(&id, limits::AGENT);
        // Codex draws its prompt for a moment before it finds there is no login (longer on a
        // loaded machine): that look is `idle_at_prompt`; the login screen follows.
        let mut task = waited;
        poll(limits::AGENT, || {
            task = h.status(&id);
            task["reason"] == "auth_required"
        });
        assert_eq!(
            (task["status"].as_str(), task["reason"].as_str()),
            (Some("input_required"), Some("auth_required")),
            "{kind}:\n{}",
            h.screen(&id)
        );
        let (receipt, code) = h.json(&["steer", &id, "1"]);
        assert_eq!(
            (receipt["receipt"].as_str(), code),
            (Some("blocked"), 23),
            "{kind}: {receipt}"
        );
        let (cancelled, _) = h.json(&["cancel", &id]);
        assert_eq!(cancelled[0]["status"], "cancelled");
    }
}

//! The session id cuekit chooses for an agent, in the agent's own form. cuekit names a child's
//! session after its task, so it knows where the agent keeps its session record without asking
//! it; Gemini takes any word, but Claude Code and Qwen Code take only a UUID (`--session-id`:
//! Claude Code 2.1.185 "Invalid session ID. Must be a valid UUID."; Qwen Code 0.15.10 accepts
//! versions 1 to 5 only), and both refuse an id already used ("Session ID … is already in
//! use"): a task's attempt that starts over needs a name of its own.

use sha2::{Digest, Sha256};

/// The agents whose `--session-id` takes a UUID.
const TAKES_A_UUID: [&str; 2] = ["claude-code", "qwen"];

/// The session id agent `kind` is given for `chosen` (a task id, or a task id and its
/// attempt, `t_…-2`): the word itself, or for an agent that takes only a UUID, a UUID made
/// from it ([`session_uuid`]).
pub fn session_name(kind: &str, chosen: &str) -> String {
    if TAKES_A_UUID.contains(&kind) && !is_uuid(chosen) {
        session_uuid(chosen)
    } else {
        chosen.to_string()
    }
}

/// The name of attempt `attempt` (2, 3, …) of task `task_id`'s session, before
/// [`session_name`].
pub fn attempt_session(task_id: &str, attempt: usize) -> String {
    format!("{task_id}-{attempt}")
}

/// The session id an attempt of a task that starts a new session (a retry starting over, a
/// failover or hand-off) gives agent `kind`: for an agent that refuses an id already used (one
/// that takes only a UUID), the attempt's own; for the others the task id, as its first.
pub fn new_attempt_session(kind: &str, task_id: &str, attempt: usize) -> String {
    if TAKES_A_UUID.contains(&kind) {
        session_name(kind, &attempt_session(task_id, attempt))
    } else {
        task_id.to_string()
    }
}

/// A UUID made from `chosen`: version 4's shape (the versions both CLIs accept) with its bits
/// from SHA-256 of the name, so the same name gives the same UUID and the task's id stays
/// readable in it: the last group is the 12 digits of the task id it starts with
/// (`t_0123456789ab` → `…-0123456789ab`), which `ls` finds.
pub fn session_uuid(chosen: &str) -> String {
    let hash = Sha256::digest(format!("cuekit session {chosen}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hash[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let tail = chosen
        .strip_prefix("t_")
        .and_then(|rest| rest.get(..12))
        .filter(|digits| {
            digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
        .unwrap_or(&hex[20..32]);
    format!(
        "{}-{}-{}-{}-{tail}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20]
    )
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(word: &str) -> bool {
    let groups: Vec<&str> = word.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_made_for_the_agents_that_take_only_one() {
        let first = session_name("claude-code", "t_0123456789ab");
        assert!(is_uuid(&first), "{first}");
        assert!(first.ends_with("-0123456789ab"), "{first}");
        assert_eq!(&first[14..15], "4", "version 4's shape: {first}");
        assert!("89ab".contains(&first[19..20]), "the variant: {first}");
        assert_eq!(
            first,
            session_name("qwen", "t_0123456789ab"),
            "the same name"
        );
        let second = session_name("claude-code", &attempt_session("t_0123456789ab", 2));
        assert_ne!(first, second, "an attempt that starts over has its own");
        assert!(second.ends_with("-0123456789ab"), "{second}");
        assert_eq!(session_name("gemini", "t_0123456789ab"), "t_0123456789ab");
        let given = "0b5e2c1a-49c0-4d49-8a49-0123456789ab";
        assert_eq!(session_name("claude-code", given), given);
        assert!(is_uuid(&session_uuid("not a task")));
        assert_eq!(
            new_attempt_session("claude-code", "t_0123456789ab", 2),
            second
        );
        assert_eq!(
            new_attempt_session("gemini", "t_0123456789ab", 2),
            "t_0123456789ab"
        );
    }
}

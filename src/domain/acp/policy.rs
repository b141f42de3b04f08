//! Which of an agent's permission requests cuekit answers by itself. ACP names a tool call's
//! kind; the user's policy says, per kind, allow, ask (the parent answers) or reject. The
//! policy is tighten-only for a project file and an MCP argument: the order of [`Decision`]
//! is strictness, as `config::class::within` expects.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// ACP's tool kinds (`ToolKind` in the protocol's schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

impl ToolKind {
    pub const ALL: [ToolKind; 10] = [
        ToolKind::Read,
        ToolKind::Edit,
        ToolKind::Delete,
        ToolKind::Move,
        ToolKind::Search,
        ToolKind::Execute,
        ToolKind::Think,
        ToolKind::Fetch,
        ToolKind::SwitchMode,
        ToolKind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::SwitchMode => "switch_mode",
            ToolKind::Other => "other",
        }
    }

    /// A kind as the protocol spells it; one this version does not know is `other`.
    pub fn parse(text: &str) -> ToolKind {
        ToolKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .unwrap_or(ToolKind::Other)
    }
}

/// What cuekit does with a request of one kind. Ordered by strictness: reject is stricter than
/// ask, ask than allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Reject,
    Ask,
    Allow,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Reject => "reject",
            Decision::Ask => "ask",
            Decision::Allow => "allow",
        }
    }

    pub fn parse(text: &str) -> Option<Decision> {
        [Decision::Reject, Decision::Ask, Decision::Allow]
            .into_iter()
            .find(|decision| decision.as_str() == text)
    }
}

/// An ACP task's own settings, part of its spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpSpec {
    /// End after the first turn that ends with `end_turn` (the agent's stdin is closed).
    #[serde(default)]
    pub once: bool,
    /// What cuekit answers by itself when the bypass is off; a kind not named asks.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub permissions: BTreeMap<ToolKind, Decision>,
    /// Load the resumed session no earlier than this (seconds since the epoch): see
    /// `AcpLaunch::load_overwrites_same_minute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_not_before: Option<u64>,
}

/// How the client answers a request: the bypass allows everything once (and records it); else
/// the policy's decision for the tool's kind, `ask` where it names none.
pub fn decide(bypass: bool, policy: &BTreeMap<ToolKind, Decision>, kind: ToolKind) -> Decision {
    if bypass {
        return Decision::Allow;
    }
    policy.get(&kind).copied().unwrap_or(Decision::Ask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bypass_allows_and_the_policy_decides_per_kind() {
        let policy = BTreeMap::from([
            (ToolKind::Read, Decision::Allow),
            (ToolKind::Execute, Decision::Reject),
        ]);
        assert_eq!(decide(true, &policy, ToolKind::Execute), Decision::Allow);
        assert_eq!(decide(false, &policy, ToolKind::Read), Decision::Allow);
        assert_eq!(decide(false, &policy, ToolKind::Execute), Decision::Reject);
        assert_eq!(decide(false, &policy, ToolKind::Edit), Decision::Ask);
        assert!(Decision::Reject < Decision::Ask && Decision::Ask < Decision::Allow);
        assert_eq!(ToolKind::parse("switch_mode"), ToolKind::SwitchMode);
        assert_eq!(ToolKind::parse("teleport"), ToolKind::Other);
    }
}

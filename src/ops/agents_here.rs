//! Which agents this machine can start: each adapter's program looked up on PATH, for a face
//! that offers a choice of agent (the web page's new-task form).

/// One agent, whether its program is on PATH, and how to install it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentHere {
    pub kind: &'static str,
    pub installed: bool,
    pub install_hint: &'static str,
}

/// Every agent, the installed ones first (each group in the adapters' order).
pub fn agents_here() -> Vec<AgentHere> {
    let mut agents: Vec<AgentHere> = crate::domain::adapter::ADAPTERS
        .iter()
        .map(|adapter| AgentHere {
            kind: adapter.kind(),
            // The command agent runs the task's own program: nothing to install.
            installed: adapter.kind() == "command"
                || crate::effects::which::find_on_path(adapter.default_bin).is_some(),
            install_hint: adapter.install_hint,
        })
        .collect();
    agents.sort_by_key(|agent| !agent.installed);
    agents
}

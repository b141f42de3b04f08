//! The Agent Client Protocol (JSON-RPC 2.0, one message a line, over an agent's stdio), with
//! cuekit as the client. The client runs in the task's pane (`cuekit __acp`): it starts the
//! agent, renders the session readably for whoever attaches, answers or holds permission
//! requests, and takes steering over a control socket.
//!
//! - [`policy`]: tool kinds and what cuekit answers by itself (pure);

pub mod policy;

//! The Agent Client Protocol (JSON-RPC 2.0, one message a line, over an agent's stdio), with
//! cuekit as the client. The client runs in the task's pane (`cuekit __acp`): it starts the
//! agent, renders the session readably for whoever attaches, answers or holds permission
//! requests, and takes steering over a control socket.
//!
//! - [`protocol`]: the wire — JSON-RPC lines, and the ACP shapes cuekit reads (pure);
//! - [`policy`]: tool kinds and what cuekit answers by itself (pure);
//! - [`session`]: the client's state and rules — what arrives becomes what to do (pure);
//! - [`render`]: the session as readable text for the pane (pure);
//! - [`outcome`]: the session as `result.json` (pure);
//! - [`control`]: the control socket — its place, its requests and replies, a caller's side;
//! - [`client`]: the client process, the only effects here.

pub mod client;
pub mod control;
pub mod outcome;
pub mod policy;
pub mod protocol;
pub mod render;
pub mod session;

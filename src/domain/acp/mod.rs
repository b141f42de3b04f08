//! The Agent Client Protocol (JSON-RPC 2.0, one message a line, over an agent's stdio), with
//! cuekit as the client, as rules: the client process that applies them is
//! [`crate::effects::acp`].
//!
//! - [`control`]: the messages of the control socket;
//! - [`protocol`]: the wire — JSON-RPC lines, and the ACP shapes cuekit reads;
//! - [`policy`]: tool kinds and what cuekit answers by itself;
//! - [`session`]: the client's state and rules — what arrives becomes what to do;
//! - [`render`]: the session as readable text for the pane.

pub mod control;
pub mod policy;
pub mod protocol;
pub mod render;
pub mod session;

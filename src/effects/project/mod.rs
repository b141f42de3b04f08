//! Project data: the one door. A project is a folder that anyone who can write the repository
//! may have filled — the people behind a cloned repository, a child agent working in it. Every
//! file cuekit reads from one (`.cuekit.yaml`, role profiles, team specs, `.worktreeinclude`,
//! `.gitmodules`, task records) is read here and leaves as a typed value:
//! - [`files`]: a file is opened, then the file actually opened is proven to lie inside the
//!   folder it was looked for in (no `..`, no link out), to be a regular file of this user's,
//!   and to be of a bounded size; a path cuekit is about to write under is proven free of links;
//! - [`names`]: a name that becomes a word of a command line or part of a git config key is
//!   checked against a strict shape;
//! - [`gitmodules`]: a worktree's submodules, parsed by git from proven bytes, each name and
//!   path checked before any git command sees them.
//!
//! Which config keys a project file may set, and how, is decided once too:
//! [`crate::effects::config::class`]. No other module opens a project file (`tests/integration/structure.rs`
//! keeps it so).

pub mod agent_files;
pub mod files;
pub mod gitmodules;
pub mod left;
pub mod names;
pub mod session_record;

pub use files::Root;

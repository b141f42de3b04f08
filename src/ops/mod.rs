//! The library operations every front end (CLI, MCP) calls. No logic lives only in a front
//! end: they parse, call one of these, and render the result.
//!
//! `task` finds tasks and holds the trust boundary; `judge` is the one place that judges them
//! and records their endings; the other operations build on those two, never the reverse.
//! Each operation on task ids asks `route` first where they are, and takes a host's to
//! `remote`: a front end calls the same operation for a task here or on a host.

mod acp;
mod agents_here;
mod attach;
pub(crate) mod background;
mod board;
mod cancel;
pub(crate) mod check;
mod config_view;
mod dialog;
mod digest;
pub mod doctor;
mod events;
mod handoff;
mod init;
mod judge;
mod list;
mod logs;
mod mute;
pub mod parent_setup;
mod race;
mod reap;
mod remote;
mod remove;
mod report;
mod result;
mod sandbox;
mod schedule;
mod steer;
mod submit;
mod task;
mod team;
mod trust;
mod wait;
pub mod web_access;
mod work;

pub use crate::domain::report::ReportRequest;
pub use crate::effects::config::{Entry as ConfigEntry, Source as ConfigSource};
pub use crate::effects::process::DEFAULT_GRACE;
pub use crate::effects::spawn::page;
pub use acp::{Approval, approve, approve_by};
pub use agents_here::{AgentHere, agents_here};
pub use attach::{AttachEnd, attach, attach_and_return, attach_opens_popup};
pub use background::monitor::run_monitor;
pub(crate) use background::monitor_lock::is_stopping as stop_in_progress;
pub use background::scheduler::run_scheduler;
pub use background::stopper::run_stopper;
pub use background::stream::run_event_filter;
pub use board::{Board, BoardRow, Preview, attention_order, board, host_board};
pub use cancel::cancel;
pub use check::{CheckOutcome, check_from_launch, check_now};
pub use config_view::config_entries;
pub use dialog::DialogAnswer;
pub use digest::{DigestReport, digest, send_now as send_digest, since as digest_since};
pub use events::{EventScope, events, next_events};
pub use handoff::{HandoffRequest, handoff, next_attempt_runs_unguarded};
pub use init::{InitOutcome, init};
pub use judge::ScreenCache;
pub use list::{list, status};
pub use logs::{follow_logs, read_logs, tail_logs, tail_screen};
pub use mute::mute;
pub use race::{
    CandidatesDiff, MAX_CANDIDATES, RaceRequest, RaceResult, RaceSubmitted, diff_candidates,
    merge_race, race_result, submit_race,
};
pub use reap::reap_orphans;
pub use remote::{HostError, HostReport, Installed, host_install, hosts};
pub use remove::{PruneFilter, Removal, RemovalOutcome, prune, remove};
pub use report::dropped::drop_report;
pub use report::report;
pub use result::outcome::{RESULT_FILE, TaskResult, written_final_text};
pub use result::result;
pub(crate) use sandbox::scope as sandbox_scope;
pub use sandbox::{
    SandboxRequest, network_stack, probe as probe_sandbox, probe_stack, run_net, run_scoped,
};
pub use schedule::{QueueSummary, Scheduling, parse_fallback, queue_summary, retry, start_due};
pub use steer::{SessionControl, SteerReceipt, steer, steer_control};
pub use submit::{Asker, CheckRequest, SubmitOutcome, SubmitRequest, runs_unguarded, submit};
pub use task::route::finishes_without_caller;
pub use task::{task_of_process, task_pane_leader};
pub use team::{
    TeamResult, TeamSubmitted, TeamSummary, team_ids, team_list, team_result, team_status,
    team_steer, team_submit,
};
pub use trust::{TrustPreview, trust, trust_by_person};
pub use work::conflicts::{Conflict, Conflicts, conflicts};
pub use work::diff::{TaskDiff, diff, review_by_names};
pub use work::merge::{merge, merge_unchecked, merged_into};
// The types an operation takes or answers with, defined where they are kept.
pub use crate::effects::git::cleanup::KeepReason;
pub use crate::effects::git::diff::FileDiff as DiffFile;
pub use crate::effects::git::inventory::Holder as KeptIn;
pub use crate::effects::git::merge::Strategy as MergeStrategy;
pub use crate::effects::store::transitions::TransitionEvent;
pub use crate::effects::store::{Budget, project_tasks_root};
pub use team::read_team_spec;

/// `cuekit roles`: every role the project, the user and cuekit define, broken ones with why.
pub fn roles(cwd: &Path) -> crate::domain::error::Result<Vec<ListedRole>> {
    crate::effects::role::Roles::for_cwd(cwd).all()
}
pub use crate::effects::role::Listed as ListedRole;

/// `cuekit __acp`: the ACP client a task's pane runs (a worker: no face but its launch line).
pub mod acp_client {
    pub use crate::effects::acp::client::{Options, run};
}
pub use task::view::{CheckView, QueueView, TaskView};
pub use wait::{WaitNews, WaitOutcome, WaitRequest, WaitTick, WaitUntil, wait, wait_watching};

use std::path::Path;

use crate::effects::store::TaskRecord;

/// Every registered task's id and objective, newest first, read from the records alone (no
/// tmux): what shell completion offers. Only tasks the registry vouches for.
pub fn known_tasks() -> Vec<(String, String)> {
    let mut records: Vec<TaskRecord> = task::scan_registry()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|found| match found {
            task::Found::Trusted(task) => Some(task.record),
            _ => None,
        })
        .collect();
    records.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    records
        .into_iter()
        .map(|record| (record.id, record.spec.objective))
        .collect()
}

//! The rules that turn a task record, one pane snapshot and the exit-code sentinel into a
//! status. Pure: no I/O, so every rule is unit-tested.

use std::time::SystemTime;

use crate::domain::adapter::Adapter;
use crate::domain::pane::PaneInfo;
use crate::domain::spec::Mode;
pub use crate::domain::task::Status;
use crate::domain::task::TaskRecord;

/// How a task ended, ready to be written into its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub status: Status,
    pub reason: Option<String>,
    pub hint: Option<String>,
    pub exit_code: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to record; the task is running or its record already holds the end.
    Unchanged,
    Ended(Ending),
    /// The task outlived its `--timeout`: it must be killed and recorded as timed out.
    TimeoutDue,
    /// tmux does not show the task's pane ("no server", "no such session"), but the pane's
    /// first process still runs: its server's socket was deleted or taken by another server.
    /// Nothing to record.
    Unseen,
}

/// What was seen of a task, in this order: the pane snapshot first, then the sentinel. The
/// task's exit status is tmux's (`pane_dead_status` of the very pane cuekit recorded at start,
/// its first process the recorded one: a `respawn-pane` makes another), else the kernel's (the
/// unreaped first process), else, for a sandboxed task, bubblewrap's (its status file, out of the
/// sandbox's reach). The sentinel lies in the task directory, which an unsandboxed child can
/// write: it can only make an ending worse (a non-zero code where none is trusted), never
/// `completed`.
pub struct Observation<'a> {
    pub pane: Option<&'a PaneInfo>,
    /// The pane shown is the one recorded at start, its first process the recorded leader: only
    /// then is its dead status the task's.
    pub pane_proven: bool,
    pub sentinel: Option<i32>,
    pub now: SystemTime,
    /// For a task with an event stream whose agent exited 0: what the stream reported.
    pub stream: Option<StreamReport>,
    /// `launch.sh` left its setup-failed marker: `worktree.setup` failed, the agent never ran.
    pub setup_failed: bool,
    /// The task runs in a bubblewrap sandbox whose status never got the agent's exit code:
    /// the sandbox could not be made (or bubblewrap died), the agent never ran to its end.
    pub sandbox_failed: bool,
    /// For a task in a bubblewrap sandbox: the agent's exit code as bubblewrap wrote it.
    pub sandbox_exit: Option<i32>,
    /// The pane's first process, as recorded at start, still runs (read in /proc when tmux
    /// does not show the pane, or shows it dead without a status).
    pub leader_alive: bool,
    /// The exit status of the pane's first process read off its zombie in /proc, for a pane
    /// tmux shows dead before it collected that status (it marks a pane dead when its terminal
    /// closes, and may see the child's exit later, or miss it).
    pub unreaped_exit: Option<i32>,
}

/// How an event stream ended, as its `result` event told (or did not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamReport {
    Succeeded,
    Failed(String),
    /// No `result` event: the run was cut short, whatever the exit code says.
    Unfinished,
}

/// The task's exit status, if it has one it did not choose itself. Nothing of it counts while
/// the pane's first process runs (its pane alive, or gone with that process running on). Then
/// the word is tmux's (the recorded pane's `pane_dead_status`), the kernel's (the unreaped
/// process's status) or, for a sandboxed task, bubblewrap's; with none of them, a non-zero
/// sentinel is believed (it can only make the ending worse), a sentinel of 0 never is: the task
/// is then `pane_disappeared`.
pub fn exit_status(seen: &Observation) -> Option<i32> {
    let trusted = match seen.pane {
        Some(pane) if !pane.dead => return None,
        Some(pane) => pane
            .dead_status
            .filter(|_| seen.pane_proven)
            .or(seen.unreaped_exit),
        None if seen.leader_alive => return None,
        None => None,
    };
    trusted
        .or(seen.sandbox_exit)
        .or(seen.sentinel.filter(|&code| code != 0))
}

/// What a `check_failed` ending says: the rounds, the failing command and where its output is.
fn check_failed_hint(record: &TaskRecord, check: &crate::domain::check::CheckState) -> String {
    use crate::domain::check::Phase;
    let Some(last) = check
        .verdicts
        .last()
        .filter(|_| check.phase == Phase::Failed)
    else {
        return "the child exited before its check passed; `cuekit check <id>` runs it on the \
                work it left"
            .to_string();
    };
    let result = match (last.timed_out, last.exit_code, &last.error) {
        (false, Some(0), Some(error)) => format!("exit code 0, not counted: {error}"),
        (_, _, Some(error)) => format!("could not run: {error}"),
        (true, ..) => "ran past its time limit".to_string(),
        (_, Some(code), _) => format!("exit code {code}"),
        _ => "killed by a signal".to_string(),
    };
    format!(
        "the check failed in round {} of {} (`{}`: {result}) after {} fix round(s); its output is \
         in {}; `cuekit check {}` runs it again",
        last.round,
        check.rounds + 1,
        last.command,
        check.fix_rounds,
        last.log,
        record.id
    )
}

/// The ending of a checked task whose launch exited with `code`, when its check decides it.
/// The verdict is the registry's (written by cuekit's check alone); the exit only says the
/// launch ended on it. A checked task completes only on a pass: a failed verdict, or an exit of
/// 0 before any pass (an interactive child that quit on its own), is `check_failed`. Asked
/// again of the record read under its lock when the ending is written: a verdict recorded
/// after the look that saw the exit still decides.
pub fn check_ending(record: &TaskRecord, code: i32) -> Option<Ending> {
    use crate::domain::check::Phase;
    let check = record.check.as_ref().filter(|check| {
        check.phase == Phase::Failed || (code == 0 && check.phase != Phase::Passed)
    })?;
    Some(Ending {
        status: Status::Failed,
        reason: Some("check_failed".to_string()),
        hint: Some(check_failed_hint(record, check)),
        exit_code: Some(code),
    })
}

pub fn judge(record: &TaskRecord, adapter: &Adapter, seen: &Observation) -> Verdict {
    // A queued task has no pane to judge yet (a gated one its scheduler is starting at most).
    if record.status != Status::Running {
        return Verdict::Unchanged;
    }
    if let Some(code) = exit_status(seen) {
        let failed = |reason: &str, hint: String| Ending {
            status: Status::Failed,
            reason: Some(reason.to_string()),
            hint: Some(hint),
            exit_code: Some(code),
        };
        if seen.sandbox_failed {
            return Verdict::Ended(failed(
                "sandbox_failed",
                format!(
                    "bubblewrap exited with status {code} before the agent started: its message is in \
                     the transcript (`cuekit logs <id>`); `cuekit doctor` checks the sandbox"
                ),
            ));
        }
        if seen.setup_failed {
            return Verdict::Ended(failed(
                "worktree_setup_failed",
                format!(
                    "worktree.setup exited with status {code} and the agent was not started; \
                     its output is in the transcript (`cuekit logs <id>`)"
                ),
            ));
        }
        if let Some(ending) = check_ending(record, code) {
            return Verdict::Ended(ending);
        }
        return Verdict::Ended(match (&seen.stream, code) {
            (Some(StreamReport::Failed(message)), 0) => failed("agent_error", message.clone()),
            (Some(StreamReport::Unfinished), 0) => failed(
                "no_result_event",
                "the agent exited 0 without reporting the end of its run (killed or crashed?)"
                    .to_string(),
            ),
            _ => ending_for_exit(adapter, record.mode, code),
        });
    }
    let due = record
        .deadline()
        .is_some_and(|deadline| seen.now >= deadline);
    match seen.pane {
        Some(pane) if !pane.dead => {
            if due {
                Verdict::TimeoutDue
            } else {
                Verdict::Unchanged
            }
        }
        // Stopping it needs no tmux: its processes are found by their group and environment.
        _ if seen.leader_alive && due => Verdict::TimeoutDue,
        None if seen.leader_alive => Verdict::Unseen,
        // Dead to tmux (its terminal closed) while its first process runs on.
        Some(_) if seen.leader_alive => Verdict::Unchanged,
        // Dead, but tmux has not reaped its process yet (neither a status nor a signal) while
        // `launch.sh` wrote its ending: the status comes with the next look. (tmux before 3.3
        // names no signal; there a pane killed after a forged sentinel waits for its timeout,
        // never reading `completed`.)
        Some(pane)
            if pane.dead_status.is_none()
                && pane.dead_signal.is_none()
                && seen.sentinel == Some(0) =>
        {
            Verdict::Unchanged
        }
        _ => Verdict::Ended(Ending {
            status: Status::Failed,
            reason: Some("pane_disappeared".into()),
            hint: Some(if seen.sentinel == Some(0) {
                "the task's tmux pane ended without an exit code tmux or the kernel could vouch \
                 for (its server or session killed, or its pane respawned); the exit-code file \
                 in its folder says 0, which the child could have written itself, so it is not \
                 taken. Read the transcript with `cuekit logs <id>`"
                    .into()
            } else {
                "the task's tmux pane ended without an exit code (killed from outside cuekit?); \
                 read the transcript with `cuekit logs <id>`"
                    .into()
            }),
            exit_code: None,
        }),
    }
}

/// Sentinel code → status; a non-zero code carries the agent's documented reason.
pub fn ending_for_exit(adapter: &Adapter, mode: Mode, code: i32) -> Ending {
    if code == 0 {
        return Ending {
            status: Status::Completed,
            reason: None,
            hint: None,
            exit_code: Some(0),
        };
    }
    let (reason, hint) = match adapter.exit_reason(mode, code) {
        Some(known) => (known.reason.to_string(), known.hint.to_string()),
        None => (
            "nonzero_exit".to_string(),
            format!(
                "the agent exited with status {code}; read the transcript with `cuekit logs <id>`"
            ),
        ),
    };
    Ending {
        status: Status::Failed,
        reason: Some(reason),
        hint: Some(hint),
        exit_code: Some(code),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::domain::spec::TaskSpec;

    fn record(status: Status, timeout_secs: Option<u64>) -> TaskRecord {
        TaskRecord {
            id: "t_000000000000".into(),
            spec: TaskSpec::default(),
            mode: Mode::Interactive,
            cwd: PathBuf::from("/w"),
            task_dir: PathBuf::from("/w/.cuekit/tasks/t_000000000000"),
            launch_command: "gemini".into(),
            status,
            reason: None,
            hint: None,
            exit_code: None,
            warnings: vec![],
            tmux: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            ended_at: None,
            started_at: None,
            timeout_secs,
            event_stream: false,
            agent_session_id: None,
            resumed_from: None,
            submitted_from: None,
            sandbox: None,
            team: None,
            last_report: None,
            worktree: None,
            check: None,
        }
    }

    fn pane(dead: bool, dead_status: Option<i32>) -> PaneInfo {
        PaneInfo {
            session: "s".into(),
            pane_id: "%1".into(),
            pane_pid: 1,
            dead,
            dead_status,
            // Killed by a signal when it has no status (a pane tmux has not reaped yet is
            // built by hand in its own test).
            dead_signal: (dead && dead_status.is_none()).then_some(9),
            in_mode: false,
            height: 50,
            history_lines: 0,
            activity: 0,
        }
    }

    fn gemini() -> &'static Adapter {
        crate::domain::adapter::lookup("gemini").unwrap()
    }

    fn at(secs: u64) -> SystemTime {
        humantime::parse_rfc3339("2026-01-01T00:00:00Z").unwrap() + Duration::from_secs(secs)
    }

    fn judge_with(
        record: &TaskRecord,
        pane: Option<&PaneInfo>,
        sentinel: Option<i32>,
        now: SystemTime,
    ) -> Verdict {
        judge(
            record,
            gemini(),
            &Observation {
                pane,
                pane_proven: true,
                sentinel,
                now,
                stream: None,
                setup_failed: false,
                sandbox_failed: false,
                sandbox_exit: None,
                leader_alive: false,
                unreaped_exit: None,
            },
        )
    }

    #[test]
    fn live_pane_without_sentinel_is_running() {
        let live = pane(false, None);
        assert_eq!(
            judge_with(&record(Status::Running, None), Some(&live), None, at(5)),
            Verdict::Unchanged
        );
    }

    #[test]
    fn exit_zero_completes_only_on_tmuxs_word_and_nonzero_fails_with_reason() {
        let running = record(Status::Running, None);
        let Verdict::Ended(done) = judge_with(&running, Some(&pane(true, Some(0))), None, at(1))
        else {
            panic!()
        };
        assert_eq!((done.status, done.exit_code), (Status::Completed, Some(0)));
        // A sentinel of 0 alone (the pane gone with its server, or respawned) is the child's
        // word: never `completed`.
        let Verdict::Ended(forged) = judge_with(&running, None, Some(0), at(1)) else {
            panic!()
        };
        assert_eq!(
            (forged.status, forged.reason.as_deref(), forged.exit_code),
            (Status::Failed, Some("pane_disappeared"), None)
        );
        let Verdict::Ended(auth) = judge_with(&running, None, Some(41), at(1)) else {
            panic!()
        };
        assert_eq!(auth.status, Status::Failed);
        assert_eq!(auth.reason.as_deref(), Some("auth_missing"));
        assert!(auth.hint.unwrap().contains("GEMINI_API_KEY"));
        let Verdict::Ended(other) = judge_with(&running, None, Some(3), at(1)) else {
            panic!()
        };
        assert_eq!(other.reason.as_deref(), Some("nonzero_exit"));
    }

    #[test]
    fn a_dead_pane_tmux_has_not_reaped_yet_is_waited_for() {
        let running = record(Status::Running, None);
        let mut reaping = pane(true, None);
        reaping.dead_signal = None;
        assert!(matches!(
            judge_with(&running, Some(&reaping), Some(0), at(1)),
            Verdict::Unchanged
        ));
    }

    #[test]
    fn pane_gone_or_killed_without_sentinel_is_pane_disappeared() {
        let running = record(Status::Running, None);
        // Killed by a signal: tmux reports no exit status.
        let killed = pane(true, None);
        for seen in [None, Some(&killed)] {
            let Verdict::Ended(end) = judge_with(&running, seen, None, at(1)) else {
                panic!()
            };
            assert_eq!(end.status, Status::Failed);
            assert_eq!(end.reason.as_deref(), Some("pane_disappeared"));
            assert_eq!(end.exit_code, None);
        }
    }

    #[test]
    fn a_dead_pane_whose_sentinel_could_not_be_written_ends_with_the_status_tmux_kept() {
        let running = record(Status::Running, None);
        let Verdict::Ended(done) = judge_with(&running, Some(&pane(true, Some(0))), None, at(1))
        else {
            panic!()
        };
        assert_eq!((done.status, done.exit_code), (Status::Completed, Some(0)));
        let Verdict::Ended(auth) = judge_with(&running, Some(&pane(true, Some(41))), None, at(1))
        else {
            panic!()
        };
        assert_eq!(
            (auth.reason.as_deref(), auth.exit_code),
            (Some("auth_missing"), Some(41))
        );
        // tmux's word beats a sentinel the child could have written.
        let Verdict::Ended(end) = judge_with(&running, Some(&pane(true, Some(3))), Some(0), at(1))
        else {
            panic!()
        };
        assert_eq!(end.exit_code, Some(3));
        // A live pane's status means nothing, and neither does a sentinel beside a live pane.
        let seen = |pane, sentinel, unreaped_exit, leader_alive| Observation {
            pane,
            pane_proven: true,
            sentinel,
            now: at(1),
            stream: None,
            setup_failed: false,
            sandbox_failed: false,
            sandbox_exit: None,
            leader_alive,
            unreaped_exit,
        };
        let (live_0, live) = (pane(false, Some(0)), pane(false, None));
        assert_eq!(exit_status(&seen(Some(&live_0), None, None, true)), None);
        assert_eq!(exit_status(&seen(Some(&live), Some(0), None, true)), None);
        // Dead before tmux collected the status: the kernel's word for the unreaped process.
        let (dead, dead_3) = (pane(true, None), pane(true, Some(3)));
        assert_eq!(
            exit_status(&seen(Some(&dead), None, Some(0), false)),
            Some(0)
        );
        assert_eq!(
            exit_status(&seen(Some(&dead_3), None, Some(0), false)),
            Some(3)
        );
        assert_eq!(exit_status(&seen(None, None, Some(0), false)), None);
        // Killed by a signal after writing it: a non-zero sentinel, never a zero one.
        assert_eq!(
            exit_status(&seen(Some(&dead), Some(4), None, false)),
            Some(4)
        );
        assert_eq!(exit_status(&seen(Some(&dead), Some(0), None, false)), None);
        // Gone with its server: the same, unless the pane's first process still runs.
        assert_eq!(exit_status(&seen(None, Some(4), None, false)), Some(4));
        assert_eq!(exit_status(&seen(None, Some(0), None, false)), None);
        assert_eq!(exit_status(&seen(None, Some(4), None, true)), None);
        // A pane that is not the one recorded (respawned): its status is not the task's.
        let respawned = pane(true, Some(0));
        let unproven = Observation {
            pane_proven: false,
            ..seen(Some(&respawned), None, None, false)
        };
        assert_eq!(exit_status(&unproven), None);
        // A sandboxed task gone with its server: bubblewrap's word, out of the child's reach.
        let sandboxed = Observation {
            sandbox_exit: Some(0),
            ..seen(None, Some(5), None, false)
        };
        assert_eq!(exit_status(&sandboxed), Some(0));
    }

    #[test]
    fn recorded_endings_are_final() {
        // A cancel is recorded before the kill: the agent's exit 0 on SIGTERM must not win.
        let cancelled = record(Status::Cancelled, None);
        assert_eq!(
            judge_with(&cancelled, None, Some(0), at(1)),
            Verdict::Unchanged
        );
    }

    #[test]
    fn an_event_stream_must_report_success_for_exit_zero_to_count() {
        let running = record(Status::Running, None);
        let exited = pane(true, Some(0));
        let seen = |stream| Observation {
            pane: Some(&exited),
            pane_proven: true,
            sentinel: Some(0),
            now: at(1),
            stream: Some(stream),
            setup_failed: false,
            sandbox_failed: false,
            sandbox_exit: None,
            leader_alive: false,
            unreaped_exit: None,
        };
        let Verdict::Ended(ok) = judge(&running, gemini(), &seen(StreamReport::Succeeded)) else {
            panic!()
        };
        assert_eq!(ok.status, Status::Completed);
        let Verdict::Ended(cut) = judge(&running, gemini(), &seen(StreamReport::Unfinished)) else {
            panic!()
        };
        assert_eq!(
            (cut.status, cut.reason.as_deref()),
            (Status::Failed, Some("no_result_event"))
        );
        let Verdict::Ended(bad) = judge(
            &running,
            gemini(),
            &seen(StreamReport::Failed("quota".into())),
        ) else {
            panic!()
        };
        assert_eq!(
            (bad.reason.as_deref(), bad.hint.as_deref()),
            (Some("agent_error"), Some("quota"))
        );
    }

    #[test]
    fn a_failed_worktree_setup_is_its_own_reason_whatever_the_code() {
        let running = record(Status::Running, None);
        let seen = Observation {
            pane: None,
            pane_proven: true,
            sentinel: Some(1),
            now: at(1),
            stream: None,
            setup_failed: true,
            sandbox_failed: false,
            sandbox_exit: None,
            leader_alive: false,
            unreaped_exit: None,
        };
        let Verdict::Ended(ending) = judge(&running, gemini(), &seen) else {
            panic!()
        };
        assert_eq!(
            (ending.status, ending.reason.as_deref(), ending.exit_code),
            (Status::Failed, Some("worktree_setup_failed"), Some(1))
        );
    }

    #[test]
    fn a_pane_tmux_does_not_show_whose_process_runs_is_not_gone() {
        let seen = |leader_alive, now| Observation {
            pane: None,
            pane_proven: true,
            sentinel: None,
            now,
            stream: None,
            setup_failed: false,
            sandbox_failed: false,
            sandbox_exit: None,
            leader_alive,
            unreaped_exit: None,
        };
        let running = record(Status::Running, Some(10));
        assert_eq!(
            judge(&running, gemini(), &seen(true, at(1))),
            Verdict::Unseen
        );
        assert_eq!(
            judge(&running, gemini(), &seen(true, at(10))),
            Verdict::TimeoutDue
        );
        assert!(matches!(
            judge(&running, gemini(), &seen(false, at(1))),
            Verdict::Ended(Ending {
                status: Status::Failed,
                ..
            })
        ));
        // Shown dead without a status while that process runs on: nothing to conclude.
        let dead = pane(true, None);
        let closed = Observation {
            pane: Some(&dead),
            ..seen(true, at(1))
        };
        assert_eq!(judge(&running, gemini(), &closed), Verdict::Unchanged);
    }

    #[test]
    fn deadline_passed_while_running_is_timeout_due() {
        let timed = record(Status::Running, Some(10));
        let live = pane(false, None);
        assert_eq!(
            judge_with(&timed, Some(&live), None, at(9)),
            Verdict::Unchanged
        );
        assert_eq!(
            judge_with(&timed, Some(&live), None, at(10)),
            Verdict::TimeoutDue
        );
        // An exit before anyone noticed the deadline is still an exit.
        assert!(matches!(
            judge_with(&timed, Some(&pane(true, Some(0))), Some(0), at(11)),
            Verdict::Ended(_)
        ));
        // A sentinel beside the live pane is not one (the child can write it): the timeout is.
        assert_eq!(
            judge_with(&timed, Some(&live), Some(0), at(11)),
            Verdict::TimeoutDue
        );
    }
}

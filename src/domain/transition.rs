//! Transitions of a task, as the monitor announces them: pure rules from what was last
//! announced (persisted, so a monitor that was killed and restarted announces each transition
//! once) and what is seen now.
//!
//! - A wait on a human counts only once the screen has held it, unchanged, for the dwell: a
//!   screen that flickers between busy and a dialog never settles, so it never fires.
//! - The same wait seen again (same reason, same screen) is not announced twice.
//! - An ending is announced once, whoever recorded it and whether or not a monitor ran then.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::status::Status;

/// What was last announced for a task (`<registry>/<id>.seen`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announced {
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last wait announced: its reason and a hash of its screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_wait: Option<(String, u64)>,
}

/// What the monitor sees of a task now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Waits for the scheduler to start it (a first start, or a retry after its backoff).
    Queued {
        reason: Option<String>,
    },
    Running,
    /// The child waits on a human: why, a hash of the screen, and how long the screen has been
    /// unchanged.
    Waiting {
        reason: String,
        screen: u64,
        quiet_for: Duration,
    },
    Ended {
        status: Status,
        reason: Option<String>,
    },
    /// An interactive child idle after its turn whose own check decides what follows (a fix
    /// message or the quit): cuekit's move, not a person's. It stays `running` to everyone; a
    /// turn's end that held for the dwell is recorded once, quietly, in [`Announced::last_wait`]
    /// under [`CHECKING`] (the monitor starts the check on it: [`turn_to_check`]).
    Checking {
        screen: u64,
        quiet_for: Duration,
    },
}

/// The wait's reason recorded for a turn whose check is to come (never announced).
pub const CHECKING: &str = "checking";

/// Whether `after` records a new turn's end to check (a [`Seen::Checking`] that settled on a
/// screen not recorded before).
pub fn turn_to_check(before: &Announced, after: Option<&Announced>) -> bool {
    after.is_some_and(|after| {
        after.last_wait != before.last_wait
            && after
                .last_wait
                .as_ref()
                .is_some_and(|(reason, _)| reason == CHECKING)
    })
}

/// Whether `after` announces, as a wait on a person, the very screen `before` recorded as a
/// turn's end to check: that turn, checked already (a pass that leaves the next move to the
/// parent), not a new one to check again.
pub fn waits_on_the_checked_turn(before: &Announced, after: Option<&Announced>) -> bool {
    match (
        &before.last_wait,
        after.and_then(|after| after.last_wait.as_ref()),
    ) {
        (Some((reason, checked)), Some((waits_on, screen))) => {
            reason == CHECKING && waits_on != CHECKING && checked == screen
        }
        _ => false,
    }
}

/// One transition to announce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    pub old_status: Option<Status>,
    pub new_status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The transitions to announce now, in order, and what is announced after them. None with
/// `Some(update)` records something quietly (a wait already announced, seen again).
///
/// A task first seen waiting or ended (it was shorter than the monitor's first look, or ended
/// while no monitor ran) is announced `running` first: every task starts once, before anything
/// else it does.
pub fn next(
    announced: &Announced,
    seen: &Seen,
    dwell: Duration,
) -> (Vec<Transition>, Option<Announced>) {
    if announced.status.is_some_and(Status::is_terminal) {
        return (Vec::new(), None);
    }
    let start = Transition {
        old_status: None,
        new_status: Status::Running,
        reason: None,
    };
    let started = Announced {
        status: Some(Status::Running),
        ..announced.clone()
    };
    let (status, reason, wait) = match seen {
        Seen::Queued { reason } => (Status::Queued, reason.clone(), None),
        Seen::Running => (Status::Running, None, None),
        // Not settled yet: nothing changes until it holds for the dwell, but the task runs.
        Seen::Waiting { quiet_for, .. } | Seen::Checking { quiet_for, .. }
            if *quiet_for < dwell =>
        {
            return match announced.status {
                None => (vec![start], Some(started)),
                Some(_) => (Vec::new(), None),
            };
        }
        Seen::Checking { screen, .. } => return checking(announced, *screen),
        Seen::Waiting { reason, screen, .. } => (
            Status::InputRequired,
            Some(reason.clone()),
            Some((reason.clone(), *screen)),
        ),
        Seen::Ended { status, reason } => (*status, reason.clone(), None),
    };
    let mut announce = Vec::new();
    let announced = match announced.status {
        // A task that waits in the queue has not started: its start is announced when it does.
        None if !matches!(status, Status::Running | Status::Queued) => {
            announce.push(start);
            &started
        }
        _ => announced,
    };
    // The same status again is nothing new, except a wait on another screen: the child worked
    // in between (a steer answered between two looks) and waits again.
    if announced.status == Some(status)
        && (status != Status::InputRequired || announced.last_wait == wait)
    {
        return (announce, None);
    }
    let after = Announced {
        status: Some(status),
        reason: reason.clone(),
        last_wait: wait.clone().or_else(|| announced.last_wait.clone()),
    };
    if wait.is_some() && announced.last_wait == wait {
        // The very wait announced before (e.g. a steer that changed nothing): recorded, quiet.
        return (announce, Some(after));
    }
    announce.push(Transition {
        old_status: announced.status,
        new_status: status,
        reason,
    });
    (announce, Some(after))
}

/// A settled turn's end whose check is to come: `running` (announced so only when it was not:
/// the start, or the end of a wait a person answered), and the turn recorded once.
fn checking(announced: &Announced, screen: u64) -> (Vec<Transition>, Option<Announced>) {
    let wait = Some((CHECKING.to_string(), screen));
    let mut announce = Vec::new();
    if announced.status != Some(Status::Running) {
        announce.push(Transition {
            old_status: announced.status,
            new_status: Status::Running,
            reason: None,
        });
    } else if announced.last_wait == wait {
        return (announce, None);
    }
    let after = Announced {
        status: Some(Status::Running),
        reason: None,
        last_wait: wait,
    };
    (announce, Some(after))
}

/// A stable hash of a screen's text (FNV-1a): equal screens, equal hashes, across processes.
pub fn screen_hash(screen: &str) -> u64 {
    screen.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DWELL: Duration = Duration::from_secs(2);

    fn waiting(reason: &str, screen: u64, quiet_secs: u64) -> Seen {
        Seen::Waiting {
            reason: reason.into(),
            screen,
            quiet_for: Duration::from_secs(quiet_secs),
        }
    }

    /// Feeds a sequence of looks and returns the transitions announced.
    fn run(seen: &[Seen]) -> Vec<(Option<Status>, Status, Option<String>)> {
        let mut announced = Announced::default();
        let mut out = Vec::new();
        for look in seen {
            let (transitions, after) = next(&announced, look, DWELL);
            for t in transitions {
                out.push((t.old_status, t.new_status, t.reason));
            }
            if let Some(after) = after {
                announced = after;
            }
        }
        out
    }

    #[test]
    fn a_queued_task_is_announced_queued_then_started_then_queued_again_for_its_retry() {
        let queued = |reason: Option<&str>| Seen::Queued {
            reason: reason.map(String::from),
        };
        let fired = run(&[
            queued(None),
            queued(None),
            Seen::Running,
            queued(Some("rate_limited")),
            Seen::Running,
            Seen::Ended {
                status: Status::Completed,
                reason: None,
            },
        ]);
        assert_eq!(
            fired,
            [
                (None, Status::Queued, None),
                (Some(Status::Queued), Status::Running, None),
                (
                    Some(Status::Running),
                    Status::Queued,
                    Some("rate_limited".to_string())
                ),
                (Some(Status::Queued), Status::Running, None),
                (Some(Status::Running), Status::Completed, None),
            ]
        );
    }

    #[test]
    fn a_turn_waiting_on_its_check_stays_running_and_is_recorded_once_to_check() {
        let checking = |screen, quiet_secs| Seen::Checking {
            screen,
            quiet_for: Duration::from_secs(quiet_secs),
        };
        let mut announced = Announced::default();
        let mut fired = Vec::new();
        let mut checks = 0;
        for look in [
            Seen::Running,
            checking(1, 0),
            checking(1, 3),
            checking(1, 5),
            // The fix message: it works, then idles on another screen.
            Seen::Running,
            checking(2, 3),
            Seen::Ended {
                status: Status::Completed,
                reason: None,
            },
        ] {
            let (transitions, after) = next(&announced, &look, DWELL);
            checks += usize::from(turn_to_check(&announced, after.as_ref()));
            fired.extend(
                transitions
                    .into_iter()
                    .map(|t| (t.old_status, t.new_status)),
            );
            if let Some(after) = after {
                announced = after;
            }
        }
        assert_eq!(checks, 2, "each turn's end is checked once");
        assert_eq!(
            fired,
            [
                (None, Status::Running),
                (Some(Status::Running), Status::Completed)
            ],
            "nothing but running and the ending is announced"
        );
        // A wait a person answered, then a turn to check: running again.
        let asked = Announced {
            status: Some(Status::InputRequired),
            reason: Some("permission_prompt".into()),
            last_wait: Some(("permission_prompt".into(), 7)),
        };
        let (transitions, after) = next(&asked, &checking(8, 3), DWELL);
        assert_eq!(
            transitions,
            [Transition {
                old_status: Some(Status::InputRequired),
                new_status: Status::Running,
                reason: None
            }]
        );
        assert!(turn_to_check(&asked, after.as_ref()));
    }

    #[test]
    fn a_kept_open_pass_announces_its_checked_turn_as_a_wait_not_a_new_turn() {
        let checked = |screen| Announced {
            status: Some(Status::Running),
            reason: None,
            last_wait: Some((CHECKING.into(), screen)),
        };
        // Passed and kept open: the same screen, now a wait on a person.
        let (transitions, after) = next(&checked(1), &waiting("idle_at_prompt", 1, 3), DWELL);
        assert_eq!(transitions[0].new_status, Status::InputRequired);
        assert!(waits_on_the_checked_turn(&checked(1), after.as_ref()));
        // Steered meanwhile: another screen is another turn.
        let (_, after) = next(&checked(1), &waiting("idle_at_prompt", 2, 3), DWELL);
        assert!(!waits_on_the_checked_turn(&checked(1), after.as_ref()));
        // A wait after a wait, or nothing recorded: no checked turn to wait on.
        let asked = Announced {
            last_wait: Some(("idle_at_prompt".into(), 1)),
            ..checked(1)
        };
        let (_, after) = next(&asked, &waiting("permission_prompt", 1, 3), DWELL);
        assert!(!waits_on_the_checked_turn(&asked, after.as_ref()));
        assert!(!waits_on_the_checked_turn(&checked(1), None));
    }

    #[test]
    fn a_start_a_settled_wait_a_return_to_work_and_an_end_each_fire_once() {
        let fired = run(&[
            Seen::Running,
            Seen::Running,
            waiting("idle_at_prompt", 1, 0),
            waiting("idle_at_prompt", 1, 1),
            waiting("idle_at_prompt", 1, 2),
            waiting("idle_at_prompt", 1, 3),
            Seen::Running,
            waiting("idle_at_prompt", 2, 5),
            Seen::Ended {
                status: Status::Completed,
                reason: None,
            },
            Seen::Ended {
                status: Status::Completed,
                reason: None,
            },
        ]);
        let idle = Some("idle_at_prompt".to_string());
        assert_eq!(
            fired,
            [
                (None, Status::Running, None),
                (Some(Status::Running), Status::InputRequired, idle.clone()),
                (Some(Status::InputRequired), Status::Running, None),
                (Some(Status::Running), Status::InputRequired, idle),
                (Some(Status::InputRequired), Status::Completed, None),
            ]
        );
    }

    #[test]
    fn a_new_wait_on_another_screen_fires_even_when_the_work_between_was_not_seen() {
        let fired = run(&[
            Seen::Running,
            waiting("idle_at_prompt", 1, 3),
            waiting("idle_at_prompt", 1, 9),
            waiting("idle_at_prompt", 2, 0),
            waiting("idle_at_prompt", 2, 3),
        ]);
        assert_eq!(fired.len(), 3, "{fired:?}");
        assert_eq!(fired[2].0, Some(Status::InputRequired));
    }

    #[test]
    fn a_flickering_screen_never_fires() {
        let mut looks = vec![Seen::Running];
        for _ in 0..20 {
            looks.push(waiting("permission_prompt", 7, 0));
            looks.push(Seen::Running);
        }
        assert_eq!(run(&looks), [(None, Status::Running, None)]);
    }

    #[test]
    fn the_same_wait_seen_again_is_not_announced_twice() {
        let fired = run(&[
            Seen::Running,
            waiting("auth_required", 9, 3),
            Seen::Running,
            waiting("auth_required", 9, 3),
        ]);
        assert_eq!(fired.len(), 3, "{fired:?}");
        assert_eq!(fired[2].1, Status::Running);
    }

    #[test]
    fn an_ending_missed_by_a_dead_monitor_is_announced_once() {
        // Announced running; the task ended while no monitor ran: one transition.
        let announced = Announced {
            status: Some(Status::Running),
            ..Announced::default()
        };
        let ended = Seen::Ended {
            status: Status::TimedOut,
            reason: Some("timeout".into()),
        };
        let (transitions, after) = next(&announced, &ended, DWELL);
        assert_eq!(transitions.len(), 1, "{transitions:?}");
        assert_eq!(transitions[0].new_status, Status::TimedOut);
        assert_eq!(next(&after.unwrap(), &ended, DWELL), (Vec::new(), None));
    }

    #[test]
    fn a_task_first_seen_ended_or_waiting_is_announced_running_first() {
        let ended = Seen::Ended {
            status: Status::Completed,
            reason: None,
        };
        assert_eq!(
            run(&[ended.clone(), ended]),
            [
                (None, Status::Running, None),
                (Some(Status::Running), Status::Completed, None),
            ]
        );
        let idle = Some("idle_at_prompt".to_string());
        assert_eq!(
            run(&[waiting("idle_at_prompt", 1, 3)]),
            [
                (None, Status::Running, None),
                (Some(Status::Running), Status::InputRequired, idle),
            ]
        );
        // A wait not settled yet is still a start; once it settles, only the wait follows.
        assert_eq!(
            run(&[
                waiting("idle_at_prompt", 1, 0),
                waiting("idle_at_prompt", 1, 0)
            ]),
            [(None, Status::Running, None)]
        );
    }

    #[test]
    fn screen_hashes_are_stable() {
        assert_eq!(screen_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_ne!(screen_hash("a"), screen_hash("b"));
    }
}

//! What the scheduler process remembers between ticks, so an idle queue costs directory reads
//! and a `/proc` read per live agent, not a read of every queued task: a look at the queue is
//! taken only when what decides a start changed (a task joined or left the queue, a slot was
//! taken or freed, a slot holder's agent ended), when a retry's backoff is over, or every
//! [`FULL_LOOK`] (a dependency that reported `done`, a limit lowered in the config).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant, SystemTime};

use crate::effects::process::GroupLeader;
use crate::effects::store::{self, schedule};

/// The longest an idle queue goes without a whole look.
const FULL_LOOK: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Signature {
    queued: Vec<String>,
    /// Each slot holder, and whether its agent still runs.
    slots: Vec<(String, bool)>,
}

#[derive(Default)]
pub(super) struct Watch {
    /// The pane leader of each slot, by the slot file's identity (a new attempt takes a new
    /// slot file).
    leaders: HashMap<(String, u64, i64), GroupLeader>,
    last: Option<Signature>,
    looked_at: Option<Instant>,
    next_due: Option<SystemTime>,
}

impl Watch {
    /// Whether the queue needs a look now.
    pub fn due(&mut self) -> bool {
        let now = self.signature();
        let due = self.last.as_ref() != Some(&now)
            || self.looked_at.is_none_or(|at| at.elapsed() >= FULL_LOOK)
            || self.next_due.is_some_and(|at| SystemTime::now() >= at);
        self.last = Some(now);
        due
    }

    /// A look was taken. The baseline stays what [`Watch::due`] saw before it: whatever
    /// changed during the look (its own starts included) makes the next tick look again.
    pub fn looked(&mut self, next_due: Option<SystemTime>) {
        self.looked_at = Some(Instant::now());
        self.next_due = next_due;
    }

    fn signature(&mut self) -> Signature {
        let mut queued = schedule::queued_ids();
        queued.sort();
        let mut slots: Vec<(String, bool)> = schedule::slot_ids()
            .into_iter()
            .map(|id| {
                let alive = self.leader(&id).is_none_or(|leader| leader.is_alive());
                (id, alive)
            })
            .collect();
        slots.sort();
        self.leaders
            .retain(|(id, _, _), _| slots.iter().any(|(slot, _)| slot == id));
        Signature { queued, slots }
    }

    /// The slot holder's pane leader (`None` while its pane is not recorded yet).
    fn leader(&mut self, id: &str) -> Option<GroupLeader> {
        let meta = std::fs::metadata(schedule::slot_path(id)?).ok()?;
        let key = (id.to_string(), meta.ino(), meta.mtime_nsec());
        if let Some(leader) = self.leaders.get(&key) {
            return Some(*leader);
        }
        let leader = crate::ops::task::leader_of(store::pane_start(id).as_ref())?;
        self.leaders.insert(key, leader);
        Some(leader)
    }
}

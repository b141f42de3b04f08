//! The digest (issue 53): what happened since a moment, in one message — the tasks ended, by
//! status; of those, how many a check passed and how many nobody checked; what waits on a human;
//! the conflicts between worktree tasks. Pure: `ops::digest` gathers the items.

use std::collections::BTreeMap;

use serde::Serialize;

/// One task as the digest sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    pub task_id: String,
    pub status: String,
    pub reason: Option<String>,
    /// Ended in the digest's span (else it is only listed when it waits or conflicts).
    pub ended_since: bool,
    /// Whether it had a check (`--check`).
    pub checked: bool,
    /// The tasks whose work conflicts with its.
    pub conflicts_with: Vec<String>,
}

/// The digest's counts and lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Digest {
    /// Tasks ended in the span, by status.
    pub ended: BTreeMap<String, usize>,
    /// Of those completed, how many passed a check, how many had none.
    pub checked: usize,
    pub unchecked: usize,
    /// Tasks waiting on a human: id and why.
    pub waiting: Vec<(String, String)>,
    /// Pairs of tasks whose work conflicts.
    pub conflicts: Vec<(String, String)>,
}

pub fn summarize(items: &[Item]) -> Digest {
    let mut digest = Digest::default();
    for item in items {
        if item.ended_since {
            *digest.ended.entry(item.status.clone()).or_default() += 1;
            if item.status == "completed" {
                if item.checked {
                    digest.checked += 1;
                } else {
                    digest.unchecked += 1;
                }
            }
        }
        if item.status == "input_required" {
            digest.waiting.push((
                item.task_id.clone(),
                item.reason
                    .clone()
                    .unwrap_or_else(|| "input_required".into()),
            ));
        }
        for other in &item.conflicts_with {
            let pair = if item.task_id <= *other {
                (item.task_id.clone(), other.clone())
            } else {
                (other.clone(), item.task_id.clone())
            };
            if !digest.conflicts.contains(&pair) {
                digest.conflicts.push(pair);
            }
        }
    }
    digest
}

impl Digest {
    /// Whether there is anything to say.
    pub fn is_empty(&self) -> bool {
        self.ended.is_empty() && self.waiting.is_empty() && self.conflicts.is_empty()
    }

    /// One line: the counts.
    pub fn headline(&self) -> String {
        let total: usize = self.ended.values().sum();
        let by: Vec<String> = self
            .ended
            .iter()
            .map(|(status, n)| format!("{n} {status}"))
            .collect();
        let ended = if by.is_empty() {
            "nothing ended".to_string()
        } else {
            format!("{total} ended ({})", by.join(", "))
        };
        format!(
            "{ended}; {} waiting on you; {} conflicts",
            self.waiting.len(),
            self.conflicts.len()
        )
    }

    /// The lines below the headline.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.checked + self.unchecked > 0 {
            lines.push(format!(
                "completed: {} passed a check, {} unchecked",
                self.checked, self.unchecked
            ));
        }
        for (id, why) in &self.waiting {
            lines.push(format!("waiting: {id} ({})", why.replace('_', " ")));
        }
        for (a, b) in &self.conflicts {
            lines.push(format!("conflict: {a} and {b}"));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, status: &str, ended: bool, checked: bool) -> Item {
        Item {
            task_id: id.into(),
            status: status.into(),
            reason: None,
            ended_since: ended,
            checked,
            conflicts_with: Vec::new(),
        }
    }

    #[test]
    fn counts_by_status_checks_waits_and_conflicts_once() {
        let mut a = item("a", "completed", true, true);
        a.conflicts_with = vec!["b".into()];
        let mut b = item("b", "completed", true, false);
        b.conflicts_with = vec!["a".into()];
        let mut w = item("w", "input_required", false, false);
        w.reason = Some("permission_prompt".into());
        let old = item("old", "failed", false, false);
        let digest = summarize(&[a, b, item("f", "failed", true, false), w, old]);
        assert_eq!(digest.ended.get("completed"), Some(&2));
        assert_eq!(digest.ended.get("failed"), Some(&1));
        assert_eq!((digest.checked, digest.unchecked), (1, 1));
        assert_eq!(digest.conflicts, vec![("a".into(), "b".into())]);
        assert_eq!(
            digest.headline(),
            "3 ended (2 completed, 1 failed); 1 waiting on you; 1 conflicts"
        );
        assert!(
            digest
                .lines()
                .contains(&"waiting: w (permission prompt)".to_string())
        );
        assert!(summarize(&[]).is_empty());
    }
}

//! Budgets: `--max-tokens` and `--max-turns`, judged from the usage a task's agent reports (a
//! batch event stream's progress and `result`, an ACP session's turn ends). A task past its
//! budget is recorded `failed` / `budget_exceeded` and then ended; a task that ended past it
//! is `budget_exceeded` instead of `completed`, which also stops its retries and its
//! dependents. Where a mode reports no usage (interactive, plain-text batch), a budget is
//! refused at submit.

use crate::domain::status::{Ending, Status};
use crate::effects::store::Budget;
use crate::ops::task::Task;

/// The ending of a task whose reported usage (or its team's) passed its budget, if it has.
pub(crate) fn exceeded(task: &Task) -> Option<Ending> {
    let budget = task.placement.facts.as_ref()?.budget.as_ref()?;
    team_over(task, budget, task.record.exit_code).or_else(|| {
        let progress = crate::ops::background::stream::read_progress(&task.record.task_dir)?;
        over(
            budget,
            progress.tokens,
            progress.turns,
            task.record.exit_code,
        )
    })
}

/// `budget_exceeded` once the members of the task's team reported more tokens, together,
/// than the team's budget.
fn team_over(task: &Task, budget: &Budget, exit_code: Option<i32>) -> Option<Ending> {
    let max = budget.team_tokens?;
    let team = task.record.team.as_deref()?;
    let used: u64 = crate::effects::store::schedule::team_members(team)
        .iter()
        .filter_map(|id| crate::effects::store::placement(id).ok().flatten())
        .filter_map(|placement| {
            crate::ops::background::stream::read_progress(&placement.task_dir)?.tokens
        })
        .sum();
    (used > max).then(|| Ending {
        status: Status::Failed,
        reason: Some("budget_exceeded".into()),
        hint: Some(format!(
            "the members of team {team} reported {used} tokens together, over its budget of \
             {max}: the task was stopped"
        )),
        exit_code,
    })
}

/// An ending, or `budget_exceeded` when the usage at the end passed the budget.
pub(crate) fn at_end(task: &Task, ending: Ending) -> Ending {
    let Some(budget) = task
        .placement
        .facts
        .as_ref()
        .and_then(|f| f.budget.as_ref())
    else {
        return ending;
    };
    if let Some(over_team) = team_over(task, budget, ending.exit_code) {
        return over_team;
    }
    let Some(progress) = crate::ops::background::stream::read_progress(&task.record.task_dir)
    else {
        return ending;
    };
    over(budget, progress.tokens, progress.turns, ending.exit_code).unwrap_or(ending)
}

fn over(
    budget: &Budget,
    tokens: Option<u64>,
    turns: u32,
    exit_code: Option<i32>,
) -> Option<Ending> {
    let passed = match (budget.tokens, tokens, budget.turns) {
        (Some(max), Some(used), _) if used > max => format!("{used} tokens, over its {max}"),
        (_, _, Some(max)) if turns > max => format!("{turns} turns, over its {max}"),
        _ => return None,
    };
    Some(Ending {
        status: Status::Failed,
        reason: Some("budget_exceeded".into()),
        hint: Some(format!(
            "the agent reported {passed}: the task was stopped (a larger --max-tokens or \
             --max-turns, or a smaller task)"
        )),
        exit_code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_usage_past_the_budget_ends_a_task() {
        let budget = Budget {
            tokens: Some(100),
            turns: Some(3),
            team_tokens: None,
        };
        assert_eq!(over(&budget, Some(100), 3, None), None);
        let tokens = over(&budget, Some(101), 1, Some(0)).unwrap();
        assert_eq!(tokens.reason.as_deref(), Some("budget_exceeded"));
        assert!(tokens.hint.unwrap().contains("101 tokens, over its 100"));
        assert!(over(&budget, None, 4, None).is_some());
        let unlimited = Budget::default();
        assert_eq!(over(&unlimited, Some(u64::MAX), u32::MAX, None), None);
    }
}

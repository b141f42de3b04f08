use std::path::Path;

use super::render::{print_json, say};
use crate::domain::display::result_text::text;
use crate::ops;

pub fn run(id: Option<&str>, team: Option<&str>, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    if let Some(team) = team {
        let results = ops::team_result(team, cwd)?;
        if json {
            print_json(&results);
        } else {
            let texts: Vec<String> = results.results.iter().map(text).collect();
            say(&format!("team {}\n\n{}", results.team, texts.join("\n\n")));
        }
        return Ok(0);
    }
    let id = id.expect("clap requires an id without --team");
    if crate::domain::race::is_race_id(id) {
        let race = ops::race_result(id, cwd)?;
        if json {
            print_json(&race);
        } else {
            say(&race_text(&race));
        }
        return Ok(0);
    }
    let result = ops::result(id, cwd)?;
    if json {
        print_json(&result);
    } else {
        say(&text(&result));
    }
    Ok(0)
}

/// A row per candidate (agent, model, verdict, fix rounds, diff, tokens, ending), then the
/// winner and why (escaped whole by `say`: a candidate's record holds words of its own).
fn race_text(race: &ops::RaceResult) -> String {
    let mut lines = vec![format!(
        "race {} ({}): {}",
        race.race, race.state, race.objective
    )];
    lines.push(format!(
        "  {:<16} {:<10} {:<22} {:<10} {:>6} {:>14} {:>9}  ended",
        "candidate", "agent", "model", "verdict", "rounds", "diff", "tokens"
    ));
    for c in &race.candidates {
        let verdict = if c.passed {
            "passed"
        } else {
            c.status.as_str()
        };
        let diff = match (c.files_changed, c.diff_lines) {
            (Some(files), Some(lines)) => format!("{files} f, {lines} l"),
            _ => "-".into(),
        };
        let winner = race.pick.as_ref().and_then(|p| p.winner.as_deref()) == Some(c.id.as_str());
        lines.push(format!(
            "{} {:<16} {:<10} {:<22} {:<10} {:>6} {:>14} {:>9}  {}",
            if winner { "*" } else { " " },
            c.id,
            c.agent,
            c.model.as_deref().unwrap_or("-"),
            verdict,
            c.fix_rounds,
            diff,
            c.tokens.map_or("-".into(), |t| t.to_string()),
            c.ended_at.as_deref().unwrap_or("running"),
        ));
    }
    match &race.pick {
        Some(pick) => match &pick.winner {
            Some(winner) => lines.push(format!("winner: {winner}, {}", pick.why)),
            None => lines.push(format!("no winner: {}", pick.why)),
        },
        None => lines.push("not decided yet: `cuekit wait RACE` waits for it".into()),
    }
    for kept in &race.kept {
        lines.push(format!("kept: {kept}"));
    }
    if !race.cancelled.is_empty() {
        lines.push(format!(
            "cancelled at the pick: {}",
            race.cancelled.join(", ")
        ));
    }
    if let Some(merged) = &race.merged {
        lines.push(format!("merge: {merged}"));
    }
    for problem in &race.problems {
        lines.push(format!("problem: {problem}"));
    }
    lines.join("\n")
}

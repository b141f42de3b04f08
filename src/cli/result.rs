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
    let result = ops::result(id, cwd)?;
    if json {
        print_json(&result);
    } else {
        say(&text(&result));
    }
    Ok(0)
}

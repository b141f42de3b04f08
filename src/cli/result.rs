use std::path::Path;

use super::render::print_json;
use crate::ops;

pub fn run(id: &str, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let result = ops::result(id, cwd)?;
    if json {
        print_json(&result);
        return Ok(0);
    }
    let exit = result
        .exit_code
        .map(|c| format!(" (exit {c})"))
        .unwrap_or_default();
    let reason = result
        .reason
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    println!(
        "{}  {}{exit}{reason}",
        result.task_id,
        result.status.as_str()
    );
    if let Some(session) = &result.agent_session_id {
        println!("  session:  {session}");
    }
    for call in &result.tool_calls {
        println!(
            "  tool:     {} {} ({})",
            call.name, call.parameters, call.status
        );
    }
    for error in &result.errors {
        println!(
            "  error:    {}",
            error["message"].as_str().unwrap_or_default()
        );
    }
    if let Some(stats) = &result.stats {
        let n = |key: &str| stats.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
        println!(
            "  tokens:   {} ({} in, {} out) in {} ms",
            n("total_tokens"),
            n("input_tokens"),
            n("output_tokens"),
            n("duration_ms")
        );
    }
    if let Some(files) = &result.files_changed {
        for file in files {
            println!("  changed:  {} {}", file.status, file.path);
        }
    }
    let text = result
        .transcript_tail
        .as_deref()
        .unwrap_or(&result.final_text);
    if !text.is_empty() {
        println!("\n{text}");
    }
    Ok(0)
}

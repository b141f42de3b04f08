//! A task's result as text: what `cuekit result` prints and the dashboard pages. Shared by the
//! faces, so neither depends on the other.

use crate::domain::result::TaskResult;

/// The readable result, as `cuekit result` prints it (and `top` pages it).
pub fn text(result: &TaskResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let exit = result
        .exit_code
        .map(|c| format!(" (exit {c})"))
        .unwrap_or_default();
    let reason = result
        .reason
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}  {}{exit}{reason}",
        result.task_id,
        result.status.as_str()
    );
    if let Some(session) = &result.agent_session_id {
        let _ = writeln!(out, "  session:  {session}");
    }
    if let Some(check) = &result.check {
        let _ = writeln!(out, "  check:    {}", check.summary());
        for verdict in &check.verdicts {
            let how = if verdict.passed { "passed" } else { "failed" };
            let _ = writeln!(
                out,
                "  round {}:  {how} `{}` ({})",
                verdict.round, verdict.command, verdict.log
            );
            for edit in &verdict.protected_edits {
                let _ = writeln!(out, "            protected, restored: {}", edit.path);
            }
            if !verdict.review_paths.is_empty() {
                let _ = writeln!(
                    out,
                    "            changed, for review: {}",
                    verdict.review_paths.join(", ")
                );
            }
            if let (Some(ran), Some(base)) = (verdict.tests_ran, verdict.base_tests_ran) {
                let _ = writeln!(out, "            tests: {ran} ran (the base: {base})");
            }
        }
    }
    for (n, attempt) in result.attempts.iter().enumerate() {
        let ended = match (&attempt.ended_at, &attempt.reason) {
            (Some(at), Some(reason)) => format!(", ended {at}: {reason}"),
            (Some(at), None) => format!(", ended {at}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  attempt:  {} of {}, started {}{ended}",
            n + 1,
            result.attempts.len(),
            attempt.started_at
        );
    }
    for call in &result.tool_calls {
        let _ = writeln!(
            out,
            "  tool:     {} {} ({})",
            call.name, call.parameters, call.status
        );
    }
    for error in &result.errors {
        let _ = writeln!(
            out,
            "  error:    {}",
            error["message"].as_str().unwrap_or_default()
        );
    }
    // What cuekit made harmless of what a sandboxed child left in your folders.
    for left in result
        .warnings
        .iter()
        .filter_map(|warning| warning.as_str())
        .filter(|warning| warning.starts_with(crate::domain::sandbox::LEFT_NOTE))
    {
        let _ = writeln!(out, "  warning:  {left}");
    }
    if let Some(stats) = &result.stats {
        let n = |key: &str| stats.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
        // A session record counts tokens but not time.
        let took = stats
            .get("duration_ms")
            .and_then(|v| v.as_u64())
            .map(|ms| format!(" in {ms} ms"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  tokens:   {} ({} in, {} out){took}",
            n("total_tokens"),
            n("input_tokens"),
            n("output_tokens"),
        );
    }
    if let Some(files) = &result.files_changed {
        for file in files {
            let _ = writeln!(out, "  changed:  {} {}", file.status, file.path);
        }
    }
    for path in &result.submodules_changed {
        let _ = writeln!(out, "  submodule: {path} changed (a merge refuses it)");
    }
    if let Some(record) = &result.session_record {
        let _ = writeln!(out, "  record:   {}", record.display());
    }
    let text = result
        .transcript_tail
        .as_deref()
        .unwrap_or(&result.final_text);
    for report in &result.reports {
        let _ = writeln!(
            out,
            "  report:   {} #{} at {}: {}",
            report.kind.as_str(),
            report.seq,
            report.at,
            report.message
        );
    }
    if !text.is_empty() && result.session_record.is_some() {
        // The child's words, as its own session record holds them.
        let _ = writeln!(out, "\nthe child's answer:\n{text}");
    } else if !text.is_empty() {
        let _ = writeln!(out, "\n{text}");
    }
    out.trim_end().to_string()
}

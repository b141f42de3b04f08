//! Text and JSON rendering shared by the subcommands.
//!
//! Every value shown comes from somewhere cuekit does not control: a task record a cloned
//! repository planted, a child's report, a model's answer, a config file. On a terminal,
//! control characters in them would act (retitle the window, clear the screen, move the
//! cursor, hide what follows), so every text face prints values through [`visible`], and JSON
//! escapes them too ([`print_json`], [`json_line`]). What is stored is never altered.

use std::io::Write;

use serde::Serialize;

use crate::ops::TaskView;

pub use crate::domain::display::terminal_text::visible;

/// Prints a line of text output, its values made [`visible`].
pub fn say(text: &str) {
    println!("{}", visible(text));
}

/// [`say`] on stderr.
pub fn say_err(text: &str) {
    eprintln!("{}", visible(text));
}

/// Written as it is serialised, not built first: a listing of a thousand tasks is megabytes.
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // A reader that went away (a closed pipe) has nothing left to tell.
    let _ = write_json(&mut out, value)
        .and_then(|()| writeln!(out).map_err(serde_json::Error::io))
        .and_then(|()| out.flush().map_err(serde_json::Error::io));
}

fn write_json<T: Serialize + ?Sized>(out: &mut impl Write, value: &T) -> serde_json::Result<()> {
    let formatter = Escaping(serde_json::ser::PrettyFormatter::new());
    value.serialize(&mut serde_json::Serializer::with_formatter(out, formatter))
}

/// One value as a line of compact JSON (`events --json`, errors), escaped as [`print_json`].
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    value
        .serialize(&mut serde_json::Serializer::with_formatter(
            &mut out,
            Escaping(serde_json::ser::CompactFormatter),
        ))
        .expect("views serialize");
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// serde_json escapes the C0 controls in strings, not DEL or the C1 range: those become
/// `\u007f` … `\u009f` here, the same string to any JSON reader.
struct Escaping<F>(F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(|c: char| c.is_control()) {
            let c = rest[at..].chars().next().expect("found");
            writer.write_all(&rest.as_bytes()[..at])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    // The pretty formatter's layout, passed through.
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// How a task stands, in the words of [`crate::domain::plain`] (a stop under way said so).
pub fn said(task: &TaskView) -> crate::domain::plain::Said {
    let mut said = crate::domain::plain::said(
        task.status,
        task.reason.as_deref(),
        task.phase.as_deref(),
        task.hint.as_deref(),
    );
    if task.stopping {
        said.word = "stopping";
    }
    said
}

/// The one-line summary used by list and wait: the status in words, the exit code, why. The
/// status word is the one part not made [`visible`]: it is cuekit's own, and coloured.
pub fn task_line(task: &TaskView) -> String {
    let said = said(task);
    let exit = task
        .exit_code
        .map(|code| format!(" (exit {code})"))
        .unwrap_or_default();
    let detail = said
        .detail
        .as_deref()
        .map(|d| format!(" — {d}"))
        .unwrap_or_default();
    format!(
        "{}  {}{}",
        visible(&task.id),
        super::style::word(task.status, said.word, 0),
        visible(&format!("{exit}{detail}"))
    )
}

/// The full view used by submit and status.
pub fn task_details(task: &TaskView) -> String {
    let mut out = task_line(task);
    out.push_str(&visible(&details_below_the_line(task)));
    out
}

/// A queued task's place and what holds it; a retried task's attempts.
fn queue_lines(queue: &crate::ops::QueueView) -> String {
    let mut out = String::new();
    let mut waits = Vec::new();
    if let Some(place) = queue.place {
        waits.push(format!("place {place}"));
    }
    if !queue.waiting_for.is_empty() {
        waits.push(format!("after {}", queue.waiting_for.join(", ")));
    }
    if let Some(limit) = &queue.limit {
        waits.push(format!("limit {limit}"));
    }
    if let Some(at) = &queue.not_before {
        waits.push(format!("not before {at}"));
    }
    if queue.priority != 0 {
        waits.push(format!("priority {}", queue.priority));
    }
    if !waits.is_empty() {
        out.push_str(&format!("\n  queue:      {}", waits.join(", ")));
    }
    if queue.attempt > 0 || queue.attempts_max.is_some() {
        let of = queue
            .attempts_max
            .map(|max| format!(" of {max}"))
            .unwrap_or_default();
        let ended: Vec<String> = queue
            .attempts
            .iter()
            .filter_map(|a| a.reason.as_deref())
            .map(String::from)
            .collect();
        let ended = if ended.is_empty() {
            String::new()
        } else {
            format!(" (ended before: {})", ended.join(", "))
        };
        match queue
            .line
            .as_deref()
            .and_then(|l| l.strip_prefix("attempt "))
        {
            Some(line) => out.push_str(&format!("\n  attempt:    {line}{ended}")),
            None => out.push_str(&format!("\n  attempt:    {}{of}{ended}", queue.attempt)),
        }
    }
    out
}

/// [`task_details`] after its first line.
fn details_below_the_line(task: &TaskView) -> String {
    let mut out = String::new();
    let mode = task.mode.map_or("-", |m| m.as_str());
    let model = task
        .model
        .as_deref()
        .map(|m| format!(", model {m}"))
        .unwrap_or_default();
    out.push_str(&format!(
        "\n  agent:      {} ({mode}{model})",
        task.agent_kind
    ));
    out.push_str(&format!(
        "\n  objective:  {}",
        first_line(&task.objective, 100)
    ));
    if let Some(hint) = &task.hint {
        out.push_str(&format!("\n  hint:       {hint}"));
    }
    if let Some(check) = &task.check {
        out.push_str(&format!("\n  check:      {}", check.summary));
        if check.changed_since_check {
            out.push_str(" (changed since its check: `merge` takes the checked commit)");
        }
        if let Some(last) = check.state.verdicts.last() {
            out.push_str(&format!("\n  check log:  {}", last.log));
            if !last.protected_edits.is_empty() {
                out.push_str(&format!(
                    "\n  protected:  {} (restored for the check)",
                    last.protected_paths().join(", ")
                ));
            }
            out.push_str(&verdict_lines(last));
        }
    }
    if let Some(queue) = &task.queue {
        out.push_str(&queue_lines(queue));
    }
    if let Some(host) = &task.host {
        out.push_str(&format!(
            "\n  host:       {host} (the paths below are the host's)"
        ));
    }
    if let Some(role) = &task.role {
        out.push_str(&format!("\n  role:       {role}"));
    }
    if let Some(team) = &task.team {
        out.push_str(&format!("\n  team:       {team}"));
    }
    if let Some(report) = &task.last_report {
        out.push_str(&format!(
            "\n  report:     {} #{} at {}: {}",
            report.kind.as_str(),
            report.seq,
            report.at,
            first_line(&report.message, 100)
        ));
    }
    for warning in &task.warnings {
        out.push_str(&format!("\n  warning:    {warning}"));
    }
    if let (Some(branch), Some(worktree)) = (&task.branch, &task.worktree) {
        let base = task.base_ref.as_deref().unwrap_or("?");
        out.push_str(&format!("\n  branch:     {branch} (from {base})"));
        out.push_str(&format!("\n  worktree:   {}", worktree.display()));
        if let Some(stat) = &task.diff_stat {
            out.push_str(&format!("\n  changes:    {stat}"));
        }
        if !task.conflicts.is_empty() {
            out.push_str(&format!(
                "\n  conflicts:  {} (`cuekit conflicts`)",
                task.conflicts.join(", ")
            ));
        }
    }
    out.push_str(&format!("\n  transcript: {}", task.transcript.display()));
    if let Some(attach) = &task.attach_hint
        && !task.status.is_terminal()
    {
        out.push_str(&format!(
            "\n  attach:     {attach}   (or `cuekit attach {}`)",
            task.id
        ));
    }
    if task.host.is_some() && !task.status.is_terminal() {
        out.push_str(&format!("\n  attach:     cuekit attach {}", task.id));
    }
    out
}

pub fn first_line(text: &str, max_chars: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > max_chars || text.lines().nth(1).is_some() {
        let cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// A verdict's manifest changes and test counts, for `status ID`.
fn verdict_lines(verdict: &crate::domain::check::Verdict) -> String {
    let mut out = String::new();
    if !verdict.review_paths.is_empty() {
        out.push_str(&format!(
            "\n  review:     {} (changed; a merge needs --yes)",
            verdict.review_paths.join(", ")
        ));
    }
    match (verdict.tests_ran, verdict.base_tests_ran) {
        (None, None) => {}
        (ran, base) => {
            let count = |n: Option<u64>| n.map_or("no count".to_string(), |n| n.to_string());
            out.push_str(&format!(
                "\n  tests:      {} ran (the base: {})",
                count(ran),
                count(base)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty_json<T: Serialize + ?Sized>(value: &T) -> String {
        let mut out = Vec::new();
        write_json(&mut out, value).expect("views serialize");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    #[test]
    fn json_escapes_del_and_c1_and_reads_back_the_same() {
        let value = serde_json::json!({"objective": "\x1b[2J\u{7f}\u{9b}2J ✓"});
        let line = json_line(&value);
        assert_eq!(line, r#"{"objective":"\u001b[2J\u007f\u009b2J ✓"}"#);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line).unwrap(),
            value
        );
        let nested = serde_json::json!({"a": [1, {"b": []}, {}], "c": {"d": null}, "e": []});
        assert_eq!(
            pretty_json(&nested),
            serde_json::to_string_pretty(&nested).unwrap()
        );
    }
}

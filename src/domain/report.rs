//! A child's report to its parent (`cuekit report`), in words the child chose: typed so a parent
//! can branch on `blocked` without reading prose. Each report is one line of the task's
//! `events.jsonl`, of its own event type so it is never mistaken for a line of the agent's
//! stream (which shares the file for Gemini batch tasks).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `type` of a report line in `events.jsonl`.
pub const EVENT_TYPE: &str = "cuekit_report";

/// What a child asks to report: its kind, words and detail (`cuekit report`, or a sandboxed
/// child's dropped file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportRequest {
    pub kind: ReportKind,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    /// Still working; here is where things stand.
    #[default]
    Progress,
    /// Cannot go on without the parent (a decision, access, an input).
    Blocked,
    /// Finished, in the child's own judgement.
    Done,
    /// Gave up, in the child's own judgement.
    Failed,
}

impl ReportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Progress => "progress",
            ReportKind::Blocked => "blocked",
            ReportKind::Done => "done",
            ReportKind::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// 1 for the task's first report, counting up: `wait --until report` compares these.
    pub seq: u64,
    pub kind: ReportKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    pub at: String,
}

impl Report {
    /// The `events.jsonl` line (without its newline).
    pub fn event_line(&self) -> Vec<u8> {
        let mut event = serde_json::to_value(self).expect("reports serialize");
        event["type"] = Value::String(EVENT_TYPE.to_string());
        serde_json::to_vec(&event).expect("reports serialize")
    }

    /// The report on one `events.jsonl` line, if it is one.
    pub fn from_event_line(line: &str) -> Option<Report> {
        // Cheap test first: most lines of a Gemini stream are not reports.
        if !line.contains(EVENT_TYPE) {
            return None;
        }
        let value: Value = serde_json::from_str(line).ok()?;
        if value.get("type")?.as_str()? != EVENT_TYPE {
            return None;
        }
        serde_json::from_value(value).ok()
    }
}

/// Whether a parsed event object is a report (the stream digest leaves these out).
pub fn is_report_event(event: &Value) -> bool {
    event.get("type").and_then(Value::as_str) == Some(EVENT_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_through_its_event_line() {
        let report = Report {
            seq: 3,
            kind: ReportKind::Blocked,
            message: "need the \"API\" key\n".into(),
            data: Some(serde_json::json!({"missing": ["GEMINI_API_KEY"]})),
            at: "2026-11-30T20:00:00.000Z".into(),
        };
        let line = String::from_utf8(report.event_line()).unwrap();
        assert!(!line.contains('\n'));
        assert!(line.contains(r#""type":"cuekit_report""#), "{line}");
        assert_eq!(Report::from_event_line(&line), Some(report));
        // An agent event that merely mentions the word is not a report.
        let agent = r#"{"type":"message","role":"assistant","content":"cuekit_report"}"#;
        assert_eq!(Report::from_event_line(agent), None);
        assert_eq!(Report::from_event_line("not json cuekit_report"), None);
    }
}

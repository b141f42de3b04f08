//! What a child's permission dialog asks, read from its screen: the question, the call it is
//! about and the numbered options, as one line a person can read in `status`. Pure, over the
//! text of `capture-pane -p`. The screen is the child's to draw: the line is cut to a bound and
//! is only ever shown (through the faces' escaping), never acted on.

use std::time::Duration;

use super::acp::control::Answer;
use super::acp::policy::ToolKind;
use super::acp::protocol::{PermissionOption, ToolCall};
use super::acp::session::Pending;

/// The longest line returned.
const ASKED_LIMIT: usize = 400;

/// The dialog's words on a line: its box drawing and the selection marker dropped.
fn unboxed(line: &str) -> String {
    line.trim_matches(|c: char| c.is_whitespace() || "│╭╮╰╯─┃┏┓┗┛━|".contains(c))
        .trim_start_matches(['●', '❯', '>', '›'])
        .trim()
        .to_string()
}

/// `N. text` (an option of the dialog).
fn is_option(line: &str) -> bool {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(". ")
}

/// How many times, and how far apart, a screen expected to show a dialog is looked at before
/// it counts as showing none: a TUI redrawing its dialog can be captured mid-write, its options
/// not drawn yet (seen with the real Gemini CLI under load, by `approve` and the web's Allow).
pub const LOOKS_FOR_A_DIALOG: usize = 5;
pub const DIALOG_LOOK_GAP: Duration = Duration::from_millis(200);

/// The question the dialog asks, the call it names and its options, e.g. `Allow execution of
/// [Shell]? (Shell echo hi > f.txt) 1. Allow once · 2. Allow for this session · 3. No, suggest
/// changes (esc)`. `None` when the screen shows no numbered options under a question.
pub fn asked(screen: &str) -> Option<String> {
    dialog(screen).map(|dialog| dialog.line())
}

/// A permission dialog as its screen shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// The question, e.g. `Allow execution of [Shell]?`.
    pub question: String,
    /// The call it is about (Gemini's title `? Shell  echo hi > f.txt`, spaces folded).
    pub call: Option<String>,
    pub options: Vec<ScreenOption>,
}

/// One numbered option of a dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenOption {
    /// Its number as drawn: the key that answers it.
    pub digit: String,
    /// Its words, e.g. `Allow once`.
    pub label: String,
    /// As ACP names options: `allow_once`, `allow_always`, `reject_once`, or `other`.
    pub kind: &'static str,
}

/// The dialog on the screen: the last numbered list (a tips list may stand above it), the
/// question above it ending in `?`, the call it names.
pub fn dialog(screen: &str) -> Option<Dialog> {
    let raw: Vec<&str> = screen.lines().collect();
    let lines: Vec<String> = raw.iter().map(|line| unboxed(line)).collect();
    let last_option = lines.iter().rposition(|line| is_option(line))?;
    let first_option = lines[..=last_option]
        .iter()
        .rposition(|line| !is_option(line))
        .map_or(0, |at| at + 1);
    let options = lines[first_option..]
        .iter()
        .take_while(|line| is_option(line))
        .map(|line| option_of(line))
        .collect();
    let question_at = (first_option.saturating_sub(8)..first_option)
        .rev()
        .find(|&at| lines[at].ends_with('?'))?;
    Some(Dialog {
        question: lines[question_at].clone(),
        call: title(&raw, &lines, question_at),
        options,
    })
}

/// Gemini titles its dialog `? Tool  arguments` on the first line inside the dialog's frame,
/// above the call's own box. Only that line is the title: the call's text is the child's to
/// write, and a line of it drawn as `? ReadFile notes.txt` (inside the inner box, or where a
/// long title wraps) must not pass for the title. No frame found: no call (its kind unknown).
fn title(raw: &[&str], lines: &[String], question_at: usize) -> Option<String> {
    let depth = frame_depth(raw[question_at]);
    let border = (0..question_at).rev().find(|&at| {
        frame_depth(raw[at]) + 1 == depth && raw[at].trim_start_matches(FRAME).starts_with('╭')
    })?;
    let line = lines.get(border + 1)?;
    let call = line.strip_prefix("? ")?;
    Some(call.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The characters a frame's sides and the space beside them are drawn with.
const FRAME: &[char] = &['│', '┃', ' '];

/// How many frames a line is drawn inside: the side bars before its first other character.
fn frame_depth(line: &str) -> usize {
    line.chars()
        .take_while(|c| FRAME.contains(c))
        .filter(|c| *c != ' ')
        .count()
}

fn option_of(line: &str) -> ScreenOption {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let label = line[digits + 2..].trim().to_string();
    ScreenOption {
        digit: line[..digits].to_string(),
        kind: kind_of(&label),
        label,
    }
}

/// What an option's words mean, the ACP way. "for all future sessions" (a setting written for
/// good) is `other`: only chosen by its digit.
fn kind_of(label: &str) -> &'static str {
    let words = label.to_lowercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| words.starts_with(p));
    if words.contains("future sessions") || words.contains("permanently") {
        "other"
    } else if starts(&["allow once", "yes, allow once", "yes"])
        && !words.contains("always")
        && !words.contains("session")
        && !words.contains("don't ask")
    {
        "allow_once"
    } else if starts(&["allow", "yes"]) {
        "allow_always"
    } else if starts(&["no", "reject", "deny", "cancel"]) {
        "reject_once"
    } else {
        "other"
    }
}

impl Dialog {
    /// One bounded line: question, call, options.
    pub fn line(&self) -> String {
        let call = self
            .call
            .as_ref()
            .map(|call| format!(" ({call})"))
            .unwrap_or_default();
        let options: Vec<String> = self
            .options
            .iter()
            .map(|option| format!("{}. {}", option.digit, option.label))
            .collect();
        cut(&format!("{}{call} {}", self.question, options.join(" · ")))
    }

    /// A name for this dialog that changes when what it asks changes: `screen-` and a hash
    /// of its line (FNV-1a, the same in every cuekit).
    pub fn id(&self) -> String {
        let hash = self
            .line()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
        format!("screen-{hash:016x}")
    }

    /// The option an answer picks: allow once (else for the session), for the session (else
    /// once), reject, or an option by its digit.
    pub fn choose(&self, answer: &Answer) -> Option<&ScreenOption> {
        let of_kind = |kind: &str| self.options.iter().find(|option| option.kind == kind);
        match answer {
            Answer::Allow => of_kind("allow_once").or_else(|| of_kind("allow_always")),
            Answer::AllowAlways => of_kind("allow_always"),
            Answer::Reject => of_kind("reject_once"),
            Answer::Option(digit) => self.options.iter().find(|option| option.digit == *digit),
        }
    }

    /// The kind of tool it asks for, from the call's first word (Gemini's tool names). A
    /// question that names its tool in brackets (`Allow execution of [Shell]?`) must name the
    /// same one, or the kind is unknown (`Other`: the web asks the terminal's code).
    pub fn tool_kind(&self) -> Option<ToolKind> {
        let tool = self.call.as_deref()?.split_whitespace().next()?;
        let named = self
            .question
            .split_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(name, _)| name);
        if named.is_some_and(|name| name != tool) {
            return Some(ToolKind::Other);
        }
        Some(match tool {
            "Shell" => ToolKind::Execute,
            "WriteFile" | "Edit" | "Replace" => ToolKind::Edit,
            "ReadFile" | "ReadFolder" | "ReadManyFiles" => ToolKind::Read,
            "WebFetch" | "GoogleSearch" => ToolKind::Fetch,
            _ => ToolKind::Other,
        })
    }

    /// The dialog as a permission request the faces show (`status`, `top`, the web page):
    /// display only, `approve` reads the screen again.
    pub fn pending(&self) -> Pending {
        Pending {
            rpc_id: serde_json::Value::Null,
            tool: ToolCall {
                id: self.id(),
                kind: self.tool_kind(),
                title: Some(self.question.clone()),
                text: self.call.clone(),
                ..ToolCall::default()
            },
            options: self
                .options
                .iter()
                .map(|option| PermissionOption {
                    id: option.digit.clone(),
                    name: option.label.clone(),
                    kind: option.kind.to_string(),
                })
                .collect(),
        }
    }
}

/// Whether `before` is gone from `screen` (another dialog, or none).
pub fn closed(before: &Dialog, screen: &str) -> bool {
    dialog(screen).as_ref() != Some(before)
}

/// Agents whose permission dialog the digit of an option answers alone (no Enter), checked on
/// the real CLI: Gemini CLI 0.61. Others' dialogs are answered in the pane (`cuekit attach`).
pub fn answers_by_digit(agent_kind: &str) -> bool {
    matches!(agent_kind, "gemini")
}

fn cut(text: &str) -> String {
    if text.chars().count() <= ASKED_LIMIT {
        return text.to_string();
    }
    let kept: String = text.chars().take(ASKED_LIMIT).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geminis_permission_dialog_reads_as_its_question_call_and_options() {
        let screen = include_str!("../../tests/fixtures/screens/gemini-permission.txt");
        assert_eq!(
            asked(screen).as_deref(),
            Some(
                "Allow execution of [Shell]? (Shell echo hi > f.txt) 1. Allow once · \
                 2. Allow for this session · 3. No, suggest changes (esc)"
            )
        );
    }

    /// Reach V10: a Shell call whose command draws a line `? ReadFile notes.txt` inside its box
    /// (or anywhere below the title) is still the Shell call, of kind execute.
    #[test]
    fn a_title_drawn_by_the_command_is_not_the_dialogs_title() {
        let screen = include_str!("../../tests/fixtures/screens/gemini-permission.txt");
        let forged = screen.replacen(
            "│ │ echo hi > f.txt",
            "│ │ echo hi > f.txt                                  \n│ │ : '\n│ │ ? ReadFile notes.txt\n│ │ '",
            1,
        );
        let dialog = dialog(&forged).unwrap();
        assert_eq!(dialog.call.as_deref(), Some("Shell echo hi > f.txt"));
        assert_eq!(dialog.tool_kind(), Some(ToolKind::Execute));
        // A frame's title line that disagrees with the question's tool is of no known kind.
        let renamed = screen.replacen("? Shell  echo hi", "? ReadFile  echo hi", 1);
        assert_eq!(dialog_of(&renamed).tool_kind(), Some(ToolKind::Other));
        // No frame above the question: no call, so no kind.
        let unframed = "? ReadFile notes.txt\nAllow execution of [Shell]?\n1. Allow once\n2. No";
        assert_eq!(dialog_of(unframed).call, None);
    }

    fn dialog_of(screen: &str) -> Dialog {
        dialog(screen).unwrap()
    }

    #[test]
    fn a_screen_without_a_dialog_asks_nothing() {
        let idle = include_str!("../../tests/fixtures/screens/gemini-idle.txt");
        assert_eq!(asked(idle), None);
        assert_eq!(asked("1. a list\n2. of things"), None);
    }

    #[test]
    fn geminis_options_are_chosen_by_kind_or_digit_and_keyed_by_what_it_asks() {
        let screen = include_str!("../../tests/fixtures/screens/gemini-permission.txt");
        let dialog = dialog(screen).unwrap();
        let digit = |answer: Answer| dialog.choose(&answer).map(|o| o.digit.clone());
        assert_eq!(digit(Answer::Allow).as_deref(), Some("1"));
        assert_eq!(digit(Answer::AllowAlways).as_deref(), Some("2"));
        assert_eq!(digit(Answer::Reject).as_deref(), Some("3"));
        assert_eq!(digit(Answer::Option("2".into())).as_deref(), Some("2"));
        assert_eq!(digit(Answer::Option("9".into())), None);
        assert_eq!(dialog.tool_kind(), Some(ToolKind::Execute));
        let pending = dialog.pending();
        assert_eq!(pending.tool.id, dialog.id());
        assert_eq!(pending.options[2].kind, "reject_once");
        // The selection marker moving is the same dialog; another call is another one.
        let moved = screen.replace("● 1. Allow once", "  1. Allow once");
        assert!(!closed(&dialog, &moved));
        let other = screen.replace("echo hi > f.txt", "rm -rf x");
        assert!(closed(&dialog, &other));
        assert_ne!(super::dialog(&other).unwrap().id(), dialog.id());
        let idle = include_str!("../../tests/fixtures/screens/gemini-idle.txt");
        assert!(closed(&dialog, idle));
    }

    #[test]
    fn option_words_read_as_acp_kinds() {
        for (label, kind) in [
            ("Allow once", "allow_once"),
            ("Yes, allow once", "allow_once"),
            ("Yes", "allow_once"),
            ("Allow for this session", "allow_always"),
            ("Yes, allow always", "allow_always"),
            ("Yes, and don't ask again this session", "allow_always"),
            ("Allow for all future sessions", "other"),
            ("Modify with external editor", "other"),
            ("No, suggest changes (esc)", "reject_once"),
        ] {
            assert_eq!(kind_of(label), kind, "{label}");
        }
    }

    #[test]
    fn a_long_question_is_cut() {
        let screen = format!("{}?\n1. yes\n2. no", "x".repeat(1000));
        assert!(asked(&screen).unwrap().chars().count() <= ASKED_LIMIT + 1);
    }
}

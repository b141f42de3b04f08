//! Reading a child's screen: does it wait on a human (a login, trust or permission dialog, or
//! an idle prompt), is it busy, and what sits in its input line. Pure functions over the text
//! of `capture-pane -p`; the patterns are per-adapter data ([`ScreenRules`]), so a changed agent
//! UI is a data change.

use serde::Serialize;

/// Why a running child needs its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attention {
    AuthRequired,
    TrustRequired,
    PermissionPrompt,
    /// The turn is over and the child waits for the next message.
    IdleAtPrompt,
}

impl Attention {
    pub fn as_str(self) -> &'static str {
        match self {
            Attention::AuthRequired => "auth_required",
            Attention::TrustRequired => "trust_required",
            Attention::PermissionPrompt => "permission_prompt",
            Attention::IdleAtPrompt => "idle_at_prompt",
        }
    }

    /// A dialog eats typed input: steering text would pick menu items instead of arriving.
    pub fn blocks_input(self) -> bool {
        self != Attention::IdleAtPrompt
    }

    pub fn hint(self) -> &'static str {
        match self {
            Attention::AuthRequired => {
                "the child is on its login screen: attach and sign in, or set the agent's API key and resubmit"
            }
            Attention::TrustRequired => {
                "the child asks whether to trust this folder: attach and answer"
            }
            Attention::PermissionPrompt => {
                "the child asks to approve a tool call: attach and answer, or resubmit with permissions bypassed"
            }
            Attention::IdleAtPrompt => {
                "the child finished its turn and waits: steer it or cancel it"
            }
        }
    }
}

/// One adapter's screen patterns. Each is a plain substring, matched against the screen's last
/// [`ScreenRules::TAIL_LINES`] non-blank lines.
#[derive(Debug)]
pub struct ScreenRules {
    /// Dialogs, in priority order, each with the substrings that identify it (any one matches).
    pub dialogs: &'static [(Attention, &'static [&'static str])],
    /// Shown while the child works on a turn.
    pub busy: &'static [&'static str],
    /// Shown when the child is ready for a message (with no busy marker).
    pub ready: &'static [&'static str],
    /// Starts of the input line (after leading spaces); the last such line is the input.
    pub input_prefixes: &'static [&'static str],
    /// What to do on this agent's login screen, where that is more than [`Attention::hint`]
    /// says (a login that no longer works, another way to sign in).
    pub login_hint: Option<&'static str>,
}

impl ScreenRules {
    /// The hint for what the screen shows: the agent's own for its login screen.
    pub fn hint(&self, attention: Attention) -> &'static str {
        match (attention, self.login_hint) {
            (Attention::AuthRequired, Some(hint)) => hint,
            _ => attention.hint(),
        }
    }

    pub const TAIL_LINES: usize = 30;
}

fn tail(screen: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = screen
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(ScreenRules::TAIL_LINES);
    lines.drain(..start);
    lines
}

fn contains_any(lines: &[&str], patterns: &[&str]) -> bool {
    lines
        .iter()
        .any(|line| patterns.iter().any(|pattern| line.contains(pattern)))
}

pub fn is_busy(rules: &ScreenRules, screen: &str) -> bool {
    contains_any(&tail(screen), rules.busy)
}

/// What the child waits on, if anything. `scrolled` says whether the pane has history above
/// its screen.
///
/// Idle needs evidence that a turn happened — a message echoed above the input line, or
/// output scrolled off — because a TUI draws its ready prompt a moment before it takes the
/// initial prompt from its command line.
pub fn detect(rules: &ScreenRules, screen: &str, scrolled: bool) -> Option<Attention> {
    let lines = tail(screen);
    for (attention, patterns) in rules.dialogs {
        if contains_any(&lines, patterns) {
            return Some(*attention);
        }
    }
    if contains_any(&lines, rules.busy) || !contains_any(&lines, rules.ready) {
        return None;
    }
    let prompt_lines = screen
        .lines()
        .filter(|line| is_input_line(rules, line))
        .count();
    (scrolled || prompt_lines >= 2).then_some(Attention::IdleAtPrompt)
}

fn is_input_line(rules: &ScreenRules, line: &str) -> bool {
    let line = line.trim_start();
    rules
        .input_prefixes
        .iter()
        .any(|prefix| line.starts_with(prefix))
}

/// The child's input line as shown (trailing blanks dropped), if the screen has one.
pub fn input_line<'a>(rules: &ScreenRules, screen: &'a str) -> Option<&'a str> {
    screen
        .lines()
        .rev()
        .find(|line| is_input_line(rules, line))
        .map(str::trim_end)
}

/// What the input line holds, without its prompt.
fn input_text<'a>(rules: &ScreenRules, line: &'a str) -> &'a str {
    let line = line.trim_start();
    let prompt = rules
        .input_prefixes
        .iter()
        .find(|prefix| line.starts_with(*prefix));
    line[prompt.map_or(0, |p| p.len())..].trim()
}

/// Whether the agent sits at its prompt with nothing typed: no dialog, not busy, its ready
/// marker shown and its input line empty (or showing only its placeholder, which is the ready
/// marker itself). Where a line is typed for someone, this is what makes it not the middle of
/// a human's sentence or of the agent's own turn.
pub fn awaits_message(rules: &ScreenRules, screen: &str) -> bool {
    let lines = tail(screen);
    let dialog = rules
        .dialogs
        .iter()
        .any(|(_, patterns)| contains_any(&lines, patterns));
    if dialog || contains_any(&lines, rules.busy) || !contains_any(&lines, rules.ready) {
        return false;
    }
    input_line(rules, screen).is_some_and(|_| typed_text(rules, screen).is_none())
}

/// What the input line shows typed: its text, unless it is empty or the agent's placeholder.
fn typed_text<'a>(rules: &ScreenRules, screen: &'a str) -> Option<&'a str> {
    input_line(rules, screen)
        .map(|line| input_text(rules, line))
        .filter(|text| !text.is_empty() && !rules.ready.iter().any(|ready| text.contains(ready)))
}

/// Whether the child has drawn what was typed into its input line, so an Enter sent now
/// arrives apart from the text. On a loaded machine an agent may not have read the keys yet,
/// and Gemini turns an Enter that arrives with its text into a newline. True where cuekit
/// cannot find the input line: there is nothing to wait for.
pub fn shows_typed_input(rules: &ScreenRules, screen: &str) -> bool {
    input_line(rules, screen).is_none() || typed_text(rules, screen).is_some()
}

/// Whether a typed message was submitted, judging by the screen before Enter (`typed_screen`,
/// text in the input) and after: the child turned busy, or the typed text left the input line.
/// (A line that merely changed is not enough: a TUI may echo the Enter it ignored.) For an agent
/// whose input line cuekit cannot find, any change of the screen is the best evidence there is.
pub fn was_submitted(rules: &ScreenRules, typed_screen: &str, screen_after: &str) -> bool {
    if is_busy(rules, screen_after) {
        return true;
    }
    if rules.input_prefixes.is_empty() {
        return screen_after.trim_end() != typed_screen.trim_end();
    }
    let after = typed_text(rules, screen_after);
    match typed_text(rules, typed_screen) {
        Some(text) => !after.is_some_and(|shown| shown.contains(text)),
        // The text never showed before the Enter: taken only if the screen changed and the
        // line holds nothing now (text that shows up after the Enter was read late, and the
        // Enter with it).
        None => after.is_none() && screen_after.trim_end() != typed_screen.trim_end(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_awaits_a_message_only_when_idle_and_empty() {
        let rules = &crate::domain::adapter::lookup("gemini").unwrap().screen;
        let idle = "✦ First answer.\n────\n >   Type your message or @path/to/file\n workspace\n";
        assert!(awaits_message(rules, idle));
        let typing = "✦ First answer.\n────\n > fix the bu\n workspace\n";
        assert!(!awaits_message(rules, typing));
        let busy = "⠋ Thinking (esc to cancel, 2s)\n >   Type your message or @path/to/file\n";
        assert!(!awaits_message(rules, busy));
        let dialog = "Allow execution of: 'ls'?\n >   Type your message or @path/to/file\n";
        assert!(!awaits_message(rules, dialog));
        assert!(
            !awaits_message(rules, "$ \n"),
            "a shell is no agent's prompt"
        );
    }

    static RULES: ScreenRules = ScreenRules {
        dialogs: &[
            (
                Attention::AuthRequired,
                &["How would you like to authenticate"],
            ),
            (Attention::PermissionPrompt, &["Allow once"]),
        ],
        busy: &["esc to cancel"],
        ready: &["Type your message"],
        input_prefixes: &[">"],
        login_hint: None,
    };

    #[test]
    fn dialogs_win_over_prompts_and_busy_hides_idle() {
        assert_eq!(
            detect(
                &RULES,
                "x\n How would you like to authenticate?\n > Type your message\n",
                false
            ),
            Some(Attention::AuthRequired)
        );
        let idle = " > question\nanswer\n > Type your message\n";
        assert_eq!(detect(&RULES, idle, false), Some(Attention::IdleAtPrompt));
        assert_eq!(
            detect(&RULES, &format!("Thinking (esc to cancel)\n{idle}"), false),
            None
        );
        assert_eq!(detect(&RULES, "plain output\n", true), None);
    }

    #[test]
    fn a_ready_prompt_before_any_turn_is_not_idle() {
        let fresh = "banner\ntips\n > Type your message\n";
        assert_eq!(detect(&RULES, fresh, false), None);
        // Once output has scrolled off, the echo may be gone but turns surely happened.
        assert_eq!(detect(&RULES, fresh, true), Some(Attention::IdleAtPrompt));
    }

    #[test]
    fn only_the_screen_tail_counts() {
        let mut screen = String::from("How would you like to authenticate\n");
        for i in 0..ScreenRules::TAIL_LINES {
            screen.push_str(&format!("line {i}\n"));
        }
        assert_eq!(detect(&RULES, &screen, false), None);
    }

    #[test]
    fn input_line_is_the_last_prompt_line() {
        let screen = " > first question\nanswer\n > half typed   \nstatus bar\n";
        assert_eq!(input_line(&RULES, screen), Some(" > half typed"));
        assert!(!was_submitted(&RULES, screen, screen));
        assert!(was_submitted(&RULES, screen, " > Type your message\n"));
        assert!(was_submitted(
            &RULES,
            screen,
            " > half typed\n(esc to cancel)\n"
        ));
        // An ignored Enter echoed into the line does not count as a submit.
        assert!(!was_submitted(&RULES, screen, " > half typed^M\n"));
        assert!(was_submitted(&RULES, screen, "reply\n >\n"));
    }

    #[test]
    fn text_drawn_only_after_the_enter_was_not_submitted() {
        // A loaded agent read the keys late: before the Enter its line showed the placeholder.
        let placeholder = "answer\n > Type your message\nstatus bar\n";
        assert!(!shows_typed_input(&RULES, placeholder));
        assert!(shows_typed_input(&RULES, " > /quit\n"));
        assert!(shows_typed_input(&RULES, "no prompt here\n"));
        assert!(!was_submitted(&RULES, placeholder, "answer\n > /quit\n\n"));
        assert!(was_submitted(&RULES, placeholder, "answer\n/quit\n >\n"));
        assert!(!was_submitted(&RULES, placeholder, placeholder));
    }

    #[test]
    fn without_an_input_line_any_screen_change_counts() {
        let blind = ScreenRules {
            dialogs: &[],
            busy: &[],
            ready: &[],
            input_prefixes: &[],
            login_hint: None,
        };
        assert!(!was_submitted(&blind, "prompt: hi\n", "prompt: hi\n\n"));
        assert!(was_submitted(
            &blind,
            "prompt: hi\n",
            "prompt: hi\nanswer\n"
        ));
    }
}

//! What a child's permission dialog asks, read from its screen: the question, the call it is
//! about and the numbered options, as one line a person can read in `status`. Pure, over the
//! text of `capture-pane -p`. The screen is the child's to draw: the line is cut to a bound and
//! is only ever shown (through the faces' escaping), never acted on.

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

/// The question the dialog asks, the call it names and its options, e.g. `Allow execution of
/// [Shell]? (Shell echo hi > f.txt) 1. Allow once · 2. Allow for this session · 3. No, suggest
/// changes (esc)`. `None` when the screen shows no numbered options under a question.
pub fn asked(screen: &str) -> Option<String> {
    let lines: Vec<String> = screen.lines().map(unboxed).collect();
    // The last numbered list on the screen (a tips list may stand above the dialog).
    let last_option = lines.iter().rposition(|line| is_option(line))?;
    let first_option = lines[..=last_option]
        .iter()
        .rposition(|line| !is_option(line))
        .map_or(0, |at| at + 1);
    let options: Vec<&str> = lines[first_option..]
        .iter()
        .take_while(|line| is_option(line))
        .map(String::as_str)
        .collect();
    let question = lines[..first_option]
        .iter()
        .rev()
        .take(8)
        .find(|line| line.ends_with('?'))?;
    // Gemini titles its dialog `? Tool  arguments`.
    let call = lines[..first_option]
        .iter()
        .rev()
        .take(20)
        .find(|line| line.starts_with("? "))
        .map(|line| {
            format!(
                " ({})",
                line[2..].split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .unwrap_or_default();
    let text = format!("{question}{call} {}", options.join(" · "));
    Some(cut(&text))
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

    #[test]
    fn a_screen_without_a_dialog_asks_nothing() {
        let idle = include_str!("../../tests/fixtures/screens/gemini-idle.txt");
        assert_eq!(asked(idle), None);
        assert_eq!(asked("1. a list\n2. of things"), None);
    }

    #[test]
    fn a_long_question_is_cut() {
        let screen = format!("{}?\n1. yes\n2. no", "x".repeat(1000));
        assert!(asked(&screen).unwrap().chars().count() <= ASKED_LIMIT + 1);
    }
}

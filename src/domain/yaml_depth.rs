//! YAML refused past a nesting depth before it is parsed. A project's `.cuekit.yaml`, role
//! profile or team spec arrives with whatever repository was cloned, and the parser takes time
//! that grows with the square of the nesting (100 000 nested brackets: half a minute). No file
//! of cuekit's nests more than a few levels, so a cheap scan counts the nesting first (flow
//! brackets, indentation, `- ` items on one line) and a file past [`MAX_DEPTH`] never reaches
//! the parser. The scan may count a level too many (a bracket inside a plain word); never too
//! few for brackets, the one nesting that is cheap to write.

/// The deepest nesting a YAML file cuekit reads may have.
pub const MAX_DEPTH: usize = 64;

/// The words of the error for a file nested past [`MAX_DEPTH`].
pub fn message() -> String {
    format!("nested more than {MAX_DEPTH} levels deep; refused before it is parsed")
}

/// Where the nesting first goes past `max` levels: `(line, column)`, both from 1.
pub fn too_deep(text: &str, max: usize) -> Option<(usize, usize)> {
    let mut flow = 0usize;
    // Indentations of the open block levels, and a block scalar's indentation while in one.
    let mut indents: Vec<usize> = Vec::new();
    let mut block_scalar: Option<usize> = None;
    let mut quote: Option<char> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let indent = line.len() - line.trim_start_matches(' ').len();
        let content = line.trim_start_matches(' ');
        if let Some(scalar_indent) = block_scalar {
            if content.is_empty() || indent > scalar_indent {
                continue;
            }
            block_scalar = None;
        }
        if quote.is_none() && flow == 0 {
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            while indents.last().is_some_and(|&open| open >= indent) {
                indents.pop();
            }
            indents.push(indent);
            // `- - - a`: each item marker on the line opens a level.
            let mut rest = content;
            let mut items = 0;
            while let Some(after) = rest
                .strip_prefix("- ")
                .or_else(|| rest.strip_prefix("? "))
                .or_else(|| rest.strip_prefix("-\t"))
            {
                items += 1;
                rest = after.trim_start();
                if indents.len() + items > max {
                    return Some((number, 1));
                }
            }
            if indents.len() + items > max {
                return Some((number, 1));
            }
        }
        let mut previous = ' ';
        let mut escaped = false;
        for (column, c) in line.char_indices() {
            match quote {
                Some('"') => {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        quote = None;
                    }
                }
                Some(_) => {
                    // `''` inside single quotes is a quote; closing and opening again is the
                    // same count.
                    if c == '\'' {
                        quote = None;
                    }
                }
                None => {
                    let token_start = previous.is_whitespace() || "[{,:".contains(previous);
                    match c {
                        '#' if previous.is_whitespace() || column == 0 => break,
                        '"' | '\'' if token_start => quote = Some(c),
                        '[' | '{' => {
                            flow += 1;
                            if indents.len() + flow > max {
                                return Some((number, column + 1));
                            }
                        }
                        ']' | '}' => flow = flow.saturating_sub(1),
                        _ => {}
                    }
                }
            }
            previous = c;
        }
        // A block scalar (`key: |`, `- >-`): its lines are text, not structure.
        if quote.is_none() && flow == 0 {
            let end = line
                .split(" #")
                .next()
                .unwrap_or(line)
                .trim_end()
                .trim_end_matches(['+', '-', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
            if end.ends_with(" |") || end.ends_with(" >") || end == "|" || end == ">" {
                block_scalar = Some(indent);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shallow_files_pass_and_deep_ones_are_found_where_they_go_too_deep() {
        let example = include_str!("../../.cuekit.yaml.example");
        assert_eq!(too_deep(example, MAX_DEPTH), None);
        assert_eq!(too_deep("a:\n  b:\n    c: [1, {d: e}]\n", 5), None);
        assert_eq!(too_deep("a:\n  b:\n    c: [1, {d: e}]\n", 4), Some((3, 12)));
        let brackets = "[".repeat(100_000);
        assert_eq!(too_deep(&brackets, MAX_DEPTH), Some((1, MAX_DEPTH)));
        let items = "- ".repeat(100) + "x\n";
        assert!(too_deep(&items, MAX_DEPTH).is_some());
        let mut indented = String::new();
        for level in 0..100 {
            indented.push_str(&format!("{}k{level}:\n", " ".repeat(level)));
        }
        assert!(too_deep(&indented, MAX_DEPTH).is_some());
    }

    #[test]
    fn brackets_in_quotes_comments_and_block_scalars_are_text() {
        let many = "[".repeat(200);
        let text = format!(
            "a: \"{many}\"\nb: '{many}'\n# {many}\nc: |\n  {many}\n  more {many}\nd: x # {many}\ne: don't [x]\n"
        );
        assert_eq!(too_deep(&text, MAX_DEPTH), None);
    }
}

//! `cuekit mcp install --client X`: the snippet merged into the client's own file, where the
//! file can be edited without losing anything of the user's. The file is parsed first and
//! the new entry is added to its text (so its order and layout stay as they are), the result is
//! parsed again and must equal the old content plus the entry, and the old file is kept beside
//! it as `<file>.cuekit-backup`. A file with comments, or a different `cuekit` entry (without
//! `--force`), is left alone and the snippet printed instead. Pure: the caller reads and writes.

use serde_json::Value;

use crate::domain::error::{Error, Result};

/// What merging found to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Merge {
    /// The file already has exactly this entry.
    Unchanged,
    /// The new text of the file.
    Text(String),
}

/// Merges `entry` as `<section>.cuekit` into the JSON text `old` (`None`: no file yet).
pub fn merge_json(old: Option<&str>, section: &str, entry: &Value, force: bool) -> Result<Merge> {
    let entry_text = serde_json::to_string_pretty(entry).expect("an entry serializes");
    let Some(old) = old.filter(|text| !text.trim().is_empty()) else {
        let mut fresh = serde_json::Map::new();
        let mut servers = serde_json::Map::new();
        servers.insert("cuekit".into(), entry.clone());
        fresh.insert(section.into(), Value::Object(servers));
        let mut text = serde_json::to_string_pretty(&Value::Object(fresh)).expect("serializes");
        text.push('\n');
        return Ok(Merge::Text(text));
    };
    if has_comments(old) {
        return Err(Error::invalid_input(
            "the file has comments, which a JSON rewrite would lose: it was left as it is",
        )
        .with_hint("add the entry `cuekit mcp config` prints by hand"));
    }
    let parsed: Value = serde_json::from_str(old).map_err(|err| {
        Error::invalid_input(format!(
            "the file is not valid JSON ({err}): it was left as it is"
        ))
        .with_hint("fix it, or add the entry `cuekit mcp config` prints by hand")
    })?;
    let Value::Object(root) = &parsed else {
        return Err(Error::invalid_input(
            "the file's top level is not a JSON object",
        ));
    };
    let existing = root.get(section).and_then(|s| s.get("cuekit"));
    if existing == Some(entry) {
        return Ok(Merge::Unchanged);
    }
    if existing.is_some() && !force {
        return Err(Error::invalid_input(format!(
            "the file already registers another `cuekit` server under {section}: it was left as it is"
        ))
        .with_hint("pass --force to replace it (the old file is kept as a backup)"));
    }
    let indented = entry_text.replace('\n', "\n    ");
    let spans = Spans::of(old);
    let text = match (spans.member(0, section), existing) {
        (Some(servers), Some(_)) => {
            let inner = spans
                .member(servers.value_start, "cuekit")
                .expect("the parsed file has the entry");
            format!(
                "{}{indented}{}",
                &old[..inner.value_start],
                &old[inner.value_end..]
            )
        }
        (Some(servers), None) => {
            let open = servers.value_start + 1;
            let empty = old[open..servers.value_end - 1].trim().is_empty();
            let comma = if empty { "" } else { "," };
            format!(
                "{}\n    \"cuekit\": {indented}{comma}{}",
                &old[..open],
                &old[open..]
            )
        }
        (None, _) => {
            let close = old.rfind('}').expect("an object ends with }");
            let members = !old[..close].trim_end().ends_with('{');
            let comma = if members { "," } else { "" };
            format!(
                "{}{comma}\n  \"{section}\": {{\n    \"cuekit\": {indented}\n  }}\n{}",
                old[..close].trim_end(),
                &old[close..]
            )
        }
    };
    // The new text must be the old content with the entry, and nothing else changed.
    let mut expected = parsed.clone();
    expected
        .as_object_mut()
        .expect("an object")
        .entry(section)
        .or_insert_with(|| Value::Object(Default::default()))
        .as_object_mut()
        .ok_or_else(|| Error::invalid_input(format!("the file's {section} is not an object")))?
        .insert("cuekit".into(), entry.clone());
    match serde_json::from_str::<Value>(&text) {
        Ok(merged) if merged == expected => Ok(Merge::Text(text)),
        _ => Err(Error::invalid_input(
            "the file's layout could not take the entry safely: it was left as it is",
        )
        .with_hint("add the entry `cuekit mcp config` prints by hand")),
    }
}

/// Whether JSON text holds a `//` or `/*` outside its strings (JSONC, as settings files allow).
fn has_comments(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else if *b == b'"' {
            in_string = true;
        } else if *b == b'/' && matches!(bytes.get(i + 1), Some(b'/' | b'*')) {
            return true;
        }
    }
    false
}

/// Where a member's value lies in the text.
#[derive(Debug, Clone, Copy)]
struct Member {
    value_start: usize,
    value_end: usize,
}

/// An open object or array: the offset of its `{`/`[`, its kind, and the member (enclosing
/// object's offset, key) it is the value of.
type Open = (usize, u8, Option<(usize, String)>);

/// The members of every object in a JSON text, by the offset of the object's `{`.
struct Spans {
    members: Vec<(usize, String, Member)>,
}

impl Spans {
    fn of(text: &str) -> Spans {
        let bytes = text.as_bytes();
        let mut members = Vec::new();
        let mut stack: Vec<Open> = Vec::new();
        let mut last_key: Option<String> = None;
        let enclosing = |stack: &[Open]| stack.last().map_or(0, |(at, _, _)| *at);
        let mut i = 0;
        while i < bytes.len() {
            // A scalar value (string, number, true, false, null) that ends at `i`.
            let mut scalar = None;
            match bytes[i] {
                b'"' => {
                    let start = i;
                    i += 1;
                    while i < bytes.len() && bytes[i] != b'"' {
                        if bytes[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    let string = &text[start..=i.min(bytes.len() - 1)];
                    let after = text[i + 1..].trim_start();
                    let in_object = stack.last().is_some_and(|(_, kind, _)| *kind == b'{');
                    if after.starts_with(':') && in_object {
                        last_key = serde_json::from_str(string).ok();
                    } else {
                        scalar = Some(start);
                    }
                }
                b'{' | b'[' => {
                    let member = last_key.take().map(|key| (enclosing(&stack), key));
                    stack.push((i, bytes[i], member));
                }
                b'}' | b']' => {
                    if let Some((start, _, Some((object, key)))) = stack.pop() {
                        let value = Member {
                            value_start: start,
                            value_end: i + 1,
                        };
                        members.push((object, key, value));
                    }
                }
                b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => {}
                _ => {
                    // A number, true, false or null.
                    scalar = Some(i);
                    while i + 1 < bytes.len() && !b",}] \n\r\t".contains(&bytes[i + 1]) {
                        i += 1;
                    }
                }
            }
            if let Some(start) = scalar
                && let Some(key) = last_key.take()
            {
                let value = Member {
                    value_start: start,
                    value_end: i + 1,
                };
                members.push((enclosing(&stack), key, value));
            }
            i += 1;
        }
        Spans { members }
    }

    /// The member `key` of the object whose `{` is at `object`.
    fn member(&self, object: usize, key: &str) -> Option<Member> {
        self.members
            .iter()
            .find(|(at, name, _)| *at == object && name == key)
            .map(|(_, _, member)| *member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({"command": "/bin/cuekit", "args": ["mcp"]})
    }

    fn merged(old: &str) -> String {
        match merge_json(Some(old), "mcpServers", &entry(), false).unwrap() {
            Merge::Text(text) => text,
            Merge::Unchanged => panic!("unchanged"),
        }
    }

    #[test]
    fn the_entry_joins_the_file_keeping_its_order_and_other_servers() {
        let old = "{\n  \"theme\": \"Dark\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  },\n  \"zeta\": 1\n}\n";
        let text = merged(old);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["mcpServers"]["cuekit"], entry());
        assert_eq!(value["mcpServers"]["other"]["command"], "x");
        assert!(
            text.find("theme").unwrap() < text.find("zeta").unwrap(),
            "{text}"
        );
        let bare = merged("{\"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}}");
        let value: Value = serde_json::from_str(&bare).unwrap();
        assert_eq!(value["mcpServers"]["cuekit"], entry());
        assert_eq!(value["security"]["auth"]["selectedType"], "gemini-api-key");
        let empty_servers = merged("{\"mcpServers\": {}}");
        assert_eq!(
            serde_json::from_str::<Value>(&empty_servers).unwrap()["mcpServers"]["cuekit"],
            entry()
        );
    }

    #[test]
    fn the_same_entry_is_unchanged_a_different_one_needs_force_and_comments_are_refused() {
        let again = merged("{}");
        assert_eq!(
            merge_json(Some(&again), "mcpServers", &entry(), false).unwrap(),
            Merge::Unchanged
        );
        let other = "{\"mcpServers\": {\"cuekit\": {\"command\": \"/old/cuekit\"}, \"b\": {}}}";
        assert!(merge_json(Some(other), "mcpServers", &entry(), false).is_err());
        let Merge::Text(forced) = merge_json(Some(other), "mcpServers", &entry(), true).unwrap()
        else {
            panic!("forced")
        };
        let value: Value = serde_json::from_str(&forced).unwrap();
        assert_eq!(value["mcpServers"]["cuekit"], entry());
        assert!(value["mcpServers"]["b"].is_object());
        let commented = "{\n  // my settings\n  \"theme\": \"x\"\n}";
        assert!(merge_json(Some(commented), "mcpServers", &entry(), false).is_err());
        // A `//` inside a string is no comment.
        let url = "{\"site\": \"https://example.com\"}";
        assert!(matches!(
            merge_json(Some(url), "mcpServers", &entry(), false).unwrap(),
            Merge::Text(_)
        ));
    }
}

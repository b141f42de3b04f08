//! POSIX shell quoting and the `launch.sh` every task runs: the agent command in a subshell,
//! then the exit-code sentinel. Pure text builders, shared by all adapters.

use std::path::Path;

use crate::error::{Error, Result};

/// File name of the sentinel inside a task directory.
pub const EXIT_CODE_FILE: &str = "exit-code";

/// Quotes `word` as one single-quoted POSIX shell word (`'it'\''s'`).
///
/// Always quotes, even plain words, so the launch command reads the same for every value
/// (the adapter contract spells `-m 'gemini-2.5-flash'`). A NUL byte cannot be passed in an
/// argv at all, so it is refused rather than silently truncated.
pub fn single_quote(word: &str) -> Result<String> {
    if word.contains('\0') {
        return Err(Error::invalid_input(
            "text contains a NUL byte, which cannot be passed to a program",
        )
        .with_hint("remove the NUL character from the prompt or value"));
    }
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('\'');
    for ch in word.chars() {
        if ch == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(ch);
        }
    }
    quoted.push('\'');
    Ok(quoted)
}

/// Quotes a path for the launch script. Paths come from the filesystem, so a NUL is impossible.
fn quote_path(path: &Path) -> Result<String> {
    single_quote(&path.to_string_lossy())
}

/// Renders `launch.sh` for a task.
///
/// The agent runs in a subshell so that an `exit N` inside the command cannot skip the
/// sentinel; the sentinel is written to a temp file and renamed so a reader never sees a
/// half-written code.
pub fn render_launch_script(
    task_id: &str,
    agent_command: &str,
    unset_env: &[&str],
    task_dir: &Path,
) -> Result<String> {
    let sentinel = quote_path(&task_dir.join(EXIT_CODE_FILE))?;
    let sentinel_tmp = quote_path(&task_dir.join(format!("{EXIT_CODE_FILE}.tmp")))?;
    let mut script =
        format!("#!/bin/sh\n# cuekit task {task_id}: generated at submit, kept as a record.\n");
    if !unset_env.is_empty() {
        script.push_str(&format!("unset {}\n", unset_env.join(" ")));
    }
    script.push_str(&format!(
        "(\n{agent_command}\n)\n\
         cuekit_code=$?\n\
         printf 'cuekit_exit=%s\\n' \"$cuekit_code\" > {sentinel_tmp} && mv -f {sentinel_tmp} {sentinel}\n\
         exit \"$cuekit_code\"\n"
    ));
    Ok(script)
}

/// Reads a sentinel file's content (`cuekit_exit=<code>`).
pub fn parse_sentinel(content: &str) -> Option<i32> {
    content.trim().strip_prefix("cuekit_exit=")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_plain_words_and_single_quotes() {
        assert_eq!(
            single_quote("gemini-2.5-flash").unwrap(),
            "'gemini-2.5-flash'"
        );
        assert_eq!(single_quote("it's").unwrap(), r"'it'\''s'");
        assert_eq!(single_quote("").unwrap(), "''");
    }

    #[test]
    fn refuses_nul() {
        let err = single_quote("a\0b").unwrap_err();
        assert_eq!(err.code, crate::error::ErrorCode::InvalidInput);
    }

    #[test]
    fn script_runs_agent_in_subshell_then_writes_sentinel_atomically() {
        let script =
            render_launch_script("t_0", "gemini 'x'", &["CI"], Path::new("/tmp/a b")).unwrap();
        assert_eq!(
            script,
            "#!/bin/sh\n# cuekit task t_0: generated at submit, kept as a record.\n\
             unset CI\n(\ngemini 'x'\n)\ncuekit_code=$?\n\
             printf 'cuekit_exit=%s\\n' \"$cuekit_code\" > '/tmp/a b/exit-code.tmp' && mv -f '/tmp/a b/exit-code.tmp' '/tmp/a b/exit-code'\n\
             exit \"$cuekit_code\"\n"
        );
    }

    #[test]
    fn parses_sentinel() {
        assert_eq!(parse_sentinel("cuekit_exit=41\n"), Some(41));
        assert_eq!(parse_sentinel("garbage"), None);
    }
}

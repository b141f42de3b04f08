//! How many tests a check ran, as its runner reported them (cargo's libtest, pytest, unittest,
//! `node --test`, `go test -json`), and the rule that a pass which ran fewer tests than the
//! base is no pass. A tamper signal, not a proof: the child's code prints into the same
//! output, so it can print a summary of its own. Pure: the check (`ops::check`) reads the
//! output.

use serde::{Deserialize, Serialize};

use crate::domain::check::strip_controls;

/// The tests a runner ran (passed or failed; skipped and ignored ones did not run), summed
/// over every summary in `output`; `None` when no runner reported a count.
pub fn tests_ran(output: &str) -> Option<u64> {
    let text = strip_controls(output);
    let mut total: Option<u64> = None;
    let mut node = NodeCounts::default();
    for line in text.lines() {
        let found = libtest(line)
            .or_else(|| pytest(line))
            .or_else(|| unittest(line))
            .or_else(|| go_json(line));
        if let Some(n) = found {
            *total.get_or_insert(0) += n;
        }
        node.read(line);
    }
    if let Some(n) = node.ran() {
        *total.get_or_insert(0) += n;
    }
    // unittest's skips are on the line after its `Ran N tests`.
    if let Some(skipped) = unittest_skipped(&text) {
        total = total.map(|t| t.saturating_sub(skipped));
    }
    total
}

/// `test result: ok. 3 passed; 1 failed; 2 ignored; …`: passed + failed.
fn libtest(line: &str) -> Option<u64> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let (_, counts) = rest.split_once(". ")?;
    let mut ran = 0;
    for part in counts.split(';') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        if matches!(what, "passed" | "failed") {
            ran += n.parse::<u64>().ok()?;
        }
    }
    Some(ran)
}

/// pytest's last line, `=== 2 failed, 3 passed, 1 skipped in 0.12s ===` (or with `-q`
/// without the `=`): passed + failed + xfailed + xpassed.
fn pytest(line: &str) -> Option<u64> {
    let line = line.trim().trim_matches('=').trim();
    let (counts, time) = line.rsplit_once(" in ")?;
    let seconds = time.split_whitespace().next()?.strip_suffix('s')?;
    seconds.parse::<f64>().ok()?;
    if counts == "no tests ran" {
        return Some(0);
    }
    let mut ran = 0;
    for part in counts.split(", ") {
        let (n, what) = part.split_once(' ')?;
        let n: u64 = n.parse().ok()?;
        match what {
            "passed" | "failed" | "xfailed" | "xpassed" => ran += n,
            "skipped" | "deselected" | "error" | "errors" | "warning" | "warnings" | "rerun"
            | "subtests passed" | "subtests failed" => {}
            _ => return None,
        }
    }
    Some(ran)
}

/// unittest's `Ran 5 tests in 0.001s`.
fn unittest(line: &str) -> Option<u64> {
    let rest = line.trim().strip_prefix("Ran ")?;
    let (n, rest) = rest.split_once(' ')?;
    rest.starts_with("test").then_some(())?;
    rest.contains(" in ").then_some(())?;
    n.parse().ok()
}

/// The skips unittest reports on its closing line (`OK (skipped=2)`, `FAILED (failures=1,
/// skipped=1)`), summed over the output.
fn unittest_skipped(text: &str) -> Option<u64> {
    let mut skipped = None;
    for line in text.lines().map(str::trim) {
        let Some(inside) = ["OK (", "FAILED ("]
            .iter()
            .find_map(|start| line.strip_prefix(start))
            .and_then(|rest| rest.strip_suffix(')'))
        else {
            continue;
        };
        for part in inside.split(", ") {
            if let Some(n) = part
                .strip_prefix("skipped=")
                .and_then(|n| n.parse::<u64>().ok())
            {
                *skipped.get_or_insert(0) += n;
            }
        }
    }
    skipped
}

/// `go test -json`: a test's (or subtest's) `pass` or `fail` event.
fn go_json(line: &str) -> Option<u64> {
    let line = line.trim();
    if !line.starts_with('{') || !line.contains("\"Action\"") {
        return None;
    }
    let event: serde_json::Value = serde_json::from_str(line).ok()?;
    event.get("Test")?;
    matches!(event.get("Action")?.as_str()?, "pass" | "fail").then_some(1)
}

/// `node --test`'s closing counts, as its TAP reporter (`# pass 3`) or its spec reporter
/// (`ℹ pass 3`) prints them.
#[derive(Default)]
struct NodeCounts {
    pass: Option<u64>,
    fail: Option<u64>,
}

impl NodeCounts {
    fn read(&mut self, line: &str) {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("# ").or_else(|| line.strip_prefix("ℹ ")) else {
            return;
        };
        let Some((what, n)) = rest.split_once(' ') else {
            return;
        };
        let Ok(n) = n.trim().parse::<u64>() else {
            return;
        };
        match what {
            "pass" => *self.pass.get_or_insert(0) += n,
            "fail" => *self.fail.get_or_insert(0) += n,
            _ => {}
        }
    }

    fn ran(&self) -> Option<u64> {
        match (self.pass, self.fail) {
            (None, None) => None,
            (pass, fail) => Some(pass.unwrap_or(0) + fail.unwrap_or(0)),
        }
    }
}

/// What the check's commands ran on the base, measured once per base tree and kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseCounts {
    /// The base's tree (`git rev-parse <base>^{tree}`).
    pub tree: String,
    /// The check's commands, in order.
    pub commands: Vec<String>,
    /// Per command: the tests it reported running on the base (`None`: no count reported, or
    /// its output was not kept whole).
    pub ran: Vec<Option<u64>>,
    /// How long the base run took, in milliseconds.
    pub took_ms: u64,
}

/// A pass that ran fewer tests than the base: the command, and the two numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fewer {
    pub command: String,
    /// `None`: its output was not kept whole, so its count could not be read.
    pub ran: Option<u64>,
    pub base: u64,
}

impl Fewer {
    /// The verdict's reason, in words.
    pub fn reason(&self) -> String {
        match self.ran {
            Some(ran) => format!(
                "`{}` ran {ran} tests where the base ran {}: a pass that runs fewer tests than \
                 the base is not counted (a test removed, skipped or not collected)",
                self.command, self.base
            ),
            None => format!(
                "`{}` printed more than its log keeps, so the tests it ran could not be read, \
                 where the base ran {}: a pass whose count cannot be read is not counted (a \
                 flood of output can hide a test removed)",
                self.command, self.base
            ),
        }
    }
}

/// The first command whose pass ran fewer tests than the base did. `ran` is per command:
/// `Some(Some(n))` the tests it reported, `Some(None)` no count (read as none ran where the
/// base reported some), `None` its output was not kept whole (a count that cannot be read,
/// where the base reported one: never taken as enough).
pub fn fewer_than_base(
    commands: &[String],
    ran: &[Option<Option<u64>>],
    base: &BaseCounts,
) -> Option<Fewer> {
    if base.commands != commands {
        return None;
    }
    commands
        .iter()
        .zip(ran)
        .zip(&base.ran)
        .find_map(|((command, ran), base)| {
            let base = (*base)?;
            let ran = ran.map(|ran| ran.unwrap_or(0));
            ran.is_none_or(|ran| ran < base).then(|| Fewer {
                command: command.clone(),
                ran,
                base,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_summaries_add_up_passed_and_failed() {
        let out = "running 2 tests\ntest a ... ok\n\ntest result: ok. 2 passed; 0 failed; 1 ignored; \
                   0 measured; 0 filtered out; finished in 0.00s\n\n     Running tests/it.rs\n\
                   test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(tests_ran(out), Some(6));
        assert_eq!(
            tests_ran("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"),
            Some(0)
        );
        assert_eq!(tests_ran("Compiling p\nFinished\n"), None);
    }

    #[test]
    fn pytest_unittest_node_and_go_summaries_are_read() {
        assert_eq!(
            tests_ran("===== 2 failed, 3 passed, 1 skipped, 1 xfailed in 0.12s =====\n"),
            Some(6)
        );
        assert_eq!(
            tests_ran("5 passed, 2 warnings in 1.02s (0:00:01)\n"),
            Some(5)
        );
        assert_eq!(tests_ran("= no tests ran in 0.01s =\n"), Some(0));
        assert_eq!(tests_ran("we met in 2s\n"), None);
        assert_eq!(
            tests_ran("..s\n------\nRan 3 tests in 0.001s\n\nOK (skipped=1)\n"),
            Some(2)
        );
        assert_eq!(
            tests_ran("Ran 4 tests in 0.002s\n\nFAILED (failures=1)\n"),
            Some(4)
        );
        let tap = "TAP version 13\n# tests 4\n# suites 0\n# pass 3\n# fail 1\n# skipped 2\n";
        assert_eq!(tests_ran(tap), Some(4));
        let spec = "\u{2139} tests 2\n\u{2139} pass 2\n\u{2139} fail 0\n";
        assert_eq!(tests_ran(spec), Some(2));
        let go = "{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\"Test\":\"TestA\"}\n\
                  {\"Action\":\"fail\",\"Test\":\"TestB\"}\n{\"Action\":\"pass\",\"Package\":\"p\"}\n";
        assert_eq!(tests_ran(go), Some(2));
    }

    #[test]
    fn a_pass_with_fewer_tests_than_the_base_is_named_with_both_numbers() {
        let commands = vec!["make lint".to_string(), "cargo test".to_string()];
        let base = BaseCounts {
            tree: "t".into(),
            commands: commands.clone(),
            ran: vec![None, Some(5)],
            took_ms: 1,
        };
        assert_eq!(
            fewer_than_base(&commands, &[Some(None), Some(Some(5))], &base),
            None
        );
        assert_eq!(
            fewer_than_base(&commands, &[Some(None), Some(Some(9))], &base),
            None
        );
        let fewer = fewer_than_base(&commands, &[Some(Some(0)), Some(Some(0))], &base).unwrap();
        assert_eq!((fewer.ran, fewer.base), (Some(0), 5));
        assert!(
            fewer
                .reason()
                .contains("`cargo test` ran 0 tests where the base ran 5")
        );
        // No count at all where the base had one: none ran.
        assert_eq!(
            fewer_than_base(&commands, &[Some(None), Some(None)], &base).map(|f| f.ran),
            Some(Some(0))
        );
        // Output not kept whole: a count that cannot be read is not enough where the base
        // reported one, and says so; where the base reported none, nothing to compare.
        let unread = fewer_than_base(&commands, &[None, None], &base).unwrap();
        assert_eq!(unread.ran, None);
        assert!(
            unread.reason().contains("could not be read"),
            "{}",
            unread.reason()
        );
        assert_eq!(
            fewer_than_base(&commands, &[None, Some(Some(5))], &base),
            None
        );
        let other = vec!["pytest".to_string()];
        assert_eq!(fewer_than_base(&other, &[Some(Some(0))], &base), None);
    }
}

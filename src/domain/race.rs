//! Best-of-N races (`submit --best-of N`): N candidates from one request, each in a checkout of
//! its own, and the rule that picks the winner. Pure: what a candidate did comes in as facts,
//! the pick and its reasons go out; running, cancelling and keeping refs is `ops::race`'s.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

/// Ids are file and ref names, so only the documented shape (`r_` and 12 lowercase hex digits)
/// is accepted.
pub fn is_race_id(id: &str) -> bool {
    id.strip_prefix("r_").is_some_and(|hex| {
        hex.len() == 12
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// Where a candidate's work is kept once the race is decided: a ref of the user's repository
/// that neither a branch deletion nor `gc` takes away.
pub fn kept_ref(race: &str, task_id: &str) -> String {
    format!("refs/cuekit/races/{race}/{task_id}")
}

/// The prefix of every ref a race keeps.
pub fn refs_prefix(race: &str) -> String {
    format!("refs/cuekit/races/{race}/")
}

/// Candidate `index`'s choice from a list given to `--agents` or `--models`: they are taken in
/// turn, so three candidates over two agents run a, b, a.
pub fn in_turn(list: &[String], index: usize) -> Option<String> {
    (!list.is_empty()).then(|| list[index % list.len()].clone())
}

/// What a candidate did, as the pick weighs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The task's status (`completed`, `failed`, …), `running` while it runs.
    pub status: String,
    /// Its check passed (a checked task completes only then).
    pub passed: bool,
    pub fix_rounds: u32,
    /// The files of the merge review's classes its last check saw changed (manifests, build
    /// scripts, dotfiles): a pass that may rest on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub review_paths: Vec<String>,
    /// Lines added plus lines removed against the base; `None` when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_lines: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_changed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// RFC 3339; `None` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

impl Candidate {
    pub fn ended(&self) -> bool {
        self.ended_at.is_some()
    }
}

/// Whether the race can be decided now: every candidate ended, or (`first`) one passed.
pub fn decidable(first: bool, candidates: &[Candidate]) -> bool {
    !candidates.is_empty()
        && (candidates.iter().all(Candidate::ended)
            || (first && candidates.iter().any(|c| c.ended() && c.passed)))
}

/// One rule of the pick: `Less` when the first candidate is the better by it.
type Rule = fn(&Candidate, &Candidate) -> Ordering;

/// The rules in the order they are applied, each with the words a reason uses (`{}`: the
/// runner-up).
const RULES: [(&str, Rule); 6] = [
    ("passed its check, unlike {}", |a, b| {
        b.passed.cmp(&a.passed)
    }),
    (
        "passed without changing a file the merge review covers, unlike {}",
        |a, b| (!a.review_paths.is_empty()).cmp(&!b.review_paths.is_empty()),
    ),
    ("fewer fix rounds than {}", |a, b| {
        a.fix_rounds.cmp(&b.fix_rounds)
    }),
    ("a smaller diff than {}", |a, b| {
        fewer(a.diff_lines, b.diff_lines)
    }),
    ("fewer tokens than {}", |a, b| fewer(a.tokens, b.tokens)),
    ("ended earlier than {}", |a, b| {
        fewer(
            a.ended_at
                .as_ref()
                .and_then(|t| humantime::parse_rfc3339(t).ok()),
            b.ended_at
                .as_ref()
                .and_then(|t| humantime::parse_rfc3339(t).ok()),
        )
    }),
];

/// Smaller first; an unknown figure loses to any known one.
fn fewer<T: Ord>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The outcome of a pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pick {
    /// The winner: a candidate that passed (`None`: none passed, the race failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<String>,
    /// Why it won, in words (or why there is no winner).
    pub why: String,
    /// Candidates no rule told apart from the winner (the winner then is the first submitted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tied_with: Vec<String>,
}

/// Picks the winner among `candidates` (in submit order): passed beats not passed, then a pass
/// without files of the merge review's classes beats one with them, then fewer fix rounds, the smaller diff, fewer tokens, the earlier ending. Only a candidate that
/// passed wins.
pub fn pick(candidates: &[Candidate]) -> Pick {
    let Some(best) = candidates
        .iter()
        .filter(|c| c.passed)
        .min_by(|a, b| order(a, b))
    else {
        return Pick {
            winner: None,
            why: "no candidate passed its check: every candidate is kept".into(),
            tied_with: Vec::new(),
        };
    };
    let tied_with: Vec<String> = candidates
        .iter()
        .filter(|c| c.id != best.id && c.passed && order(c, best) == Ordering::Equal)
        .map(|c| c.id.clone())
        .collect();
    let others: Vec<&Candidate> = candidates.iter().filter(|c| c.id != best.id).collect();
    let why = if others.is_empty() {
        "the only candidate, and it passed its check".to_string()
    } else if !tied_with.is_empty() {
        format!(
            "a tie on every rule with {}: the first submitted wins",
            tied_with.join(", ")
        )
    } else {
        // The rule that told it apart from the runner-up.
        let runner_up = others
            .iter()
            .min_by(|a, b| order(a, b))
            .expect("others is not empty");
        let words = RULES
            .iter()
            .find(|(_, rule)| rule(best, runner_up) == Ordering::Less)
            .map_or("submitted before {}", |(words, _)| words);
        format!("{} (the runner-up)", words.replace("{}", &runner_up.id))
    };
    Pick {
        winner: Some(best.id.clone()),
        why,
        tied_with,
    }
}

fn order(a: &Candidate, b: &Candidate) -> Ordering {
    RULES
        .iter()
        .map(|(_, rule)| rule(a, b))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(
        id: &str,
        passed: bool,
        rounds: u32,
        diff: u64,
        tokens: u64,
        at: &str,
    ) -> Candidate {
        Candidate {
            id: id.into(),
            agent: "gemini".into(),
            model: None,
            status: if passed { "completed" } else { "failed" }.into(),
            passed,
            fix_rounds: rounds,
            review_paths: Vec::new(),
            diff_lines: Some(diff),
            files_changed: Some(1),
            tokens: Some(tokens),
            ended_at: Some(format!("2026-12-05T10:00:{at}Z")),
        }
    }

    #[test]
    fn ids_have_one_shape() {
        assert!(is_race_id("r_0123456789ab"));
        for bad in [
            "r_0123456789AB",
            "t_0123456789ab",
            "r_0123",
            "r_../../etc/x",
            "",
        ] {
            assert!(!is_race_id(bad), "{bad}");
        }
        assert_eq!(kept_ref("r_1", "t_2"), "refs/cuekit/races/r_1/t_2");
    }

    #[test]
    fn agents_and_models_are_taken_in_turn() {
        let agents = vec!["a".to_string(), "b".to_string()];
        let picked: Vec<_> = (0..3).map(|i| in_turn(&agents, i).unwrap()).collect();
        assert_eq!(picked, ["a", "b", "a"]);
        assert_eq!(in_turn(&[], 4), None);
    }

    #[test]
    fn each_rule_decides_only_when_the_ones_before_it_tie() {
        let failed_small = candidate("t_a", false, 0, 1, 1, "01");
        let passed_late = candidate("t_b", true, 1, 50, 900, "09");
        let pick1 = pick(&[failed_small.clone(), passed_late.clone()]);
        assert_eq!(pick1.winner.as_deref(), Some("t_b"));
        assert!(
            pick1.why.starts_with("passed its check, unlike t_a"),
            "{}",
            pick1.why
        );

        let passed_first_round = candidate("t_c", true, 0, 80, 900, "10");
        let pick2 = pick(&[passed_late.clone(), passed_first_round.clone()]);
        assert_eq!(pick2.winner.as_deref(), Some("t_c"));
        assert!(pick2.why.starts_with("fewer fix rounds"), "{}", pick2.why);

        let smaller = candidate("t_d", true, 1, 10, 999, "11");
        assert_eq!(
            pick(&[passed_late.clone(), smaller]).why,
            "a smaller diff than t_b (the runner-up)"
        );
        let cheaper = candidate("t_e", true, 1, 50, 100, "11");
        assert!(
            pick(&[passed_late.clone(), cheaper])
                .why
                .starts_with("fewer tokens")
        );
        let earlier = candidate("t_f", true, 1, 50, 900, "02");
        assert!(
            pick(&[passed_late.clone(), earlier])
                .why
                .starts_with("ended earlier")
        );
    }

    #[test]
    fn a_pass_resting_on_a_manifest_change_is_never_preferred() {
        let manifest = Candidate {
            review_paths: vec!["Cargo.toml".into()],
            ..candidate("t_a", true, 0, 1, 1, "01")
        };
        let plain = candidate("t_b", true, 2, 90, 900, "09");
        let picked = pick(&[manifest.clone(), plain]);
        assert_eq!(picked.winner.as_deref(), Some("t_b"));
        assert!(
            picked
                .why
                .starts_with("passed without changing a file the merge review covers, unlike t_a"),
            "{}",
            picked.why
        );
        // It still wins over a candidate that did not pass.
        let failed = candidate("t_c", false, 0, 1, 1, "01");
        assert_eq!(pick(&[failed, manifest]).winner.as_deref(), Some("t_a"));
    }

    #[test]
    fn a_tie_is_named_and_the_first_submitted_wins_it() {
        let a = candidate("t_a", true, 0, 5, 5, "05");
        let b = Candidate {
            id: "t_b".into(),
            ..a.clone()
        };
        let picked = pick(&[a, b]);
        assert_eq!(picked.winner.as_deref(), Some("t_a"));
        assert_eq!(picked.tied_with, ["t_b"]);
        assert!(picked.why.contains("tie"), "{}", picked.why);
    }

    #[test]
    fn nobody_wins_without_a_pass_and_unknown_figures_lose() {
        let picked = pick(&[candidate("t_a", false, 2, 1, 1, "01")]);
        assert_eq!(picked.winner, None);
        let known = candidate("t_a", true, 0, 5, 5, "05");
        let unknown = Candidate {
            id: "t_b".into(),
            diff_lines: None,
            ..known.clone()
        };
        assert_eq!(pick(&[unknown, known]).winner.as_deref(), Some("t_a"));
    }

    #[test]
    fn a_race_is_decided_when_all_ended_or_with_first_at_the_first_pass() {
        let running = Candidate {
            ended_at: None,
            passed: false,
            ..candidate("t_a", false, 0, 0, 0, "01")
        };
        let passed = candidate("t_b", true, 0, 1, 1, "02");
        let failed = candidate("t_c", false, 0, 1, 1, "03");
        assert!(!decidable(false, &[running.clone(), passed.clone()]));
        assert!(decidable(true, &[running.clone(), passed.clone()]));
        assert!(!decidable(true, &[running.clone(), failed.clone()]));
        assert!(decidable(false, &[failed, passed]));
        assert!(!decidable(false, &[]));
    }
}

//! Who a sandboxed child is when cuekit runs as root: an unprivileged uid, never root.
//!
//! bubblewrap's `--unshare-user --uid N` alone is no answer for root: the uid map it writes is
//! `N 0 1`, so the child's kernel uid stays 0, the owner of `/etc/shadow` and of every root
//! file, whose owner bits apply with every capability dropped. Instead bubblewrap (run by root,
//! so with no user namespace whatever its setuid bit) keeps only the capabilities that change
//! identity, and the command runs through `setpriv`, which takes the uid, the gid and the
//! groups to [`SANDBOX_UID`], empties every capability set (the bounding one too: hence
//! `CAP_SETPCAP`) and sets no_new_privs before it runs the command. What the child must write
//! is handed to that uid (`effects::owner`); the private directories bubblewrap makes are
//! open to it (`--perms 1777`). Pure: the words.

use std::path::{Path, PathBuf};

/// The uid (and gid) a sandboxed child of root runs as: `nobody`/`nogroup`, which every
/// Debian-like system names in `/etc/passwd` (an unnamed uid breaks programs that look
/// themselves up, Node's `os.userInfo()`).
pub const SANDBOX_UID: u32 = 65534;
pub const SANDBOX_GID: u32 = 65534;

/// The mode of the private directories (HOME, `/tmp`, an agent's settings folder) bubblewrap
/// makes for a child that is not their owner: its own, like `/tmp`, in a sandbox where it is
/// the only user.
pub const OPEN_PERMS: &str = "1777";

/// The identity a sandboxed child takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    /// util-linux's `setpriv`, which drops to it inside the sandbox.
    pub setpriv: PathBuf,
}

impl RunAs {
    /// The sandbox's unprivileged identity ([`SANDBOX_UID`]), dropped to by `setpriv`.
    pub fn unprivileged(setpriv: PathBuf) -> RunAs {
        RunAs {
            uid: SANDBOX_UID,
            gid: SANDBOX_GID,
            setpriv,
        }
    }
}

/// bubblewrap's capability words: none at all, or, for a child that drops to another uid,
/// only what `setpriv` needs to drop (and nothing it keeps: [`drop_words`]).
pub fn cap_words(run_as: Option<&RunAs>) -> Vec<String> {
    let mut words = vec!["--cap-drop".to_string(), "ALL".to_string()];
    if run_as.is_some() {
        for cap in ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"] {
            words.extend(["--cap-add".to_string(), cap.to_string()]);
        }
    }
    words
}

/// The words after bubblewrap's `--`, before the command: `setpriv … --`, or none.
pub fn drop_words(run_as: Option<&RunAs>) -> Vec<String> {
    let Some(run_as) = run_as else {
        return Vec::new();
    };
    vec![
        run_as.setpriv.to_string_lossy().into_owned(),
        format!("--reuid={}", run_as.uid),
        format!("--regid={}", run_as.gid),
        "--clear-groups".to_string(),
        "--inh-caps=-all".to_string(),
        "--bounding-set=-all".to_string(),
        "--no-new-privs".to_string(),
        "--".to_string(),
    ]
}

/// The `--perms` a private directory gets before its `--tmpfs`: none for a child that owns it.
pub fn perms_words(run_as: Option<&RunAs>) -> Vec<String> {
    match run_as {
        Some(_) => vec!["--perms".to_string(), OPEN_PERMS.to_string()],
        None => Vec::new(),
    }
}

/// The folders bubblewrap makes on its own are `0700`, its owner's: the parents it makes in a
/// private directory for a mount's destination. A child of another uid could not pass them to
/// reach its work, its git dir or the resolver. [`Opener`] makes each such parent first,
/// `0755` (`--perms 0755 --dir`): only where a private directory (a `--tmpfs`) is what covers
/// the destination, never in a folder of the machine's.
#[derive(Debug, Default)]
pub struct Opener {
    /// The private directories so far, and the folders already made in them.
    private: Vec<PathBuf>,
    /// Mount destinations that are not private directories (their parents are the machine's).
    shown: Vec<PathBuf>,
}

impl Opener {
    /// The words that make `dest`'s parents open before it is mounted (a private directory,
    /// `--tmpfs`, or a folder shown), and remembers it.
    pub fn before(&mut self, dest: &Path, private: bool) -> Vec<String> {
        let covering = |list: &[PathBuf]| {
            list.iter()
                .filter(|dir| dest.starts_with(dir) && dest != dir.as_path())
                .map(|dir| dir.components().count())
                .max()
        };
        let mut words = Vec::new();
        if let Some(depth) = covering(&self.private)
            && covering(&self.shown).is_none_or(|shown| shown < depth)
        {
            let parents: Vec<&Path> = dest
                .ancestors()
                .skip(1)
                .take_while(|dir| dir.components().count() > depth)
                .collect();
            for dir in parents.into_iter().rev() {
                words.extend(["--perms", "0755", "--dir"].map(String::from));
                words.push(dir.to_string_lossy().into_owned());
                self.private.push(dir.to_path_buf());
            }
        }
        if private {
            self.private.push(dest.to_path_buf());
        } else {
            self.shown.push(dest.to_path_buf());
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nobody() -> RunAs {
        RunAs::unprivileged("/usr/bin/setpriv".into())
    }

    #[test]
    fn a_child_of_roots_drops_every_id_and_capability_before_its_command() {
        let words = drop_words(Some(&nobody()));
        assert_eq!(words[0], "/usr/bin/setpriv");
        for word in [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
        ] {
            assert!(words.iter().any(|w| w == word), "{word} not in {words:?}");
        }
        assert_eq!(words.last().map(String::as_str), Some("--"));
        assert!(drop_words(None).is_empty());
    }

    #[test]
    fn bubblewrap_keeps_only_what_the_drop_needs() {
        assert_eq!(cap_words(None), ["--cap-drop", "ALL"]);
        let kept = cap_words(Some(&nobody()));
        assert_eq!(kept[..2], ["--cap-drop", "ALL"]);
        let added: Vec<&str> = kept
            .windows(2)
            .filter(|w| w[0] == "--cap-add")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(added, ["CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"]);
        assert!(perms_words(None).is_empty());
        assert_eq!(perms_words(Some(&nobody())), ["--perms", "1777"]);
    }

    #[test]
    fn the_parents_made_in_a_private_directory_are_open_and_no_others() {
        let mut opener = Opener::default();
        assert!(opener.before(Path::new("/tmp"), true).is_empty());
        assert!(opener.before(Path::new("/h"), true).is_empty());
        let dirs = |words: Vec<String>| -> Vec<String> {
            words
                .chunks(4)
                .map(|w| {
                    assert_eq!(w[..3], ["--perms", "0755", "--dir"]);
                    w[3].clone()
                })
                .collect()
        };
        assert_eq!(
            dirs(opener.before(Path::new("/tmp/t1/p.worktrees/t_1"), false)),
            ["/tmp/t1", "/tmp/t1/p.worktrees"]
        );
        // Made once; a sibling's parent only.
        assert_eq!(
            dirs(opener.before(Path::new("/tmp/t1/p.worktrees/t_2"), false)),
            Vec::<String>::new()
        );
        // Right under a private directory: nothing to make.
        assert!(opener.before(Path::new("/h/.gemini"), true).is_empty());
        assert_eq!(
            dirs(opener.before(Path::new("/h/.gemini/a/b"), false)),
            ["/h/.gemini/a"]
        );
        // Under a folder shown from the machine: its parents are the machine's.
        assert!(opener.before(Path::new("/srv/p"), false).is_empty());
        assert!(
            opener
                .before(Path::new("/srv/p/a/.cuekit"), true)
                .is_empty()
        );
        assert!(
            opener
                .before(Path::new("/tmp/t1/p.worktrees/t_1/x/y"), false)
                .is_empty()
        );
    }
}

//! Pure tmux argv builders. Every target is exact (`=session`, `%pane`): tmux matches a bare
//! session name by prefix, which could hit another task.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// Fields reported by [`list_panes`], tab-separated; parsed by [`super::parse_panes`].
const PANE_FORMAT: &str = "#{session_name}\t#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_in_mode}\t#{pane_height}\t#{history_size}\t#{window_activity}\t#{pane_dead_signal}";

/// Output format of [`new_task_session`]: `<pane id> <pane pid>`.
pub const NEW_PANE_FORMAT: &str = "#{pane_id} #{pane_pid}";

pub fn session_name(task_id: &str) -> String {
    format!("cuekit-task-{task_id}")
}

/// A tmux command line: whole commands, `;` between them, and each word as tmux must be given
/// it to read it back unchanged. tmux (3.3 cmd-parse) takes an argv word ending in `;` for the
/// end of a command and drops that `;`, and reads a final `\;` as a literal `;`: a steer `ls;`
/// or a directory `/w/a;` would lose its `;`, or split the command. Built only by
/// [`Argv::new`], the one place words are escaped, and the only thing [`super::Tmux`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv(Vec<OsString>);

impl Argv {
    fn new<W: Into<OsString>>(commands: impl IntoIterator<Item = Vec<W>>) -> Argv {
        let mut words = Vec::new();
        for command in commands {
            if !words.is_empty() {
                words.push(OsString::from(";"));
            }
            words.extend(command.into_iter().map(|word| final_semicolon(word.into())));
        }
        Argv(words)
    }
}

/// `a;` → `a\;`, `a\;` → `a\\;`: tmux strips the added backslash and keeps the rest.
fn final_semicolon(word: OsString) -> OsString {
    let mut bytes = word.into_vec();
    if bytes.last() == Some(&b';') {
        bytes.insert(bytes.len() - 1, b'\\');
    }
    OsString::from_vec(bytes)
}

impl std::ops::Deref for Argv {
    type Target = [OsString];

    fn deref(&self) -> &[OsString] {
        &self.0
    }
}

impl IntoIterator for Argv {
    type Item = OsString;
    type IntoIter = std::vec::IntoIter<OsString>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A start directory is format-expanded: `#` doubled keeps it literal. Bytes, not text, so a
/// path passes through whatever its encoding.
fn escape_format(text: &OsStr) -> OsString {
    let mut out = Vec::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if byte == b'#' {
            out.push(b'#');
        }
        out.push(byte);
    }
    OsString::from_vec(out)
}

/// The session option that names the registry (cuekit's data directory) a task session was
/// started by: `doctor --fix` ends only sessions of its own registry, never another data
/// directory's on the same server, nor a session someone made by hand under a task's name.
pub const OWNER_OPTION: &str = "@cuekit_registry";

pub struct NewTaskSession<'a> {
    pub session: &'a str,
    /// The registry that starts it (its data directory), set as [`OWNER_OPTION`].
    pub owner: &'a Path,
    pub cwd: &'a Path,
    pub width: u16,
    pub height: u16,
    pub history_limit: u32,
    pub script: &'a Path,
    pub transcript: &'a Path,
}

/// One tmux invocation that creates the session, keeps the pane after exit and starts the
/// transcript pipe. Doing all three in one command queue is what makes the transcript hold the
/// pane's very first byte; a separate, later `pipe-pane` call loses it.
pub fn new_task_session(new: &NewTaskSession) -> Argv {
    let target = format!("={}:", new.session);
    Argv::new([
        vec![
            "set-option".into(),
            "-g".into(),
            "history-limit".into(),
            new.history_limit.to_string().into(),
        ],
        vec![
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            new.session.into(),
            "-x".into(),
            new.width.to_string().into(),
            "-y".into(),
            new.height.to_string().into(),
            "-c".into(),
            escape_format(new.cwd.as_os_str()),
            "-P".into(),
            "-F".into(),
            NEW_PANE_FORMAT.into(),
            "--".into(),
            "/bin/sh".into(),
            new.script.as_os_str().to_owned(),
        ],
        vec![
            "set-option".into(),
            "-t".into(),
            target.clone().into(),
            OWNER_OPTION.into(),
            new.owner.as_os_str().to_owned(),
        ],
        vec![
            "set-option".into(),
            "-p".into(),
            "-t".into(),
            target.clone().into(),
            "remain-on-exit".into(),
            "on".into(),
        ],
        vec![
            "pipe-pane".into(),
            "-o".into(),
            "-t".into(),
            target.into(),
            pipe_command(new.transcript).into(),
        ],
    ])
}

/// `pipe-pane` runs its command through `/bin/sh -c` after format and strftime expansion, so
/// the path is shell-quoted and `#`/`%` doubled.
pub fn pipe_command(transcript: &Path) -> String {
    let quoted = crate::domain::launch::single_quote(&transcript.to_string_lossy())
        .expect("filesystem paths contain no NUL");
    format!(
        "exec cat >> {}",
        quoted.replace('#', "##").replace('%', "%%")
    )
}

pub fn list_panes() -> Argv {
    Argv::new([vec!["list-panes", "-a", "-F", PANE_FORMAT]])
}

/// Every session's name, one a line.
pub fn list_sessions() -> Argv {
    Argv::new([vec!["list-sessions", "-F", "#{session_name}"]])
}

/// Every session's name and its [`OWNER_OPTION`] (empty if unset), a tab between, one a line.
pub fn list_sessions_with_owner() -> Argv {
    Argv::new([vec![
        "list-sessions",
        "-F",
        "#{session_name}\t#{@cuekit_registry}",
    ]])
}

/// Printed between a session's pane listing and its screen in [`look_at_session`].
const SCREEN_MARKER: &str = "cuekit:screen";

/// One task in one tmux invocation: its session's panes (as [`list_panes`] reports them) and,
/// with `screen_of`, that pane's visible screen after a marker line.
pub fn look_at_session(session: &str, screen_of: Option<&str>) -> Argv {
    let target = format!("={session}");
    let mut commands = vec![vec!["list-panes", "-s", "-t", &target, "-F", PANE_FORMAT]];
    if let Some(pane) = screen_of {
        commands.push(vec!["display-message", "-p", SCREEN_MARKER]);
        commands.push(vec!["capture-pane", "-p", "-t", pane]);
    }
    Argv::new(commands)
}

/// Splits the output of [`look_at_session`] into the pane listing and the screen.
pub fn split_session_look(stdout: &str) -> (&str, Option<&str>) {
    let marker = format!("{SCREEN_MARKER}\n");
    match stdout.find(&marker) {
        Some(at) if at == 0 || stdout[..at].ends_with('\n') => {
            (&stdout[..at], Some(&stdout[at + marker.len()..]))
        }
        _ => (stdout, None),
    }
}

pub fn kill_session(session: &str) -> Argv {
    Argv::new([vec![
        "kill-session".into(),
        "-t".into(),
        format!("={session}"),
    ]])
}

pub fn attach(session: &str) -> Argv {
    Argv::new([vec![
        "attach-session".into(),
        "-t".into(),
        format!("={session}"),
    ]])
}

/// The server's prefix key (`C-b` unless changed), as `show-options` prints it.
pub fn prefix_key() -> Argv {
    Argv::new([vec!["show-options", "-gv", "prefix"]])
}

/// A task session's status line, left side: `label` (a format: `#` doubled), long enough to
/// show it whole. Set on that session only.
pub fn label_session(session: &str, label: &str) -> Argv {
    // `set-option -t` takes a pane: the session's, by its exact name.
    let target = format!("={session}:");
    Argv::new([
        vec![
            "set-option".to_string(),
            "-t".into(),
            target.clone(),
            "status-left".into(),
            label.replace('#', "##"),
        ],
        vec![
            "set-option".to_string(),
            "-t".into(),
            target,
            "status-left-length".into(),
            "100".into(),
        ],
    ])
}

/// A popup on the user's own tmux (the one `$TMUX` names) running `command`, a shell command
/// line, closed when it exits: how a dashboard inside the user's tmux shows a task's session.
pub fn popup(command: &str) -> Argv {
    Argv::new([vec![
        "display-popup",
        "-E",
        "-w",
        "95%",
        "-h",
        "95%",
        command,
    ]])
}

/// Types `text` literally: `-l` so words like "Enter" are not key names, `--` so text starting
/// with `-` is not an option.
pub fn send_literal(pane: &str, text: &str) -> Argv {
    Argv::new([vec!["send-keys", "-t", pane, "-l", "--", text]])
}

/// The visible screen of each pane, in one tmux invocation. `capture-pane -p` prints exactly
/// `pane_height` lines per pane, which is how the output is split again.
pub fn capture_panes<'a>(panes: impl IntoIterator<Item = &'a str>) -> Argv {
    Argv::new(
        panes
            .into_iter()
            .map(|pane| vec!["capture-pane", "-p", "-t", pane]),
    )
}

/// Leaves copy mode, in which a pane swallows keys.
pub fn cancel_copy_mode(pane: &str) -> Argv {
    Argv::new([vec!["send-keys", "-X", "-t", pane, "cancel"]])
}

/// Loads stdin into a named buffer: long or multi-line text never goes on argv.
pub fn load_buffer(buffer: &str) -> Argv {
    Argv::new([vec!["load-buffer", "-b", buffer, "-"]])
}

/// Pastes and deletes a buffer; `-p` brackets the paste when the application asked for it, so
/// a multi-line message arrives as one.
pub fn paste_buffer(buffer: &str, pane: &str) -> Argv {
    Argv::new([vec!["paste-buffer", "-p", "-d", "-b", buffer, "-t", pane]])
}

/// A message on the status line of the client showing `pane` for 5 s. The text is
/// format-expanded: `#` doubled keeps it literal.
pub fn show_message(pane: &str, text: &str) -> Argv {
    let text = text.replace('#', "##");
    Argv::new([vec![
        "display-message",
        "-d",
        "5000",
        "-t",
        pane,
        "--",
        &text,
    ]])
}

/// The terminal device of `pane`.
/// One pane's [`list_panes`] line, by its id.
pub fn pane_info(pane: &str) -> Argv {
    Argv::new([vec!["display-message", "-p", "-t", pane, PANE_FORMAT]])
}

pub fn pane_tty(pane: &str) -> Argv {
    Argv::new([vec!["display-message", "-p", "-t", pane, "#{pane_tty}"]])
}

pub fn send_key(pane: &str, key: &str) -> Argv {
    Argv::new([vec!["send-keys", "-t", pane, key]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: Argv) -> Vec<String> {
        args.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn new_session_is_one_command_queue() {
        let args = strings(new_task_session(&NewTaskSession {
            session: "cuekit-task-t_1",
            owner: Path::new("/h/.local/share/cuekit"),
            cwd: Path::new("/w/#x"),
            width: 200,
            height: 50,
            history_limit: 50000,
            script: Path::new("/w/#x/.cuekit/tasks/t_1/launch.sh"),
            transcript: Path::new("/w/#x/.cuekit/tasks/t_1/transcript.txt"),
        }));
        assert_eq!(
            args.join(" "),
            "set-option -g history-limit 50000 ; new-session -d -s cuekit-task-t_1 -x 200 -y 50 \
             -c /w/##x -P -F #{pane_id} #{pane_pid} -- /bin/sh \
             /w/#x/.cuekit/tasks/t_1/launch.sh ; set-option -t =cuekit-task-t_1: @cuekit_registry \
             /h/.local/share/cuekit ; set-option -p -t =cuekit-task-t_1: remain-on-exit on \
             ; pipe-pane -o -t =cuekit-task-t_1: exec cat >> '/w/##x/.cuekit/tasks/t_1/transcript.txt'"
        );
    }

    #[test]
    fn pipe_command_escapes_format_and_strftime() {
        assert_eq!(
            pipe_command(Path::new("/a%b/c'd#")),
            r"exec cat >> '/a%%b/c'\''d##'"
        );
    }

    #[test]
    fn one_session_is_looked_at_in_one_invocation() {
        let args = strings(look_at_session("cuekit-task-t_1", Some("%4")));
        assert_eq!(
            args.join(" "),
            format!(
                "list-panes -s -t =cuekit-task-t_1 -F {PANE_FORMAT} ; display-message -p cuekit:screen ; capture-pane -p -t %4"
            )
        );
        let (panes, screen) = split_session_look("a\t%4\ncuekit:screen\nline 1\ncuekit:screen\n");
        assert_eq!(panes, "a\t%4\n");
        assert_eq!(screen, Some("line 1\ncuekit:screen\n"));
        assert_eq!(split_session_look("a\t%4\n"), ("a\t%4\n", None));
    }

    #[test]
    fn a_final_semicolon_is_text_and_separators_stay_bare() {
        let typed = |text| strings(send_literal("%3", text)).pop().unwrap();
        assert_eq!(typed("ls;"), r"ls\;");
        assert_eq!(typed(r"x\;"), r"x\\;");
        assert_eq!(typed(";"), r"\;");
        assert_eq!(typed("a;b"), "a;b");
        assert_eq!(
            strings(capture_panes(["%1", "%2"])).join(" "),
            "capture-pane -p -t %1 ; capture-pane -p -t %2"
        );
    }

    #[test]
    fn a_start_directory_passes_as_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let cwd = Path::new(OsStr::from_bytes(b"/w/\xff#x;"));
        let args = new_task_session(&NewTaskSession {
            session: "s",
            owner: Path::new("/d"),
            cwd,
            width: 200,
            height: 50,
            history_limit: 1,
            script: Path::new("/l.sh"),
            transcript: Path::new("/t.txt"),
        });
        let at = args.iter().position(|word| word == "-c").unwrap();
        assert_eq!(args[at + 1].as_bytes(), b"/w/\xff##x\\;");
    }

    #[test]
    fn literal_text_is_protected() {
        assert_eq!(
            strings(send_literal("%3", "-x Enter")),
            ["send-keys", "-t", "%3", "-l", "--", "-x Enter"]
        );
    }
}

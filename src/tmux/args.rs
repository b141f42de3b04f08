//! Pure tmux argv builders. Every target is exact (`=session`, `%pane`): tmux matches a bare
//! session name by prefix, which could hit another task.

use std::ffi::OsString;
use std::path::Path;

/// Fields reported by [`list_panes`], tab-separated; parsed by [`super::parse_panes`].
const PANE_FORMAT: &str = "#{session_name}\t#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_in_mode}\t#{pane_height}\t#{history_size}\t#{window_activity}";

/// Output format of [`new_task_session`]: `<pane id> <pane pid>`.
pub const NEW_PANE_FORMAT: &str = "#{pane_id} #{pane_pid}";

pub fn session_name(task_id: &str) -> String {
    format!("cuekit-task-{task_id}")
}

/// Text placed in a tmux format string (start directory, pipe command) stays literal.
fn escape_format(text: &str) -> String {
    text.replace('#', "##")
}

pub struct NewTaskSession<'a> {
    pub session: &'a str,
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
pub fn new_task_session(new: &NewTaskSession) -> Vec<OsString> {
    let target = format!("={}:", new.session);
    let mut args: Vec<OsString> = vec![
        "set-option".into(),
        "-g".into(),
        "history-limit".into(),
        new.history_limit.to_string().into(),
        ";".into(),
        "new-session".into(),
        "-d".into(),
        "-s".into(),
        new.session.into(),
        "-x".into(),
        new.width.to_string().into(),
        "-y".into(),
        new.height.to_string().into(),
        "-c".into(),
        escape_format(&new.cwd.to_string_lossy()).into(),
    ];
    args.extend([
        "-P".into(),
        "-F".into(),
        NEW_PANE_FORMAT.into(),
        "--".into(),
        "/bin/sh".into(),
        new.script.as_os_str().to_owned(),
        ";".into(),
        "set-option".into(),
        "-p".into(),
        "-t".into(),
        target.clone().into(),
        "remain-on-exit".into(),
        "on".into(),
        ";".into(),
        "pipe-pane".into(),
        "-o".into(),
        "-t".into(),
        target.into(),
        pipe_command(new.transcript).into(),
    ]);
    args
}

/// `pipe-pane` runs its command through `/bin/sh -c` after format and strftime expansion, so
/// the path is shell-quoted and `#`/`%` doubled.
pub fn pipe_command(transcript: &Path) -> String {
    let quoted = crate::launch::single_quote(&transcript.to_string_lossy())
        .expect("filesystem paths contain no NUL");
    format!("exec cat >> {}", escape_format(&quoted).replace('%', "%%"))
}

pub fn list_panes() -> Vec<OsString> {
    vec![
        "list-panes".into(),
        "-a".into(),
        "-F".into(),
        PANE_FORMAT.into(),
    ]
}

/// Printed between a session's pane listing and its screen in [`look_at_session`].
const SCREEN_MARKER: &str = "cuekit:screen";

/// One task in one tmux invocation: its session's panes (as [`list_panes`] reports them) and,
/// with `screen_of`, that pane's visible screen after a marker line.
pub fn look_at_session(session: &str, screen_of: Option<&str>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "list-panes".into(),
        "-s".into(),
        "-t".into(),
        format!("={session}").into(),
        "-F".into(),
        PANE_FORMAT.into(),
    ];
    if let Some(pane) = screen_of {
        args.extend([
            ";".into(),
            "display-message".into(),
            "-p".into(),
            SCREEN_MARKER.into(),
            ";".into(),
            "capture-pane".into(),
            "-p".into(),
            "-t".into(),
            pane.into(),
        ]);
    }
    args
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

pub fn kill_session(session: &str) -> Vec<OsString> {
    vec![
        "kill-session".into(),
        "-t".into(),
        format!("={session}").into(),
    ]
}

pub fn attach(session: &str) -> Vec<OsString> {
    vec![
        "attach-session".into(),
        "-t".into(),
        format!("={session}").into(),
    ]
}

/// A popup on the user's own tmux (the one `$TMUX` names) running `command`, a shell command
/// line, closed when it exits: how a dashboard inside the user's tmux shows a task's session.
pub fn popup(command: &str) -> Vec<OsString> {
    vec![
        "display-popup".into(),
        "-E".into(),
        "-w".into(),
        "95%".into(),
        "-h".into(),
        "95%".into(),
        command.into(),
    ]
}

/// Types `text` literally: `-l` so words like "Enter" are not key names, `--` so text starting
/// with `-` is not an option.
pub fn send_literal(pane: &str, text: &str) -> Vec<OsString> {
    vec![
        "send-keys".into(),
        "-t".into(),
        pane.into(),
        "-l".into(),
        "--".into(),
        text.into(),
    ]
}

/// The visible screen of each pane, in one tmux invocation. `capture-pane -p` prints exactly
/// `pane_height` lines per pane, which is how the output is split again.
pub fn capture_panes<'a>(panes: impl IntoIterator<Item = &'a str>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    for pane in panes {
        if !args.is_empty() {
            args.push(";".into());
        }
        args.extend(["capture-pane".into(), "-p".into(), "-t".into(), pane.into()]);
    }
    args
}

/// Leaves copy mode, in which a pane swallows keys.
pub fn cancel_copy_mode(pane: &str) -> Vec<OsString> {
    vec![
        "send-keys".into(),
        "-X".into(),
        "-t".into(),
        pane.into(),
        "cancel".into(),
    ]
}

/// Loads stdin into a named buffer: long or multi-line text never goes on argv.
pub fn load_buffer(buffer: &str) -> Vec<OsString> {
    vec!["load-buffer".into(), "-b".into(), buffer.into(), "-".into()]
}

/// Pastes and deletes a buffer; `-p` brackets the paste when the application asked for it, so
/// a multi-line message arrives as one.
pub fn paste_buffer(buffer: &str, pane: &str) -> Vec<OsString> {
    vec![
        "paste-buffer".into(),
        "-p".into(),
        "-d".into(),
        "-b".into(),
        buffer.into(),
        "-t".into(),
        pane.into(),
    ]
}

pub fn send_key(pane: &str, key: &str) -> Vec<OsString> {
    vec!["send-keys".into(), "-t".into(), pane.into(), key.into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn new_session_is_one_command_queue() {
        let args = strings(new_task_session(&NewTaskSession {
            session: "cuekit-task-t_1",
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
             /w/#x/.cuekit/tasks/t_1/launch.sh ; set-option -p -t =cuekit-task-t_1: remain-on-exit on \
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
    fn literal_text_is_protected() {
        assert_eq!(
            strings(send_literal("%3", "-x Enter")),
            ["send-keys", "-t", "%3", "-l", "--", "-x Enter"]
        );
    }
}

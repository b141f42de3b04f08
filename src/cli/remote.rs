//! Commands on a host's tasks: the same command line runs on the host (through
//! `ops::forward`/`ops::relay`, which reach it only by the registry's host), and its reply is
//! printed here as the host's cuekit printed it.

use std::io::Write;
use std::path::Path;

use crate::ops;

/// This command line as given (after the program name): what the host's cuekit runs.
fn given_words() -> Vec<String> {
    std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
}

/// When `ids` are a host's tasks: runs this command line there, prints the reply and returns
/// the host's exit status. `None` for this machine's tasks.
pub fn forwarded(ids: &[String], cwd: &Path) -> anyhow::Result<Option<i32>> {
    forwarded_as(ids, given_words(), None, cwd)
}

/// [`forwarded`] with words of the caller's (and bytes for the host's stdin).
pub fn forwarded_as(
    ids: &[String],
    words: Vec<String>,
    stdin: Option<&[u8]>,
    cwd: &Path,
) -> anyhow::Result<Option<i32>> {
    let Some(host) = ops::host_of(ids)? else {
        return Ok(None);
    };
    let reply = ops::forward(&host, &words, stdin, cwd)?;
    std::io::stdout().write_all(&reply.stdout)?;
    eprint!("{}", reply.stderr);
    Ok(Some(reply.status))
}

/// When `ids` are a host's tasks: runs this command line there on this terminal (a followed
/// log; with `tty`, an attach) until it ends.
pub fn relayed(ids: &[String], tty: bool, cwd: &Path) -> anyhow::Result<Option<i32>> {
    match ops::host_of(ids)? {
        Some(host) => Ok(Some(ops::relay(&host, &given_words(), tty, cwd)?)),
        None => Ok(None),
    }
}

//! Pure builders: the ssh argv and the command line the remote shell runs. The remote line is
//! parsed by exactly one shell (the login shell sshd starts), so every word is single-quoted
//! exactly once; ssh itself adds no quoting.

use std::path::Path;
use std::time::Duration;

use super::Host;
use crate::domain::error::Result;
use crate::domain::launch::single_quote;

/// How long ssh may take to open a new TCP connection (`ConnectTimeout` does not cover a
/// control socket: [`super::connection`] probes that with its own deadline).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an idle multiplexed connection stays up for the next call.
pub const CONTROL_PERSIST: Duration = Duration::from_secs(300);

/// The options of every call: never a password or host-key prompt (`BatchMode`), host keys
/// checked as the user's ssh config says, one shared connection per host, and a dead peer
/// noticed within ~15 s even on a long stream.
pub fn options(control_path: &Path) -> Vec<String> {
    let settings = [
        "BatchMode=yes".to_string(),
        format!("ConnectTimeout={}", CONNECT_TIMEOUT.as_secs()),
        "ControlMaster=auto".to_string(),
        control_path_option(control_path),
        format!("ControlPersist={}", CONTROL_PERSIST.as_secs()),
        "ServerAliveInterval=5".to_string(),
        "ServerAliveCountMax=3".to_string(),
    ];
    settings
        .into_iter()
        .flat_map(|setting| ["-o".to_string(), setting])
        .collect()
}

/// `ControlPath=…`, with ssh's `%` tokens escaped and the path double-quoted (ssh reads an
/// `-o` value like a config line, so a space would split it).
fn control_path_option(path: &Path) -> String {
    let escaped = path
        .to_string_lossy()
        .replace('%', "%%")
        .replace('"', "\\\"");
    format!("ControlPath=\"{escaped}\"")
}

/// `ssh OPTIONS -T|-t -- DEST LINE`: `--` ends ssh's options, so neither the destination nor
/// the line can be read as one.
pub fn ssh_argv(host: &Host, line: &str, tty: bool) -> Vec<String> {
    let mut argv = vec!["ssh".to_string()];
    argv.extend(options(&host.control_path));
    argv.push(if tty { "-t" } else { "-T" }.to_string());
    argv.extend(["--".to_string(), host.ssh.clone(), line.to_string()]);
    argv
}

/// The remote line running the host's cuekit with `words`, in `cwd` when given:
/// `cd DIR && exec CUEKIT WORD…`. A leading `~` of a path is the remote home.
pub fn remote_line(cuekit: &str, cwd: Option<&str>, words: &[String]) -> Result<String> {
    let mut line = String::new();
    if let Some(dir) = cwd {
        line.push_str(&format!("cd {} && ", remote_path(dir)?));
    }
    line.push_str("exec ");
    line.push_str(&remote_path(cuekit)?);
    for word in words {
        line.push(' ');
        line.push_str(&single_quote(word)?);
    }
    Ok(line)
}

/// What `cuekit hosts` asks in its one round trip: the remote tmux version, then whether
/// systemd-logind keeps this user's processes after logout (`Linger`: `yes`, `no`, or `none`
/// without logind), one a line, then the host's task list as JSON.
pub fn probe_line(cuekit: &str) -> Result<String> {
    let list = remote_line(cuekit, None, &words(&["--json", "list", "--all"]))?;
    Ok(format!(
        "printf '%s\\n' \"$(tmux -V 2>/dev/null || echo none)\" \
         \"$(loginctl show-user \"$(id -un)\" --property=Linger --value 2>/dev/null || echo none)\"; \
         {list}"
    ))
}

/// Where `cuekit host install` puts the binary when the host's `cuekit` is a bare name.
pub const INSTALL_PATH: &str = "~/.local/bin/cuekit";

/// The line `cuekit host install` runs: the OS and architecture first (the copy goes ahead
/// only where they are this build's), then the binary from stdin into a temp file beside
/// `path`, renamed over it (a running cuekit keeps its old file), then its `--version`.
pub fn install_line(path: &str) -> Result<String> {
    let (dir, _) = path.rsplit_once('/').unwrap_or((".", path));
    let target = remote_path(path)?;
    let temp = remote_path(&format!("{path}.installing"))?;
    Ok(format!(
        "[ \"$(uname -s)/$(uname -m)\" = {} ] || {{ echo \"host is $(uname -s)/$(uname -m)\" >&2; exit 3; }}; \
         mkdir -p {} && cat > {temp} && chmod 755 {temp} && mv -f {temp} {target} && exec {target} --version",
        single_quote(&host_platform())?,
        remote_path(if dir.is_empty() { "/" } else { dir })?,
    ))
}

/// This build's platform as `uname -s`/`uname -m` print it (`Linux/x86_64`).
pub fn host_platform() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "aarch64" if os == "Darwin" => "arm64",
        other => other,
    };
    format!("{os}/{arch}")
}

/// A path for the remote shell: quoted, except that `~` / `~/…` become the remote `$HOME`.
fn remote_path(path: &str) -> Result<String> {
    Ok(match path.strip_prefix('~') {
        Some("") => "\"$HOME\"".to_string(),
        Some(rest) if rest.starts_with('/') => format!("\"$HOME\"{}", single_quote(rest)?),
        _ => single_quote(path)?,
    })
}

pub fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn host() -> Host {
        Host {
            name: "gpu".into(),
            ssh: "me@gpu".into(),
            cuekit: "cuekit".into(),
            cwd: None,
            control_path: PathBuf::from("/run/user/1/cuekit-ssh/gpu"),
        }
    }

    #[test]
    fn every_call_is_batch_multiplexed_and_time_limited() {
        let argv = ssh_argv(&host(), "exec 'cuekit' '--version'", false);
        let joined = argv.join(" ");
        for option in [
            "-o BatchMode=yes",
            "-o ConnectTimeout=5",
            "-o ControlMaster=auto",
            "-o ControlPath=\"/run/user/1/cuekit-ssh/gpu\"",
            "-o ControlPersist=300",
        ] {
            assert!(joined.contains(option), "{option} missing from {joined}");
        }
        assert!(!joined.contains("StrictHostKeyChecking"));
        assert_eq!(
            &argv[argv.len() - 4..],
            ["-T", "--", "me@gpu", "exec 'cuekit' '--version'"]
        );
        assert_eq!(ssh_argv(&host(), "x", true)[argv.len() - 4], "-t");
    }

    #[test]
    fn control_paths_escape_ssh_tokens_and_quotes() {
        assert_eq!(
            control_path_option(Path::new("/h/a b/%d\"x")),
            "ControlPath=\"/h/a b/%%d\\\"x\""
        );
    }

    #[test]
    fn install_checks_the_platform_then_replaces_the_binary_whole() {
        let line = install_line("~/.local/bin/cuekit").unwrap();
        assert!(line.starts_with(&format!(
            "[ \"$(uname -s)/$(uname -m)\" = '{}' ] ||",
            host_platform()
        )));
        assert!(line.ends_with(
            "mkdir -p \"$HOME\"'/.local/bin' && cat > \"$HOME\"'/.local/bin/cuekit.installing' \
             && chmod 755 \"$HOME\"'/.local/bin/cuekit.installing' \
             && mv -f \"$HOME\"'/.local/bin/cuekit.installing' \"$HOME\"'/.local/bin/cuekit' \
             && exec \"$HOME\"'/.local/bin/cuekit' --version"
        ));
    }

    #[test]
    fn the_remote_line_quotes_each_word_once() {
        let line = remote_line(
            "~/.local/bin/cuekit",
            Some("~"),
            &words(&["submit", "-x", "it's $(rm -rf /)\nnext"]),
        )
        .unwrap();
        assert_eq!(
            line,
            "cd \"$HOME\" && exec \"$HOME\"'/.local/bin/cuekit' 'submit' '-x' 'it'\\''s $(rm -rf /)\nnext'"
        );
        // One shell reads it back into exactly the words given.
        let parsed = shlex::split(line.split(" && exec ").nth(1).unwrap()).unwrap();
        assert_eq!(parsed[3], "it's $(rm -rf /)\nnext");
        assert_eq!(
            remote_line("/opt/ck", Some("/srv/a b"), &[]).unwrap(),
            "cd '/srv/a b' && exec '/opt/ck'"
        );
        assert!(remote_line("cuekit", None, &words(&["a\0b"])).is_err());
    }
}

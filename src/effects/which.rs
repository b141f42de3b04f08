//! Finding executables on PATH the way the pane's shell will, with `stat` calls only.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The executable `name` resolves to: itself when it has a `/`, else the first match on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_executable(&path).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| is_executable(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_and_not_a_missing_binary() {
        assert!(find_on_path("sh").is_some());
        assert_eq!(find_on_path("/bin/sh"), Some(PathBuf::from("/bin/sh")));
        assert!(find_on_path("cuekit-no-such-binary").is_none());
        assert!(find_on_path("/etc/passwd").is_none(), "not executable");
    }
}

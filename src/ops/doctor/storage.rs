//! Where cuekit writes: its data directory, the project's `.cuekit/`, and `.gitignore`.

use std::path::Path;

use crate::effects::store;

use super::{Check, Level};

pub(super) fn storage_checks(cwd: &Path, fix: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(registry) = store::registry_dir() {
        checks.push(writable_dir("task registry", &registry, fix));
    }
    let tasks = store::project_tasks_root(cwd).unwrap_or_else(|| cwd.join(store::TASKS_SUBDIR));
    checks.push(writable_dir("task directory", &tasks, fix));
    let broken: Vec<String> = std::fs::read_dir(&tasks)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| dir.join(store::RECORD_FILE).is_file())
        .filter_map(|dir| store::load(&dir).err().map(|err| err.message))
        .collect();
    checks.push(if broken.is_empty() {
        Check::new("task records", Level::Ok, "every task.json parses")
    } else {
        Check::new("task records", Level::Fail, broken.join("; "))
            .next("move the damaged task directory aside; other tasks are unaffected")
    });
    checks.push(gitignore_check(cwd, fix));
    checks
}

pub(super) fn writable_dir(name: &str, dir: &Path, fix: bool) -> Check {
    if !dir.exists() {
        if fix {
            return match std::fs::create_dir_all(dir) {
                Ok(()) => Check {
                    fixed: Some(format!("created {}", dir.display())),
                    ..Check::new(name, Level::Ok, format!("{} created", dir.display()))
                },
                Err(err) => Check::new(
                    name,
                    Level::Fail,
                    format!("cannot create {}: {err}", dir.display()),
                ),
            };
        }
        return Check::new(
            name,
            Level::Ok,
            format!(
                "{} does not exist yet (created on first submit)",
                dir.display()
            ),
        );
    }
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    match std::fs::write(&probe, b"") {
        Ok(()) => {
            let _ = std::fs::remove_file(&probe);
            Check::new(name, Level::Ok, format!("{} is writable", dir.display()))
        }
        Err(err) => Check::new(
            name,
            Level::Fail,
            format!("{} is not writable: {err}", dir.display()),
        )
        .next("fix its ownership or permissions"),
    }
}

/// In a git work tree, `.cuekit/` (transcripts, prompts) should not be committed.
pub(super) fn gitignore_check(cwd: &Path, fix: bool) -> Check {
    let Some(root) = cwd.ancestors().find(|dir| dir.join(".git").exists()) else {
        return Check::new("gitignore", Level::Ok, "not in a git repository");
    };
    let path = root.join(".gitignore");
    let text = match crate::effects::project::Root::new(root)
        .and_then(|root| root.read_text(Path::new(".gitignore")))
    {
        Ok(text) => text.unwrap_or_default(),
        Err(err) => {
            return Check::new("gitignore", Level::Warn, err.message)
                .next("make .gitignore a regular file of the project's");
        }
    };
    if ignores_cuekit(&text) {
        return Check::new(
            "gitignore",
            Level::Ok,
            format!("{} ignores .cuekit/", path.display()),
        );
    }
    if fix {
        return match add_gitignore_entry(root) {
            Ok(()) => Check {
                fixed: Some(format!("added .cuekit/ to {}", path.display())),
                ..Check::new(
                    "gitignore",
                    Level::Ok,
                    format!("{} ignores .cuekit/", path.display()),
                )
            },
            Err(err) => Check::new("gitignore", Level::Fail, err.message),
        };
    }
    Check::new(
        "gitignore",
        Level::Warn,
        format!(
            "{} does not ignore .cuekit/ (task transcripts and prompts)",
            path.display()
        ),
    )
    .next("run `cuekit doctor --fix` or `cuekit init`")
}

pub fn ignores_cuekit(gitignore: &str) -> bool {
    gitignore
        .lines()
        .map(str::trim)
        .any(|line| matches!(line, ".cuekit" | ".cuekit/" | "/.cuekit" | "/.cuekit/"))
}

/// Appends `.cuekit/` to `<dir>/.gitignore`, creating it if needed; a no-op when present. The
/// file is the repository's: read and written through [`crate::effects::project`], never through a link.
pub fn add_gitignore_entry(dir: &Path) -> crate::domain::error::Result<()> {
    let root = crate::effects::project::Root::new(dir)?;
    let file = Path::new(".gitignore");
    let existing = root.read_text(file)?.unwrap_or_default();
    if ignores_cuekit(&existing) {
        return Ok(());
    }
    let separator = if existing.is_empty() || existing.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    root.append(file, format!("{separator}.cuekit/\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_entry_is_added_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target").unwrap();
        add_gitignore_entry(dir.path()).unwrap();
        add_gitignore_entry(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".gitignore")).unwrap(),
            "target\n.cuekit/\n"
        );
        assert!(ignores_cuekit("/.cuekit\n"));
        assert!(!ignores_cuekit(".cuekit.yaml\n"));
    }
}

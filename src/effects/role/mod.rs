//! Roles (agent profiles): the kinds of children a parent sends again and again — a worker, a
//! reviewer, a tester — each a Markdown file whose YAML front matter sets submit defaults and
//! whose body is instructions rendered into the child's prompt.
//!
//! A role is looked up in three scopes, nearest first: the project (`.cuekit/agents/NAME.md`,
//! the nearest such directory above the working directory, as `.cuekit.yaml` is found), the
//! user's config directory (`agents/NAME.md`), then the built-ins compiled into the binary. A
//! nearer profile overrides each front-matter field it sets; its body replaces the lower body,
//! or with `instructions_mode: append` is added after it. A broken profile is an error naming
//! its file, line and column, like a broken config file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domain::adapter::ADAPTERS;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::Mode;
use crate::effects::project::Root;

/// Where project profiles live, relative to a project directory.
pub const PROJECT_DIR: &str = ".cuekit/agents";
const USER_DIR: &str = "agents";
const EXTENSION: &str = "md";

/// Shipped with the binary, so a parent has useful roles before writing any.
const BUILTINS: &[(&str, &str)] = &[
    ("planner", include_str!("builtin/planner.md")),
    ("reviewer", include_str!("builtin/reviewer.md")),
    ("tester", include_str!("builtin/tester.md")),
    ("worker", include_str!("builtin/worker.md")),
];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstructionsMode {
    /// The body replaces the instructions of the profiles below it.
    #[default]
    Replace,
    /// The body is added after the instructions of the profiles below it.
    Append,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    pub description: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub approval_mode: Option<String>,
    pub tags: Option<Vec<String>>,
    pub instructions_mode: Option<InstructionsMode>,
    /// The role's check (`check: {run, rounds, timeout, protect}`, as in the config), for a
    /// task that names none.
    pub check: Option<crate::effects::config::schema::CheckConfig>,
}

/// One profile file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub front: FrontMatter,
    pub body: String,
}

/// Where a profile came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum RoleSource {
    Project(PathBuf),
    User(PathBuf),
    BuiltIn,
}

impl std::fmt::Display for RoleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleSource::Project(path) | RoleSource::User(path) => write!(f, "{}", path.display()),
            RoleSource::BuiltIn => write!(f, "built-in"),
        }
    }
}

/// A role with every scope applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Role {
    pub name: String,
    pub description: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub approval_mode: Option<String>,
    pub tags: Vec<String>,
    pub instructions: String,
    /// The nearest profile's check and where it was written: a project's profile is the
    /// repository's word, and its check (code to run) is not used.
    #[serde(skip)]
    pub check: Option<(crate::effects::config::schema::CheckConfig, RoleSource)>,
    /// The nearest profile: the one that had the last word.
    pub source: RoleSource,
    /// Every profile that contributed, lowest (built-in) first.
    pub layers: Vec<RoleSource>,
}

/// Role names become file names: letters, digits, `-` and `_` only.
pub fn is_role_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.starts_with('-')
}

/// Parses a profile; `label` names it in errors (a path, or `built-in:NAME.md`).
pub fn parse_profile(text: &str, label: &str) -> Result<Profile> {
    let Some((yaml, body)) = split_front_matter(text) else {
        return Ok(Profile {
            front: FrontMatter::default(),
            body: text.to_string(),
        });
    };
    let yaml = yaml.map_err(|message| invalid(label, 1, 1, message))?;
    if let Some((line, column)) =
        crate::domain::yaml_depth::too_deep(yaml, crate::domain::yaml_depth::MAX_DEPTH)
    {
        return Err(invalid(
            label,
            line + 1,
            column,
            crate::domain::yaml_depth::message(),
        ));
    }
    let front: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        serde_yaml_ng::from_str(yaml).map_err(|err| {
            let (line, column) = err.location().map_or((1, 1), |at| (at.line(), at.column()));
            let message = err.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            // The YAML starts on the line after the opening `---`.
            invalid(label, line + 1, column, message.to_string())
        })?
    };
    if let Some(agent) = &front.agent
        && !ADAPTERS.iter().any(|adapter| adapter.kind() == agent)
    {
        let known: Vec<&str> = ADAPTERS.iter().map(|a| a.kind()).collect();
        return Err(invalid(
            label,
            line_of_key(yaml, "agent") + 1,
            1,
            format!(
                "agent: unknown agent `{agent}`, expected one of {}",
                known.join(", ")
            ),
        ));
    }
    // These become words of the agent's command line.
    for (key, value) in [
        ("model", &front.model),
        ("approval_mode", &front.approval_mode),
    ] {
        if let Some(value) = value
            && let Err(err) = crate::effects::project::names::option_value(key, value)
        {
            return Err(invalid(
                label,
                line_of_key(yaml, key) + 1,
                1,
                format!("{key}: {}", err.message),
            ));
        }
    }
    Ok(Profile {
        front,
        body: body.to_string(),
    })
}

/// `Some((front matter, body))` when the text opens with a `---` line; the front matter is an
/// error when its closing `---` is missing.
fn split_front_matter(text: &str) -> Option<(std::result::Result<&str, String>, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((Ok(&rest[..offset]), &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Some((
        Err("the front matter opened with `---` is never closed by a `---` line".to_string()),
        "",
    ))
}

fn line_of_key(yaml: &str, key: &str) -> usize {
    yaml.lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map_or(1, |index| index + 1)
}

fn invalid(label: &str, line: usize, column: usize, message: String) -> Error {
    Error::new(
        ErrorCode::ConfigInvalid,
        format!("{label}:{line}:{column}: {message}"),
    )
    .with_hint(
        "fix the profile: YAML front matter between `---` lines with description, agent, model, \
         mode, approval_mode, tags, instructions_mode (replace|append), check, then the \
         instructions",
    )
}

/// Folds profiles, lowest scope first, into one role.
pub fn merge(name: &str, layers: Vec<(RoleSource, Profile)>) -> Role {
    let mut role = Role {
        name: name.to_string(),
        description: None,
        agent: None,
        model: None,
        mode: None,
        approval_mode: None,
        tags: Vec::new(),
        instructions: String::new(),
        check: None,
        source: RoleSource::BuiltIn,
        layers: Vec::new(),
    };
    for (source, Profile { front, body }) in layers {
        role.description = front.description.or(role.description);
        role.agent = front.agent.or(role.agent);
        role.model = front.model.or(role.model);
        role.mode = front.mode.or(role.mode);
        role.approval_mode = front.approval_mode.or(role.approval_mode);
        role.tags = front.tags.unwrap_or(role.tags);
        role.check = front
            .check
            .map(|check| (check, source.clone()))
            .or(role.check);
        let body = body.trim();
        role.instructions = match front.instructions_mode.unwrap_or_default() {
            InstructionsMode::Replace => body.to_string(),
            InstructionsMode::Append if role.instructions.is_empty() => body.to_string(),
            InstructionsMode::Append if body.is_empty() => role.instructions,
            InstructionsMode::Append => format!("{}\n\n{body}", role.instructions),
        };
        role.source = source.clone();
        role.layers.push(source);
    }
    role
}

/// The profile directories that apply to one working directory.
#[derive(Debug, Clone)]
pub struct Roles {
    /// The project folder holding the nearest `.cuekit/agents`: profiles there are the
    /// repository's, read through [`crate::effects::project`] (a link out of the project is refused).
    project: Option<Root>,
    user_dir: Option<PathBuf>,
}

/// A role as `cuekit roles` lists it: resolved, or broken with its located error (one broken
/// profile does not hide the others).
#[derive(Debug, Clone)]
pub enum Listed {
    Role(Box<Role>),
    Broken { name: String, error: Error },
}

impl Roles {
    pub fn for_cwd(cwd: &Path) -> Roles {
        Roles {
            project: cwd
                .ancestors()
                .find(|dir| std::fs::symlink_metadata(dir.join(PROJECT_DIR)).is_ok())
                .and_then(|dir| Root::new(dir).ok()),
            user_dir: crate::effects::config::user_file()
                .and_then(|file| Some(file.parent()?.join(USER_DIR)))
                .filter(|dir| dir.is_dir()),
        }
    }

    /// The role `name` with every scope applied; unknown or broken is an error.
    pub fn resolve(&self, name: &str) -> Result<Role> {
        if !is_role_name(name) {
            return Err(Error::invalid_input(format!(
                "'{name}' is not a role name: use letters, digits, '-' and '_'"
            ))
            .with_hint("run `cuekit roles` to see the roles there are"));
        }
        let file = format!("{name}.{EXTENSION}");
        let mut layers = Vec::new();
        if let Some((_, text)) = BUILTINS.iter().find(|(builtin, _)| *builtin == name) {
            let profile = parse_profile(text, &format!("built-in:{file}"))?;
            layers.push((RoleSource::BuiltIn, profile));
        }
        if let Some(dir) = &self.user_dir {
            let path = dir.join(&file);
            if path.is_file() {
                let text =
                    std::fs::read_to_string(&path).map_err(|err| Error::io("read", &path, err))?;
                let profile = parse_profile(&text, &path.display().to_string())?;
                layers.push((RoleSource::User(path), profile));
            }
        }
        if let Some(project) = &self.project {
            let relative = Path::new(PROJECT_DIR).join(&file);
            if let Some(text) = project.read_text(&relative)? {
                let path = project.path().join(&relative);
                let profile = parse_profile(&text, &path.display().to_string())?;
                layers.push((RoleSource::Project(path), profile));
            }
        }
        if layers.is_empty() {
            let known = self.names()?.into_iter().collect::<Vec<_>>().join(", ");
            return Err(
                Error::invalid_input(format!("no role named '{name}'")).with_hint(format!(
                    "known roles: {known}; add one as {PROJECT_DIR}/{name}.{EXTENSION}"
                )),
            );
        }
        Ok(merge(name, layers))
    }

    /// Every role there is, each resolved or with the error that breaks it.
    pub fn all(&self) -> Result<Vec<Listed>> {
        Ok(self
            .names()?
            .into_iter()
            .map(|name| match self.resolve(&name) {
                Ok(role) => Listed::Role(Box::new(role)),
                Err(error) => Listed::Broken { name, error },
            })
            .collect())
    }

    fn names(&self) -> Result<BTreeSet<String>> {
        let mut names: BTreeSet<String> = BUILTINS.iter().map(|(n, _)| n.to_string()).collect();
        let role_name = |file: &std::ffi::OsStr| {
            let file = Path::new(file);
            let stem = file.file_stem()?.to_str()?;
            (file.extension()? == EXTENSION && is_role_name(stem)).then(|| stem.to_string())
        };
        if let Some(dir) = &self.user_dir {
            let entries = std::fs::read_dir(dir).map_err(|err| Error::io("read", dir, err))?;
            names.extend(
                entries
                    .flatten()
                    .filter(|entry| entry.path().is_file())
                    .filter_map(|entry| role_name(&entry.file_name())),
            );
        }
        if let Some(project) = &self.project {
            // Every name is listed; one that is no regular file shows as broken, located.
            names.extend(
                project
                    .list(Path::new(PROJECT_DIR))?
                    .iter()
                    .filter_map(|file| role_name(file)),
            );
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Roles from a project folder (its profiles in `.cuekit/agents/`) and a user folder.
    fn roles_in(project: Option<&Path>, user: Option<&Path>) -> Roles {
        Roles {
            project: project.map(|dir| Root::new(dir).unwrap()),
            user_dir: user.map(Path::to_path_buf),
        }
    }

    fn roles_of(all: Vec<Listed>) -> Vec<Role> {
        all.into_iter()
            .map(|listed| match listed {
                Listed::Role(role) => *role,
                Listed::Broken { error, .. } => panic!("{}", error.message),
            })
            .collect()
    }

    #[test]
    fn every_builtin_parses_and_has_instructions() {
        let roles = roles_in(None, None);
        let all = roles_of(roles.all().unwrap());
        let names: Vec<&str> = all.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["planner", "reviewer", "tester", "worker"]);
        for role in &all {
            assert!(role.description.is_some(), "{}", role.name);
            assert!(role.instructions.len() > 100, "{}", role.name);
            assert_eq!(role.source, RoleSource::BuiltIn);
        }
        assert_eq!(
            roles.resolve("reviewer").unwrap().approval_mode.as_deref(),
            Some("plan")
        );
    }

    #[test]
    fn project_overrides_user_overrides_builtin_with_replace_and_append() {
        let dir = tempfile::tempdir().unwrap();
        let (root, user) = (dir.path().join("p"), dir.path().join("u"));
        let project = root.join(PROJECT_DIR);
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        // The user replaces the built-in worker's body and sets a model.
        std::fs::write(
            user.join("worker.md"),
            "---\nmodel: gemini-2.5-pro\ntags: [mine]\n---\nUser worker rules.\n",
        )
        .unwrap();
        // The project appends to that and switches the mode.
        std::fs::write(
            project.join("worker.md"),
            "---\ninstructions_mode: append\nmode: batch\n---\nProject rule: run make check.\n",
        )
        .unwrap();
        let roles = roles_in(Some(&root), Some(&user));
        let project = std::fs::canonicalize(&project).unwrap();
        let worker = roles.resolve("worker").unwrap();
        assert_eq!(
            worker.instructions,
            "User worker rules.\n\nProject rule: run make check."
        );
        assert_eq!(worker.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(worker.mode, Some(Mode::Batch));
        assert_eq!(worker.tags, ["mine"]);
        // The built-in's description survives: no nearer profile set one.
        assert!(worker.description.unwrap().contains("end to end"));
        assert_eq!(
            worker.layers,
            [
                RoleSource::BuiltIn,
                RoleSource::User(user.join("worker.md")),
                RoleSource::Project(project.join("worker.md"))
            ]
        );
        assert_eq!(
            worker.source,
            RoleSource::Project(project.join("worker.md"))
        );

        // Appending to the built-in keeps its body first.
        std::fs::remove_file(user.join("worker.md")).unwrap();
        let roles = roles_in(Some(&root), None);
        let worker = roles.resolve("worker").unwrap();
        assert!(worker.instructions.starts_with("You are a worker"));
        assert!(
            worker
                .instructions
                .ends_with("\n\nProject rule: run make check.")
        );

        // A project-only role, with no front matter at all.
        std::fs::write(project.join("docs-writer.md"), "Write the docs.\n").unwrap();
        let writer = roles.resolve("docs-writer").unwrap();
        assert_eq!(writer.instructions, "Write the docs.");
        let all = roles_of(roles.all().unwrap());
        assert!(all.iter().any(|r| r.name == "docs-writer"));
    }

    #[test]
    fn a_broken_profile_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(PROJECT_DIR);
        std::fs::create_dir_all(&agents).unwrap();
        let path = std::fs::canonicalize(&agents).unwrap().join("bad.md");
        std::fs::write(&path, "---\ndescription: ok\nmodle: x\n---\nbody\n").unwrap();
        let roles = roles_in(Some(dir.path()), None);
        let err = roles.resolve("bad").unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfigInvalid);
        assert!(
            err.message
                .starts_with(&format!("{}:3:1: unknown field `modle`", path.display())),
            "{}",
            err.message
        );
        // `cuekit roles` lists it broken, with its place, beside the others.
        let all = roles.all().unwrap();
        assert!(all.iter().any(|listed| matches!(listed,
            Listed::Broken { name, error } if name == "bad" && error.message.contains("bad.md:3:1"))));
        assert!(
            all.iter()
                .any(|listed| matches!(listed, Listed::Role(role) if role.name == "worker"))
        );
        // A profile that is a link out of the project is refused, located, not read.
        let home = tempfile::tempdir().unwrap();
        let secret = home.path().join("id_ed25519");
        std::fs::write(&secret, "PRIVATE KEY").unwrap();
        std::os::unix::fs::symlink(&secret, agents.join("leak.md")).unwrap();
        let err = roles.resolve("leak").unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsafeProjectData);
        assert!(!err.message.contains("PRIVATE KEY"));

        let err = parse_profile("---\nmode: sometimes\n---\n", "x.md").unwrap_err();
        assert!(
            err.message.starts_with("x.md:2:7: mode: unknown variant"),
            "{}",
            err.message
        );
        let err = parse_profile("---\ntags: [a]\nagent: nope\n---\n", "x.md").unwrap_err();
        assert!(
            err.message
                .starts_with("x.md:3:1: agent: unknown agent `nope`"),
            "{}",
            err.message
        );
        let err = parse_profile("---\nmodel: x\n", "x.md").unwrap_err();
        assert!(err.message.contains("never closed"), "{}", err.message);
    }

    #[test]
    fn unknown_and_unsafe_names_are_refused() {
        let roles = roles_in(None, None);
        assert_eq!(
            roles.resolve("nobody").unwrap_err().code,
            ErrorCode::InvalidInput
        );
        assert!(
            roles
                .resolve("nobody")
                .unwrap_err()
                .hint
                .unwrap()
                .contains("worker")
        );
        for bad in ["../worker", "a/b", "", "-x", "a.b"] {
            assert!(!is_role_name(bad), "{bad}");
            assert_eq!(
                roles.resolve(bad).unwrap_err().code,
                ErrorCode::InvalidInput
            );
        }
    }
}

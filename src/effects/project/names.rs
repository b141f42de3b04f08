//! Strict shapes for names that project data hands to other programs: a word that becomes part
//! of a git config key or lands on an agent's command line must not be able to mean anything
//! else there (an option, a second key, a second line).

use crate::domain::error::{Error, ErrorCode, Result};

/// A submodule's name, as `.gitmodules` gives it: it becomes part of the config key
/// `submodule.<name>.url`. No control character (a newline would start another key), no `..`
/// path component (git itself refuses those), no leading `-`, no `=` (in a `-c key=value` it
/// would end the key: the audit's code execution), at most 255 bytes. The key also goes to git
/// out of band (`GIT_CONFIG_*`), so the shape is a second wall, not the only one.
pub fn submodule_name(name: &str) -> Result<&str> {
    let fine = !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('-')
        && !name.contains('=')
        && !name.chars().any(char::is_control)
        && !name.split(['/', '\\']).any(|part| part == "..");
    fine.then_some(name)
        .ok_or_else(|| unsafe_name("submodule name", name))
}

/// A submodule's path: plain relative names, no leading `-`.
pub fn submodule_path(path: &str) -> Result<&str> {
    let fine = !path.starts_with('-')
        && !path.chars().any(char::is_control)
        && crate::effects::project::files::plain_relative(std::path::Path::new(path)).is_ok();
    fine.then_some(path)
        .ok_or_else(|| unsafe_name("submodule path", path))
}

/// A value cuekit passes as the argument of an option (a model name, a URL, a profile): never
/// empty, never starting with `-` (the program would read an option), no control characters.
pub fn option_value<'a>(what: &str, value: &'a str) -> Result<&'a str> {
    let fine = !value.is_empty() && !value.starts_with('-') && !value.chars().any(char::is_control);
    fine.then_some(value)
        .ok_or_else(|| unsafe_name(what, value))
}

fn unsafe_name(what: &str, value: &str) -> Error {
    Error::new(
        ErrorCode::UnsafeProjectData,
        format!("{what} {value:?} is not one cuekit passes on"),
    )
    .with_hint("it must not start with '-' or hold control characters or '..' components")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_mean_something_else_are_refused() {
        assert!(submodule_name("lib").is_ok());
        assert!(submodule_name("vendor/odd name").is_ok());
        for bad in [
            "",
            "-x",
            "a\nb",
            "../x",
            "a/../b",
            "a\u{1b}]",
            "a.update=!touch x #",
        ] {
            assert!(submodule_name(bad).is_err(), "{bad:?}");
        }
        assert!(submodule_path("lib/x").is_ok());
        for bad in ["", "-lib", "/abs", "../up", "a/../b", "a\n"] {
            assert!(submodule_path(bad).is_err(), "{bad:?}");
        }
        assert!(option_value("model", "gemini-2.5-flash").is_ok());
        for bad in ["", "--yolo", "-m", "a\nb"] {
            assert!(option_value("model", bad).is_err(), "{bad:?}");
        }
    }
}

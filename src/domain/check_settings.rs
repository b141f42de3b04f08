//! What a child could change to steer its check without touching a protected file: the
//! settings inside a manifest that decide which tests run (Cargo's `autotests`, `[[test]]`,
//! `harness`, …; pytest's section of `pyproject.toml` and `setup.cfg`), and a new top-level
//! module named like one the check's interpreter would otherwise load (Python's standard
//! library, Node's built-ins). Pure: the scratch checkout (`ops::check`) reads the files and
//! acts on the answers.

use serde_json::{Map, Value as J};
use toml_edit::{Item, Value};

/// Manifests whose runner settings are compared with the base's (at any depth).
pub const SETTINGS_FILES: &[&str] = &["Cargo.toml", "pyproject.toml", "setup.cfg"];

/// Whether a file named `name` carries runner settings [`changed_settings`] compares.
pub fn has_settings(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    SETTINGS_FILES.contains(&name)
}

/// The runner settings of the file at `path` that differ between the base's text and the
/// child's, named as `Cargo.toml: package.autotests`. A file either side cannot parse has none
/// to compare (its runner fails on it, or it was never read as such).
pub fn changed_settings(path: &str, base: &str, work: &str) -> Vec<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (base, work) = match name {
        "Cargo.toml" => (cargo_settings(base), cargo_settings(work)),
        "pyproject.toml" => (pyproject_settings(base), pyproject_settings(work)),
        "setup.cfg" => (setup_cfg_settings(base), setup_cfg_settings(work)),
        _ => return Vec::new(),
    };
    let (Some(base), Some(work)) = (base, work) else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    for (key, base_value) in &base {
        let work_value = work.get(key).unwrap_or(&J::Null);
        if !setting_kept(key, base_value, work_value) {
            changed.push(format!("{path}: {key}"));
        }
    }
    // A target the base has not (`[[bin]] new.test`) is the child's to add.
    for key in work
        .keys()
        .filter(|k| !base.contains_key(*k) && !k.contains("]] "))
    {
        if !work[key].is_null() && !setting_kept(key, &J::Null, &work[key]) {
            changed.push(format!("{path}: {key}"));
        }
    }
    changed
}

/// Whether a manifest the base has not is compared with an empty one. pytest's files are:
/// a new `pyproject.toml` or `setup.cfg` with a pytest section steers the runner (`addopts =
/// "-p plugin"`). A new `Cargo.toml` is not: it is a new crate, whose targets are the child's.
pub fn compared_when_new(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(name, "pyproject.toml" | "setup.cfg")
}

/// Whether the child's value of a setting keeps what the base's decides. Workspace members
/// may be added (an honest task adds a crate), never dropped.
fn setting_kept(key: &str, base: &J, work: &J) -> bool {
    if key == "workspace.members" {
        let listed = |v: &J| -> Vec<J> { v.as_array().cloned().unwrap_or_default() };
        let work = listed(work);
        return listed(base).iter().all(|member| work.contains(member));
    }
    base == work
}

type Settings = Map<String, J>;

/// The settings of a `Cargo.toml` that decide which targets `cargo test` builds and runs.
fn cargo_settings(text: &str) -> Option<Settings> {
    let doc = toml_edit::Document::parse(text.to_string()).ok()?;
    let root = doc.as_table();
    let mut out = Settings::new();
    let mut take = |key: String, item: Option<&Item>| {
        out.insert(key, item.map_or(J::Null, canon_item));
    };
    let table = |name: &str| root.get(name).and_then(Item::as_table_like);
    let package = table("package");
    for key in [
        "autotests",
        "autobins",
        "autoexamples",
        "autobenches",
        "autolib",
        "build",
    ] {
        take(format!("package.{key}"), package.and_then(|p| p.get(key)));
    }
    let lib = table("lib");
    for key in ["test", "harness", "doctest"] {
        take(format!("lib.{key}"), lib.and_then(|l| l.get(key)));
    }
    // A test target's path and harness decide what runs: the table as a whole.
    take("[[test]]".into(), root.get("test"));
    let workspace = table("workspace");
    for key in ["members", "default-members", "exclude"] {
        take(
            format!("workspace.{key}"),
            workspace.and_then(|w| w.get(key)),
        );
    }
    // A binary's, an example's or a bench's own tests: its `test` and `harness`, by name (a
    // new target is the child's to add).
    for kind in ["bin", "example", "bench"] {
        let targets = root.get(kind).map(canon_item);
        for target in targets.as_ref().and_then(J::as_array).into_iter().flatten() {
            let name = target.get("name").and_then(J::as_str).unwrap_or("?");
            for key in ["test", "harness"] {
                let value = target.get(key).cloned().unwrap_or(J::Null);
                out.insert(format!("[[{kind}]] {name}.{key}"), value);
            }
        }
    }
    Some(out)
}

/// pytest's settings in `pyproject.toml` (`[tool.pytest.ini_options]`, and `[tool.pytest]`
/// itself in newer pytest).
fn pyproject_settings(text: &str) -> Option<Settings> {
    let doc = toml_edit::Document::parse(text.to_string()).ok()?;
    let pytest = doc
        .as_table()
        .get("tool")
        .and_then(Item::as_table_like)
        .and_then(|tool| tool.get("pytest"));
    let mut out = Settings::new();
    out.insert("tool.pytest".into(), pytest.map_or(J::Null, canon_item));
    Some(out)
}

/// pytest's section of `setup.cfg` (`[tool:pytest]`), its lines without blanks and comments.
fn setup_cfg_settings(text: &str) -> Option<Settings> {
    let mut lines = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(section) = trimmed.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            inside = section.trim() == "tool:pytest";
            continue;
        }
        if inside && !trimmed.is_empty() && !trimmed.starts_with(['#', ';']) {
            lines.push(J::String(trimmed.to_string()));
        }
    }
    let mut out = Settings::new();
    let section = if lines.is_empty() && !text.contains("[tool:pytest]") {
        J::Null
    } else {
        J::Array(lines)
    };
    out.insert("[tool:pytest]".into(), section);
    Some(out)
}

/// A TOML item as plain data (formatting, comments and key order aside).
fn canon_item(item: &Item) -> J {
    match item {
        Item::None => J::Null,
        Item::Value(value) => canon_value(value),
        Item::Table(table) => J::Object(
            table
                .iter()
                .map(|(k, v)| (k.to_string(), canon_item(v)))
                .collect(),
        ),
        Item::ArrayOfTables(tables) => J::Array(
            tables
                .iter()
                .map(|t| {
                    J::Object(
                        t.iter()
                            .map(|(k, v)| (k.to_string(), canon_item(v)))
                            .collect(),
                    )
                })
                .collect(),
        ),
    }
}

fn canon_value(value: &Value) -> J {
    match value {
        Value::String(s) => J::String(s.value().clone()),
        Value::Integer(i) => J::from(*i.value()),
        Value::Float(f) => J::String(f.value().to_string()),
        Value::Boolean(b) => J::Bool(*b.value()),
        Value::Datetime(d) => J::String(d.value().to_string()),
        Value::Array(items) => J::Array(items.iter().map(canon_value).collect()),
        Value::InlineTable(table) => J::Object(
            table
                .iter()
                .map(|(k, v)| (k.to_string(), canon_value(v)))
                .collect(),
        ),
    }
}

/// Python's standard library as `sys.stdlib_module_names` lists it (3.11, with the names
/// 3.12–3.14 added), then the test runners' own (`pytest`, `pluggy`, …): a module of one of
/// these names at the root of the check's tree is imported in place of the real one
/// (`python -m` and pytest's rootdir put the tree first on `sys.path`).
pub const PYTHON_MODULES: &str = "\
     __future__ _pyrepl _colorize abc aifc annotationlib antigravity argparse array ast \
     asynchat asyncio asyncore atexit audioop base64 bdb binascii bisect builtins bz2 \
     cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys \
     compileall compression concurrent configparser contextlib contextvars copy copyreg crypt \
     csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils doctest email \
     encodings ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch fractions \
     ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib \
     heapq hmac html http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools \
     json keyword lib2to3 linecache locale logging lzma mailbox mailcap marshal math \
     mimetypes mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath \
     nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb pickle \
     pickletools pipes pkgutil platform plistlib poplib posix posixpath pprint profile pstats \
     pty pwd py_compile pyclbr pydoc pydoc_data pyexpat queue quopri random re readline \
     reprlib resource rlcompleter runpy sched secrets select selectors shelve shlex shutil \
     signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile \
     sre_constants sre_parse ssl stat statistics string stringprep struct subprocess sunau \
     symtable sys sysconfig syslog tabnanny tarfile telnetlib tempfile termios textwrap this \
     threading time timeit tkinter token tokenize tomllib trace traceback tracemalloc tty \
     turtle turtledemo types typing unicodedata unittest urllib uu uuid venv warnings wave \
     weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp zipfile zipimport \
     zlib zoneinfo \
     pytest _pytest pluggy iniconfig packaging py nose nose2 coverage exceptiongroup tomli";

/// Node's built-in modules (`require('module').builtinModules` of Node 20, and the ones
/// reached only as `node:…`): a package of one of these names in the tree's `node_modules`
/// is what a bare `require` of a `node:`-only one finds, and no honest change adds one.
pub const NODE_MODULES: &str = "\
     assert async_hooks buffer child_process cluster console constants crypto dgram \
     diagnostics_channel dns domain events fs http http2 https inspector module net os path \
     perf_hooks process punycode querystring readline repl stream string_decoder sys timers \
     tls trace_events tty url util v8 vm wasi worker_threads zlib test sqlite sea";

/// A top-level entry the child added that shadows a module the check's interpreter loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadow {
    /// The files removed from the check's tree for it.
    pub paths: Vec<String>,
    /// `unittest/` and the like: what the verdict names.
    pub entry: String,
    /// `Python's unittest`.
    pub shadows: String,
}

/// The Python module a root entry path names when it is a module or a regular package's
/// file: `unittest.py`, `unittest/__init__.py` (→ `unittest`), `x.cpython-311.so` (→ `x`).
fn python_module(path: &str) -> Option<(&str, String)> {
    match path.split_once('/') {
        Some((dir, rest)) => {
            let init = rest
                .strip_prefix("__init__.")
                .is_some_and(|ext| ["py", "pyc", "so", "pyd"].contains(&ext));
            init.then(|| (dir, format!("{dir}/")))
        }
        None => {
            let (stem, ext) = path.split_once('.')?;
            let module = ["py", "pyc", "pyw", "pyd"].contains(&ext)
                || (ext.ends_with("so") && !ext.contains('/'));
            module.then(|| (stem, path.to_string()))
        }
    }
}

/// The entries the child added (`work` paths not in `base`, both whole listings of paths) that
/// shadow a standard module: a Python module or regular package at the root named in
/// [`PYTHON_MODULES`], a `node_modules/<name>` package named in [`NODE_MODULES`]. Each names
/// every new file under it, so the check's tree drops all of them.
pub fn shadowing(base: &[&str], work: &[&str]) -> Vec<Shadow> {
    let new: Vec<&str> = work
        .iter()
        .copied()
        .filter(|p| base.binary_search(p).is_err())
        .collect();
    let mut shadows: Vec<Shadow> = Vec::new();
    let mut add = |entry: String, shadows_what: String, prefix: &str, exact: &str| {
        if shadows.iter().any(|s| s.entry == entry) {
            return;
        }
        let paths = new
            .iter()
            .filter(|p| **p == exact || (!prefix.is_empty() && p.starts_with(prefix)))
            .map(|p| p.to_string())
            .collect();
        shadows.push(Shadow {
            paths,
            entry,
            shadows: shadows_what,
        });
    };
    for path in &new {
        if let Some((module, entry)) = python_module(path)
            && PYTHON_MODULES.split_whitespace().any(|m| m == module)
        {
            let prefix = if entry.ends_with('/') {
                entry.as_str()
            } else {
                ""
            };
            add(entry.clone(), format!("Python's {module}"), prefix, path);
        }
        if let Some(rest) = path.strip_prefix("node_modules/") {
            let name = rest.split('/').next().unwrap_or(rest);
            if NODE_MODULES.split_whitespace().any(|m| m == name) {
                let entry = format!("node_modules/{name}/");
                add(entry.clone(), format!("Node's {name}"), &entry, path);
            }
        }
    }
    shadows.sort_by(|a, b| a.entry.cmp(&b.entry));
    shadows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_settings_that_decide_what_runs_are_named_and_dependencies_are_not() {
        let base = "[package]\nname = \"p\"\nversion = \"0.1.0\"\n\n[dependencies]\n";
        let deps = "[package]\nname = \"p\"\nversion = \"0.1.0\"\n# more\n\n[dependencies]\nserde = \"1\"\n";
        assert!(changed_settings("Cargo.toml", base, deps).is_empty());
        let gamed = "[package]\nname = \"p\"\nversion = \"0.1.0\"\nautotests = false\n";
        assert_eq!(
            changed_settings("Cargo.toml", base, gamed),
            ["Cargo.toml: package.autotests"]
        );
        let dotted = "package.name = \"p\"\npackage.version = \"0.1.0\"\nlib = { test = false }\n\
                      [[test]]\nname = \"it\"\nharness = false\n";
        assert_eq!(
            changed_settings("Cargo.toml", base, dotted),
            ["Cargo.toml: [[test]]", "Cargo.toml: lib.test"]
        );
        let bins = "[package]\nname = \"p\"\n[[bin]]\nname = \"b\"\n";
        let no_test = "[package]\nname = \"p\"\n[[bin]]\nname = \"b\"\ntest = false\n";
        assert_eq!(
            changed_settings("crates/b/Cargo.toml", bins, no_test),
            ["crates/b/Cargo.toml: [[bin]] b.test"]
        );
        // A new target, and a lib turned into a cdylib, are the child's.
        let new_example = "[package]\nname = \"p\"\n[lib]\ncrate-type = [\"cdylib\"]\n\
                           [[bin]]\nname = \"b\"\n[[example]]\nname = \"e\"\ntest = false\n";
        assert!(changed_settings("Cargo.toml", bins, new_example).is_empty());
        // Workspace members may be added, not dropped.
        let ws = "[workspace]\nmembers = [\"a\", \"b\"]\n";
        let more = "[workspace]\nmembers = [\"a\", \"b\", \"c\"]\n";
        let fewer = "[workspace]\nmembers = [\"a\"]\n";
        assert!(changed_settings("Cargo.toml", ws, more).is_empty());
        assert_eq!(
            changed_settings("Cargo.toml", ws, fewer),
            ["Cargo.toml: workspace.members"]
        );
        assert!(changed_settings("Cargo.toml", base, "not [toml").is_empty());
    }

    #[test]
    fn a_new_pytest_file_is_compared_with_an_empty_one() {
        let new = "[tool.pytest.ini_options]\naddopts = \"-p evilplug\"\n";
        assert!(compared_when_new("pyproject.toml"));
        assert!(compared_when_new("pkg/setup.cfg"));
        assert!(!compared_when_new("crates/new/Cargo.toml"));
        assert_eq!(
            changed_settings("pyproject.toml", "", new),
            vec!["pyproject.toml: tool.pytest".to_string()]
        );
        assert!(changed_settings("pyproject.toml", "", "[project]\nname = \"x\"\n").is_empty());
    }

    #[test]
    fn pytest_sections_are_compared_and_the_rest_of_the_file_is_free() {
        let base = "[project]\nname = \"p\"\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n";
        let deps = "[project]\nname = \"p\"\ndependencies = [\"x\"]\n\n[tool.pytest.ini_options]\ntestpaths = [ \"tests\" ]\n";
        assert!(changed_settings("pyproject.toml", base, deps).is_empty());
        let gamed = "[project]\nname = \"p\"\n[tool.pytest.ini_options]\ntestpaths = [\"none\"]\n";
        assert_eq!(
            changed_settings("pyproject.toml", base, gamed),
            ["pyproject.toml: tool.pytest"]
        );
        let added = "[project]\nname = \"p\"\n[tool.pytest]\naddopts = \"-k nothing\"\n";
        let plain = "[project]\nname = \"p\"\n";
        assert_eq!(
            changed_settings("pyproject.toml", plain, added),
            ["pyproject.toml: tool.pytest"]
        );
        let cfg = "[metadata]\nname = p\n[tool:pytest]\naddopts = -q\n";
        let cfg_deps = "[metadata]\nname = p\n[options]\ninstall_requires = x\n[tool:pytest]\n# c\naddopts = -q\n";
        assert!(changed_settings("setup.cfg", cfg, cfg_deps).is_empty());
        let cfg_gamed = "[metadata]\nname = p\n[tool:pytest]\naddopts = -q -k nothing\n";
        assert_eq!(
            changed_settings("setup.cfg", cfg, cfg_gamed),
            ["setup.cfg: [tool:pytest]"]
        );
    }

    #[test]
    fn new_root_modules_named_like_standard_ones_shadow_them() {
        let base = ["src/app.py", "tests/test_app.py"];
        let work = [
            "json/data.json",
            "node_modules/test/index.js",
            "pytest.py",
            "src/app.py",
            "src/unittest.py",
            "tests/test_app.py",
            "unittest/__init__.py",
            "unittest/__main__.py",
            "util.py",
        ];
        let found = shadowing(&base, &work);
        let seen: Vec<(&str, &str, Vec<&str>)> = found
            .iter()
            .map(|s| {
                (
                    s.entry.as_str(),
                    s.shadows.as_str(),
                    s.paths.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "node_modules/test/",
                    "Node's test",
                    vec!["node_modules/test/index.js"]
                ),
                ("pytest.py", "Python's pytest", vec!["pytest.py"]),
                (
                    "unittest/",
                    "Python's unittest",
                    vec!["unittest/__init__.py", "unittest/__main__.py"]
                ),
            ]
        );
        // What the base already had is not the child's.
        let vendored = ["unittest/__init__.py"];
        assert!(shadowing(&vendored, &["unittest/__init__.py"]).is_empty());
    }
}

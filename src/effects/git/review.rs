//! Pure: which of a task's changed paths run code or set policy once merged — git's own
//! attributes and submodules, cuekit's files, CI, hook managers, environment loaders and build
//! scripts. `cuekit merge` lists them and merges only with `--yes`: a child's work is read
//! before it can make the user's next `git status`, build or CI run its code.

use crate::domain::error::{Error, ErrorCode};

/// File names that matter in any folder: build and tool files that run code or pick a program,
/// and the instruction files coding agents read.
const NAMES: &[&str] = &[
    "build.rs",
    "Cargo.toml",
    "rust-toolchain",
    "rust-toolchain.toml",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    "Taskfile.yml",
    "package.json",
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "tox.ini",
    "noxfile.py",
    "conftest.py",
    "mise.toml",
    "go.mod",
    "Gemfile",
    "Rakefile",
    "CMakeLists.txt",
    "meson.build",
    "build.gradle",
    "build.gradle.kts",
    "pom.xml",
    "flake.nix",
    "Dockerfile",
    "lefthook.yml",
    "lefthook.yaml",
    "gradlew",
    "settings.gradle",
    "settings.gradle.kts",
    "build.sbt",
    "deno.json",
    "bunfig.toml",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "pytest.ini",
    "manage.py",
    "go.work",
    "shell.nix",
    "default.nix",
    "devenv.nix",
    "gradle-wrapper.properties",
    "gradle.properties",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "bun.lockb",
    "Cargo.lock",
    "Gemfile.lock",
    "composer.json",
    "Brewfile",
    "Vagrantfile",
    "Containerfile",
    "docker-compose.yml",
    "docker-compose.yaml",
    "compose.yml",
    "compose.yaml",
    "Procfile",
    "Tiltfile",
    "WORKSPACE",
    "BUILD",
    "BUILD.bazel",
    "MODULE.bazel",
    "SConstruct",
    "configure",
    "opencode.json",
    "opencode.jsonc",
    // Build and CI files a second blind review merged unasked (issue 47).
    "Jenkinsfile",
    "Package.swift",
    "Podfile",
    "mix.exs",
    "build.zig",
    "Makefile.PL",
    "Build.PL",
    // Python runs these at every start, from any folder on its path.
    "sitecustomize.py",
    "usercustomize.py",
    // Instructions an agent started there later reads as its own.
    "GEMINI.md",
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "QWEN.md",
];

/// Name beginnings of files that pick what a tool installs or runs (`requirements-dev.txt`),
/// each with the endings it needs (none: any).
const BEGINNINGS: &[(&str, &[&str])] = &[
    ("requirements", &[".txt", ".in"]),
    ("constraints", &[".txt"]),
    ("Dockerfile", &[]),
    ("docker-compose", &[]),
    // Task runners and test runners whose file is a program (`gulpfile.babel.js`, …).
    ("gulpfile.", &[]),
    ("Gulpfile.", &[]),
    ("Gruntfile.", &[]),
    ("gruntfile.", &[]),
    ("karma.conf.", &[]),
    ("azure-pipelines", &[".yml", ".yaml"]),
];

/// Name endings of tool configs that are programs themselves (`vite.config.ts`, …).
const ENDINGS: &[&str] = &[
    ".config.js",
    ".config.cjs",
    ".config.mjs",
    ".config.ts",
    ".config.mts",
    ".config.cts",
    // A tool's config as data still names the plugins and presets it loads (`babel.config.json`).
    ".config.json",
    ".config.jsonc",
    ".config.json5",
    ".config.yml",
    ".config.yaml",
    ".config.toml",
    ".mk",
    ".cmake",
    ".gradle",
    ".gradle.kts",
    ".nix",
    ".bzl",
    ".csproj",
    ".props",
    ".targets",
    ".gemspec",
    // A Python path file's `import` lines run at every interpreter start.
    ".pth",
];

/// Tools known by the name before their file's first `.` (and a `-local`/`_local` variant),
/// whatever config ending it takes: each reads several spellings, a local override and a lock of
/// the same file (`pytest.toml`, `deno.jsonc`, `Taskfile.yaml`, `mise.local.toml`,
/// `lefthook-local.yml`, `flake.lock`, `babel.config.json`). Compared in lower case.
const FAMILIES: &[&str] = &[
    "pytest",
    "deno",
    "taskfile",
    "mise",
    "lefthook",
    "flake",
    "babel",
    "bunfig",
    "tox",
    "justfile",
    "cargo",
    "pyproject",
    "package",
    "composer",
    "pnpm-workspace",
    "turbo",
    "devbox",
    "devenv",
    "pixi",
    "treefmt",
    "vite",
    "vitest",
    "jest",
    "webpack",
    "rollup",
    "eslint",
    "prettier",
    "tsup",
    "playwright",
    "cypress",
    // Build systems whose files are programs or generate them (`configure.ac`, `Makefile.am`,
    // `SConscript`, waf's `wscript`, `Snakefile`, `CMakePresets.json`, nx's `project.json`).
    "configure",
    "makefile",
    "gnumakefile",
    "sconstruct",
    "sconscript",
    "wscript",
    "snakefile",
    "cmakelists",
    "cmakepresets",
    "cmakeuserpresets",
    "project",
];

/// The endings a [`FAMILIES`] file takes (its last `.` part); none at all counts too.
const FAMILY_ENDINGS: &[&str] = &[
    "toml", "yml", "yaml", "json", "jsonc", "json5", "lock", "lockb", "nix", "ini", "cfg", "js",
    "cjs", "mjs", "ts", "cts", "mts", "ac", "am", "in",
];

/// Whether `name` is a file of one of the [`FAMILIES`].
fn in_family(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let (stem, rest) = lower.split_once('.').unwrap_or((lower.as_str(), ""));
    let stem = stem
        .strip_suffix("-local")
        .or_else(|| stem.strip_suffix("_local"))
        .unwrap_or(stem);
    let last = rest.rsplit('.').next().unwrap_or("");
    FAMILIES.contains(&stem) && (rest.is_empty() || FAMILY_ENDINGS.contains(&last))
}

/// One changed path, with its mode after the change (`None`: deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub path: String,
    pub mode: Option<String>,
}

/// The changed paths that run code or set policy, in order. A list of names cannot be
/// complete, so the net is wide: any path with a part that starts with `.` (dotfiles and dot
/// folders at any depth: `.gitattributes`, `.github/`, `.cargo/`, `.cuekit*`, `.envrc`,
/// `.husky/`, `.claude/`, `.yarnrc.yml`, …), any link or executable file, and the build and
/// tool files above at any depth. `cuekit diff` is the review; this says where to look first.
pub fn policy_paths(changed: &[Changed]) -> Vec<String> {
    changed
        .iter()
        .filter(|change| matters(change))
        .map(|change| change.path.clone())
        .collect()
}

fn matters(change: &Changed) -> bool {
    let path = change.path.as_str();
    let name = path.rsplit('/').next().unwrap_or(path);
    let linked_or_run = matches!(change.mode.as_deref(), Some("120000" | "100755" | "160000"));
    linked_or_run
        || path.split('/').any(|part| part.starts_with('.'))
        || NAMES.contains(&name)
        || BEGINNINGS.iter().any(|(beginning, endings)| {
            name.starts_with(beginning)
                && (endings.is_empty() || endings.iter().any(|ending| name.ends_with(ending)))
        })
        || ENDINGS.iter().any(|ending| name.ends_with(ending))
        || in_family(name)
}

/// `git diff-tree -r -z --raw` output as changed paths with their new modes.
pub fn parse_raw(raw: &str) -> Vec<Changed> {
    let mut fields = raw.split('\0').filter(|f| !f.is_empty());
    let mut changed = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let mode = meta.split(' ').nth(1).filter(|m| *m != "000000");
        changed.push(Changed {
            path: path.to_string(),
            mode: mode.map(String::from),
        });
    }
    changed
}

/// The error a merge gives before it touches anything when such paths changed.
pub fn needed(paths: &[String]) -> Error {
    Error::new(
        ErrorCode::MergeReview,
        format!(
            "the task's work changes files that run code or set policy: {}",
            paths.join(", ")
        ),
    )
    .with_hint("read them (`cuekit diff ID`), then merge again with --yes; nothing was changed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_run_code_or_set_policy_are_picked_out() {
        let file = |path: &str| Changed {
            path: path.to_string(),
            mode: Some("100644".into()),
        };
        let mut changed: Vec<Changed> = [
            "src/lib.rs",
            ".gitattributes",
            "vendor/x/.gitattributes",
            ".cuekit.yaml",
            "sub/.cuekit.yaml",
            "sub/.cargo/config.toml",
            ".github/workflows/ci.yml",
            "crates/a/build.rs",
            "web/package.json",
            "docs/Makefile.md",
            "rust-toolchain.toml",
            "web/vite.config.ts",
            ".claude/settings.json",
        ]
        .map(file)
        .to_vec();
        changed.push(Changed {
            path: "tools/run".into(),
            mode: Some("100755".into()),
        });
        changed.push(Changed {
            path: "docs/link".into(),
            mode: Some("120000".into()),
        });
        changed.push(Changed {
            path: "old.txt".into(),
            mode: None,
        });
        assert_eq!(
            policy_paths(&changed),
            [
                ".gitattributes",
                "vendor/x/.gitattributes",
                ".cuekit.yaml",
                "sub/.cuekit.yaml",
                "sub/.cargo/config.toml",
                ".github/workflows/ci.yml",
                "crates/a/build.rs",
                "web/package.json",
                "rust-toolchain.toml",
                "web/vite.config.ts",
                ".claude/settings.json",
                "tools/run",
                "docs/link",
            ]
        );
        assert!(policy_paths(&[file("src/main.rs")]).is_empty());
    }

    #[test]
    fn the_files_a_blind_review_merged_unasked_are_picked_out() {
        let file = |path: &str| Changed {
            path: path.to_string(),
            mode: Some("100644".into()),
        };
        for path in [
            "opencode.json",
            "requirements.txt",
            "requirements-dev.txt",
            "gradle/wrapper/gradle-wrapper.properties",
            "go.work",
            "shell.nix",
            "build/rules.mk",
            "cmake/deps.cmake",
            "package-lock.json",
            "CLAUDE.local.md",
            "pytest.ini",
            "docker-compose.yml",
        ] {
            assert_eq!(policy_paths(&[file(path)]), [path], "{path}");
        }
        assert!(policy_paths(&[file("docs/requirements.md")]).is_empty());
    }

    /// One test each for the files a second blind review merged unasked (issue 47).
    macro_rules! picked_out {
        ($($test:ident: $path:literal,)*) => {$(
            #[test]
            fn $test() {
                let changed = Changed {
                    path: $path.to_string(),
                    mode: Some("100644".into()),
                };
                assert_eq!(policy_paths(&[changed]), [$path]);
            }
        )*};
    }

    picked_out! {
        a_gulpfile_is_picked_out: "web/gulpfile.js",
        a_gruntfile_is_picked_out: "Gruntfile.js",
        a_karma_config_is_picked_out: "test/karma.conf.js",
        a_jenkinsfile_is_picked_out: "Jenkinsfile",
        azure_pipelines_are_picked_out: "azure-pipelines.yml",
        a_swift_package_is_picked_out: "Package.swift",
        a_gemspec_is_picked_out: "gems/tool/tool.gemspec",
        a_podfile_is_picked_out: "ios/Podfile",
        a_mix_project_is_picked_out: "mix.exs",
        a_zig_build_is_picked_out: "build.zig",
        a_perl_makefile_is_picked_out: "Makefile.PL",
        a_sitecustomize_is_picked_out: "lib/sitecustomize.py",
        a_python_path_file_is_picked_out: "site-packages/evil.pth",
    }

    /// Audit 48 (work F3, reach F11): names of tool families the lists missed, found by their
    /// family now, with their near-copies.
    #[test]
    fn tool_families_are_picked_out_whatever_their_spelling() {
        let file = |path: &str| Changed {
            path: path.to_string(),
            mode: Some("100644".into()),
        };
        for path in [
            "pytest.toml",
            "deno.jsonc",
            "deno.json5",
            "Taskfile.yaml",
            "Taskfile.yml",
            "taskfile.dist.yml",
            "sub/Taskfile.dist.yaml",
            "mise.local.toml",
            "mise.production.toml",
            "lefthook-local.yml",
            "lefthook-local.yaml",
            "flake.lock",
            "nix/flake.lock",
            "babel.config.json",
            "babel.config.cjs",
            "app/babel.config.jsonc",
            "jest.config.json",
            "package.yaml",
            "composer.lock",
            "turbo.json",
            "vitest.workspace.ts",
            "SConscript",
            "src/SConscript",
            "configure.ac",
            "Makefile.am",
            "lib/Makefile.in",
            "CMakePresets.json",
            "apps/web/project.json",
            "Snakefile",
            "wscript",
            "pixi.toml",
            "turbo.json",
        ] {
            assert_eq!(policy_paths(&[file(path)]), [path], "{path}");
        }
        for path in [
            "docs/pytest.md",
            "flake8.txt",
            "src/taskfiles.rs",
            "notes/mise.txt",
        ] {
            assert!(policy_paths(&[file(path)]).is_empty(), "{path}");
        }
    }

    #[test]
    fn raw_output_gives_each_path_its_new_mode() {
        let raw = ":100644 100755 aaa bbb M\0tools/run\0:100644 000000 aaa 000 D\0gone\0";
        assert_eq!(
            parse_raw(raw),
            [
                Changed {
                    path: "tools/run".into(),
                    mode: Some("100755".into())
                },
                Changed {
                    path: "gone".into(),
                    mode: None
                }
            ]
        );
    }
}

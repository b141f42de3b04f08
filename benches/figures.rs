//! Every benchmark in one binary: `cargo bench --bench figures -- NAME...` runs the named
//! ones (README "Testing" lists them and what each prints), none named: all of them. One
//! binary, not one per benchmark: the test command builds every target, and 24 binaries, each
//! compiling the tests' harness again and linking cuekit again, were a fifth of its build.
//! Each prints figures and asserts nothing about time.

mod acp;
mod bind;
mod check_counts;
mod checks;
mod cli;
mod conflicts;
mod dialog;
mod failover;
mod fanout;
mod mcp_bytes;
mod notify;
mod race;
mod remote;
mod removal;
mod result;
mod runner;
mod sandbox;
mod sandbox_net;
mod sandbox_user;
mod schedule;
mod support;
mod top;
mod web;
mod web_sign;
mod worktree;

/// Each benchmark by the name it is asked for.
const BENCHES: &[(&str, fn())] = &[
    ("acp", acp::main),
    ("bind", bind::main),
    ("check_counts", check_counts::main),
    ("checks", checks::main),
    ("cli", cli::main),
    ("conflicts", conflicts::main),
    ("dialog", dialog::main),
    ("failover", failover::main),
    ("fanout", fanout::main),
    ("mcp_bytes", mcp_bytes::main),
    ("notify", notify::main),
    ("race", race::main),
    ("remote", remote::main),
    ("removal", removal::main),
    ("result", result::main),
    ("runner", runner::main),
    ("sandbox", sandbox::main),
    ("sandbox_net", sandbox_net::main),
    ("sandbox_user", sandbox_user::main),
    ("schedule", schedule::main),
    ("top", top::main),
    ("web", web::main),
    ("web_sign", web_sign::main),
    ("worktree", worktree::main),
];

fn main() {
    // Cargo adds `--bench` (and may add other flags) to a bench binary's arguments.
    let asked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let known: Vec<&str> = BENCHES.iter().map(|(name, _)| *name).collect();
    if let Some(unknown) = asked.iter().find(|name| !known.contains(&name.as_str())) {
        eprintln!(
            "error: no benchmark '{unknown}'; one of: {}",
            known.join(", ")
        );
        std::process::exit(2);
    }
    for (name, run) in BENCHES {
        if asked.is_empty() || asked.iter().any(|asked| asked == name) {
            println!("== {name}");
            run();
        }
    }
}

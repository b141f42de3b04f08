//! Prints how many bytes an AI parent reads per MCP answer (it pays for them in tokens on every
//! call): `get_status`, `list` and `wait` for 1 and 20 children, brief (the default) against
//! `detail: "full"` (every answer before briefs existed). Speaks MCP to a real `cuekit mcp`
//! over stdio; the children are batch tasks of a stand-in agent that has ended.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Stdio};

use crate::support::Sandbox;
use serde_json::{Value, json};

struct Server {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(bench: &Sandbox) -> (std::process::Child, Server) {
        let mut command = bench.cuekit(&["mcp"]);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = Server {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            next: 1,
        };
        server.ask(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        writeln!(
            server.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        (child, server)
    }

    /// The answer's bytes as a client receives them (the JSON-RPC line).
    fn ask(&mut self, method: &str, params: Value) -> (usize, Value) {
        let id = self.next;
        self.next += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        (line.len(), serde_json::from_str(&line).unwrap())
    }

    fn tool(&mut self, name: &str, arguments: Value) -> usize {
        let (bytes, answer) = self.ask("tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        bytes
    }
}

pub fn main() {
    let bench = Sandbox::new("mcp-bytes", &[]);
    bench.executable("bin/gemini", "#!/bin/sh\nexit 0\n");
    let mut ids = Vec::new();
    for n in 0..20 {
        let task = bench.json(&[
            "submit",
            "--mode",
            "batch",
            "--no-events",
            &format!("child {n}: summarise one module of the repository"),
        ]);
        ids.push(task["id"].as_str().unwrap().to_string());
    }
    let mut wait = vec!["wait"];
    wait.extend(ids.iter().map(String::as_str));
    wait.extend(["--timeout", "60s"]);
    bench.ok(&wait);
    let (mut child, mut server) = Server::start(&bench);
    println!("MCP answer bytes (brief default vs detail=full)");
    for count in [1, 20] {
        let some: Vec<&String> = ids.iter().take(count).collect();
        for (tool, arguments) in [
            ("get_status", json!({"ids": some})),
            ("wait", json!({"ids": some, "timeout_seconds": 1})),
        ] {
            let brief = server.tool(tool, arguments.clone());
            let mut full_arguments = arguments;
            full_arguments["detail"] = json!("full");
            let full = server.tool(tool, full_arguments);
            println!(
                "{tool:<10} {count:>2} children: brief {brief:>6} B, full {full:>6} B ({:.0}% saved; {} B per child brief)",
                100.0 * (1.0 - brief as f64 / full as f64),
                brief / count
            );
        }
    }
    let brief = server.tool("list", json!({}));
    let full = server.tool("list", json!({"detail": "full"}));
    println!("list       20 children: brief {brief:>6} B, full {full:>6} B");
    drop(server);
    let _ = child.wait();
}

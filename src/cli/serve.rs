//! `cuekit serve`: the web face (see `crate::web`), and its devices: `--devices` lists the
//! paired ones, `--pair` prints a fresh code for the running server, `--revoke NAME|all` ends
//! their sessions.

use std::path::Path;

use clap::Args;

use super::render::{print_json, say, visible};
use crate::ops::web_access;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen: ADDR:PORT (default 127.0.0.1:8377) or unix:PATH (for an SSH tunnel).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// Serve every page, and answer every action 403.
    #[arg(long)]
    read_only: bool,
    /// Serve a non-loopback address without TLS (anyone on the network may read the pages
    /// and the session cookie).
    #[arg(long)]
    insecure_lan: bool,
    /// Offer the `command` agent in the submit form (it runs shell as you).
    #[arg(long)]
    allow_commands: bool,
    /// The name a proxy in front serves the pages under (e.g. the tailnet name `tailscale
    /// serve` gives this machine): requests naming it are served too.
    #[arg(long, value_name = "HOST")]
    public_host: Option<String>,
    /// Also print a QR code of the pairing URL, the code in it (scan it with the phone).
    #[arg(long)]
    qr: bool,
    /// Serve over TLS with this PEM certificate chain (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// List the paired devices and exit.
    #[arg(long, conflicts_with_all = ["revoke", "bind", "read_only", "insecure_lan", "allow_commands", "public_host", "qr", "tls_cert", "tls_key"])]
    devices: bool,
    /// Print a fresh pairing code for the running `cuekit serve` (pair another device without
    /// restarting it; the earlier code stops working) and exit.
    #[arg(long, conflicts_with_all = ["devices", "revoke", "bind", "read_only", "insecure_lan", "allow_commands", "public_host", "qr", "tls_cert", "tls_key"])]
    pair: bool,
    /// End the session of device NAME (or `all`) and exit.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["bind", "read_only", "insecure_lan", "allow_commands", "public_host", "qr", "tls_cert", "tls_key"])]
    revoke: Option<String>,
}

pub fn run(args: &ServeArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    if args.devices {
        let devices = web_access::devices()?;
        if json {
            print_json(&serde_json::json!({ "devices": devices }));
        } else if devices.is_empty() {
            say("no paired devices");
        } else {
            for device in devices {
                say(&format!(
                    "{}  paired {}  last seen {}",
                    visible(&device.name),
                    device.paired_at,
                    device.last_seen
                ));
            }
        }
        return Ok(0);
    }
    if args.pair {
        let code = web_access::new_code()?;
        let url = web_access::served_url();
        if json {
            print_json(&serde_json::json!({ "code": code, "url": url }));
        } else {
            let open = url.map_or("the running serve's /pair".to_string(), |url| {
                format!("{url}/pair")
            });
            say(&format!(
                "pairing code: {code} (open {open}; valid 10 minutes, once; 5 wrong tries burn it)"
            ));
        }
        return Ok(0);
    }
    if let Some(name) = &args.revoke {
        let ended = web_access::revoke(name)?;
        if json {
            print_json(&serde_json::json!({ "revoked": ended }));
        } else {
            say(&format!("ended {ended} device session(s)"));
        }
        return Ok(0);
    }
    let options = crate::web::Options {
        bind: args.bind.clone(),
        read_only: args.read_only,
        insecure_lan: args.insecure_lan,
        allow_commands: args.allow_commands,
        public_host: args.public_host.clone(),
        qr: args.qr,
        tls: args.tls_cert.clone().zip(args.tls_key.clone()),
    };
    crate::web::run(&options, cwd)?;
    Ok(0)
}

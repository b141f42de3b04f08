//! Notices beyond this machine (issue 53): webhook, Slack, Discord and ntfy, each a local HTTP
//! server in the test (tests/harness/http.rs) answering as the real service does. A transition
//! reaches each channel once; a hanging or limiting endpoint delays nothing else; a project
//! file's channels never apply; the digest counts what ended.

use std::time::Duration;

use serde_json::Value;

use crate::harness::http::{Answer, Server};
use crate::harness::{Harness, MODEL, canned_text, limits, poll, sh_task};
use crate::races::sh_race;

/// A secret the tests plant in the environment, an objective and a report: no payload may
/// carry it.
const PLANTED: &str = "plantedsecretvalue42";
const FORGE_TOKEN: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123";
const NTFY_TOKEN: &str = "tk_ntfytokenvalue0123456789";

struct Services {
    webhook: Server,
    slack: Server,
    discord: Server,
    ntfy: Server,
}

impl Services {
    fn start() -> Services {
        Services {
            webhook: Server::start(Answer::Ok),
            slack: Server::start(Answer::Ok),
            discord: Server::start(Answer::Ok),
            ntfy: Server::start(Answer::Ok),
        }
    }

    fn all(&self) -> [(&'static str, &Server); 4] {
        [
            ("webhook", &self.webhook),
            ("slack", &self.slack),
            ("discord", &self.discord),
            ("ntfy", &self.ntfy),
        ]
    }

    /// The user's config naming the four, `extra` lines under `notify:`.
    fn config(&self, extra: &str) -> String {
        format!(
            "notify:\n  public_origin: https://box.example\n{extra}  channels:\n    hook:\n      webhook: {}/hook\n      include_report: true\n    team:\n      slack: {}/services/T0/B0/x\n    guild:\n      discord: {}/api/webhooks/1/y\n    phone:\n      ntfy:\n        server: {}\n        topic: cuekit-test\n        token_env: CUEKIT_TEST_NTFY_TOKEN\n",
            self.webhook.origin, self.slack.origin, self.discord.origin, self.ntfy.origin
        )
    }

    /// Waits until each has `n` requests; fails naming those that did not.
    #[track_caller]
    fn each_got(&self, n: usize) {
        for (name, server) in self.all() {
            assert!(
                server.wait_for(n, limits::TASK),
                "{name} got {} requests, not {n}",
                server.requests().len()
            );
        }
    }
}

fn harness_with(services: &Services, extra: &str) -> Harness {
    let h = Harness::new()
        .env("CUEKIT_TEST_NTFY_TOKEN", NTFY_TOKEN)
        .env("MY_SERVICE_TOKEN", PLANTED);
    h.user_config(&services.config(extra));
    h
}

#[test]
fn an_ending_reaches_each_channel_once_in_its_documented_shape() {
    let services = Services::start();
    let h = harness_with(&services, "");
    let said = format!("finished \x1b[31mred\x07 {PLANTED} {FORGE_TOKEN}");
    let mut args = sh_task(r#"cuekit report --done "$0"; exit 3"#, &["--mode", "batch"]);
    args.push(&said);
    let id = h.submit(&args);
    h.wait_ended(&[&id], "60s");
    services.each_got(1);
    // Three more ticks, or the monitor's end: nothing is sent twice.
    h.monitor_ticks_pass(3);
    let page = format!("https://box.example/t/{id}");
    for (name, server) in services.all() {
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{name}: {requests:?}");
        let request = &requests[0];
        assert_eq!(request.method, "POST", "{name}");
        let body = request.text();
        for secret in [PLANTED, FORGE_TOKEN, NTFY_TOKEN] {
            assert!(!body.contains(secret), "{name} carries a secret: {body}");
        }
        assert!(
            !body.contains('\x1b') && !body.contains('\x07'),
            "{name}: {body:?}"
        );
    }
    let hook = &services.webhook.requests()[0];
    assert_eq!(hook.path, "/hook");
    assert_eq!(hook.header("content-type"), Some("application/json"));
    let json = hook.json();
    assert_eq!(json["event"], "ended");
    assert_eq!(json["task_id"], id.as_str());
    assert_eq!(json["status"], "failed");
    assert_eq!(json["reason"], "nonzero_exit");
    assert_eq!(json["url"], page.as_str());
    assert!(json["age_secs"].is_u64(), "{json}");
    assert!(json["transition_id"].is_string(), "{json}");
    // The one channel that opted in carries the child's words, cleaned.
    let report = json["report"].as_str().unwrap();
    assert!(report.starts_with("finished red"), "{report:?}");
    let slack = &services.slack.requests()[0];
    assert_eq!(slack.path, "/services/T0/B0/x");
    assert_eq!(slack.header("content-type"), Some("application/json"));
    let text = slack.json()["text"].as_str().unwrap().to_string();
    assert!(text.starts_with(&format!("*{id} failed")), "{text}");
    assert!(text.contains(&format!("<{page}|open in cuekit>")), "{text}");
    assert!(!text.contains("report:"), "slack did not opt in: {text}");
    let discord = services.discord.requests()[0].json();
    assert_eq!(services.discord.requests()[0].path, "/api/webhooks/1/y");
    assert_eq!(discord["allowed_mentions"]["parse"], serde_json::json!([]));
    assert!(
        discord["content"].as_str().unwrap().contains(&id),
        "{discord}"
    );
    let ntfy = &services.ntfy.requests()[0];
    assert_eq!(ntfy.path, "/cuekit-test");
    assert_eq!(
        ntfy.header("authorization"),
        Some(format!("Bearer {NTFY_TOKEN}").as_str())
    );
    assert_eq!(
        ntfy.header("title"),
        Some(format!("{id} failed (nonzero exit)").as_str())
    );
    assert_eq!(ntfy.header("priority"), Some("3"));
    assert_eq!(ntfy.header("tags"), Some("cuekit,warning"));
    assert_eq!(ntfy.header("click"), Some(page.as_str()));
    // Each delivery is in the task's events.
    let sent = h.events_of(&id, "cuekit_notify_sent");
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(
        sent.iter().all(|e| e["delivery"]["sent"] == true),
        "{sent:?}"
    );
}

#[test]
fn a_real_gemini_wait_reaches_each_channel_once() {
    let services = Services::start();
    let h = Harness::new()
        .with_real_gemini(&[canned_text("A canned answer.")])
        .env("CUEKIT_TEST_NTFY_TOKEN", NTFY_TOKEN);
    h.user_config(&services.config(""));
    let id = h.submit(&["--model", MODEL, "Say hello"]);
    services.each_got(1);
    h.monitor_ticks_pass(3);
    let transition = h
        .events_of(&id, "cuekit_transition")
        .into_iter()
        .find(|e| e["transition"]["new_status"] == "input_required")
        .expect("the wait is announced");
    for (name, server) in services.all() {
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{name}: {requests:?}");
    }
    let json = services.webhook.requests()[0].json();
    assert_eq!(json["event"], "input_required");
    assert_eq!(json["reason"], "idle_at_prompt");
    // Printed, not asserted (benches/notify.rs measures it): the transition's time to the
    // request.
    eprintln!("transition at {}", transition["transition"]["at"]);
    h.json(&["cancel", &id]);
}

#[test]
fn a_hanging_or_limiting_endpoint_delays_nothing_else() {
    let hang = Server::start(Answer::Hang(Duration::from_secs(10)));
    let limited = Server::start(Answer::TooMany {
        retry_after: 1,
        times: 1,
    });
    let fine = Server::start(Answer::Ok);
    let h = Harness::new();
    let log = h.root().join("hooks.log");
    h.user_config(&format!(
        "hooks:\n  on_end: \"echo end $CUEKIT_TASK_ID >> '{}'\"\nnotify:\n  channels:\n    dead:\n      webhook: {}/dead\n    limited:\n      webhook: {}/limited\n    fine:\n      webhook: {}/fine\n",
        log.display(),
        hang.origin,
        limited.origin,
        fine.origin
    ));
    let first = h.submit_sh("exit 0", &["--mode", "batch"]);
    assert!(
        fine.wait_for(1, limits::TASK),
        "the fine endpoint got nothing"
    );
    assert!(
        hang.wait_for(1, limits::TASK),
        "the dead endpoint was never tried"
    );
    // A second task's ending, its hook and its notices go out while the first notice still
    // hangs (a try lasts 5 s; the hang, 10 s): nothing waited on it.
    let second = h.submit_sh("exit 0", &["--mode", "batch"]);
    assert!(
        fine.wait_for(2, limits::TASK),
        "the second notice never came"
    );
    assert!(
        poll(limits::SHORT, || std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(&second)),
        "the second task's hook never ran"
    );
    let dead_done = |id: &str| {
        h.events_of(id, "cuekit_notify_sent")
            .iter()
            .any(|e| e["channel"] == "dead")
    };
    assert!(
        !dead_done(&first),
        "the dead endpoint's delivery ended before the second task's notice"
    );
    // 429 with Retry-After: 1 is tried again after it, and then sent.
    assert!(
        limited.wait_for(3, limits::TASK),
        "the limited endpoint was not tried again"
    );
    let tries: Vec<_> = limited
        .requests()
        .into_iter()
        .filter(|r| r.json()["task_id"] == first.as_str())
        .collect();
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert!(
        tries[1].at.duration_since(tries[0].at) >= Duration::from_secs(1),
        "Retry-After was not honoured"
    );
    // The dead endpoint: three tries of 5 s, then a failure on record, counted by doctor.
    assert!(
        poll(limits::AGENT, || dead_done(&first)),
        "the dead endpoint's delivery never ended"
    );
    let dead = h
        .events_of(&first, "cuekit_notify_sent")
        .into_iter()
        .find(|e| e["channel"] == "dead")
        .unwrap();
    assert_eq!(dead["delivery"]["sent"], false, "{dead}");
    assert_eq!(dead["delivery"]["tries"], 3, "{dead}");
    assert_eq!(dead["delivery"]["error"], "timed out", "{dead}");
    let (doctor, _) = h.json(&["doctor"]);
    let check = doctor
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "notify channels")
        .cloned()
        .unwrap_or_else(|| panic!("{doctor}"));
    assert!(
        check["message"].as_str().unwrap().contains("failed"),
        "{check}"
    );
    assert!(
        !check.to_string().contains(&hang.origin),
        "a URL in doctor: {check}"
    );
}

#[test]
fn a_transition_announced_again_is_sent_once() {
    let services = Services::start();
    let h = harness_with(&services, "");
    let id = h.submit_sh("exit 0", &["--mode", "batch"]);
    h.wait_ended(&[&id], "60s");
    services.each_got(1);
    assert!(poll(limits::SHORT, || h.monitors().is_empty()));
    // The monitor's memory of what it announced is lost (a restart that could not save it),
    // and two monitors start at once: the ending is announced again, never sent again.
    let seen = h.data_dir().join("tasks").join(format!("{id}.seen"));
    std::fs::remove_file(&seen).unwrap();
    // The monitor's argument is the absolute socket the registry recorded.
    let socket = std::fs::read_dir(h.data_dir().join("tasks"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&id))
        .filter_map(|entry| std::fs::read(entry.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .find_map(|value| value["socket"].as_str().map(String::from))
        .expect("the registry names the task's socket");
    let monitors: Vec<_> = (0..2)
        .map(|_| h.cuekit().args(["__monitor", &socket]).spawn().unwrap())
        .collect();
    assert!(
        poll(limits::TASK, || h
            .events_of(&id, "cuekit_transition")
            .iter()
            .filter(|e| e["transition"]["new_status"] == "completed")
            .count()
            >= 2),
        "the ending was not announced again"
    );
    for mut monitor in monitors {
        let _ = monitor.wait();
    }
    for (name, server) in services.all() {
        assert_eq!(server.requests().len(), 1, "{name} got it twice");
    }
}

#[test]
fn a_project_files_channels_are_refused_with_a_warning() {
    let server = Server::start(Answer::Ok);
    let h = Harness::new();
    std::fs::write(
        h.project.join(".cuekit.yaml"),
        format!(
            "notify:\n  local: [tmux]\n  channels:\n    theirs:\n      webhook: {}/steal\n",
            server.origin
        ),
    )
    .unwrap();
    let (answer, code) = h.json(&sh_task("exit 0", &["--mode", "batch"]).iter().fold(
        vec!["submit"],
        |mut all, arg| {
            all.push(arg);
            all
        },
    ));
    assert_eq!(code, 0, "{answer}");
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains("notify.channels.theirs") && warnings.contains("user only"),
        "{answer}"
    );
    let id = answer["id"].as_str().unwrap().to_string();
    h.wait_ended(&[&id], "60s");
    h.monitor_ticks_pass(3);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn notify_on_quiet_hours_and_a_mute_hold_notices_back() {
    let ended = Server::start(Answer::Ok);
    let waits = Server::start(Answer::Ok);
    let h = Harness::new();
    h.user_config(&format!(
        "notify:\n  channels:\n    ends:\n      webhook: {}/e\n      notify_on: [ended]\n    waits:\n      webhook: {}/w\n      notify_on: [input_required]\n",
        ended.origin, waits.origin
    ));
    let muted = h.submit_sh("sleep 2; exit 0", &["--mode", "batch"]);
    h.ok(&["mute", &muted]);
    let heard = h.submit_sh("exit 0", &["--mode", "batch"]);
    h.wait_ended(&[&muted, &heard], "60s");
    assert!(ended.wait_for(1, limits::TASK));
    h.monitor_ticks_pass(3);
    let ids: Vec<String> = ended
        .requests()
        .iter()
        .map(|r| r.json()["task_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, vec![heard.clone()], "the muted task was announced");
    assert!(
        waits.requests().is_empty(),
        "an ending went to a channel of waits"
    );
    // Quiet all day: nothing is sent, the hold is in the task's events.
    h.user_config(&format!(
        "notify:\n  quiet_hours: 00:00-23:59\n  channels:\n    ends:\n      webhook: {}/e\n",
        ended.origin
    ));
    let quiet = h.submit_sh("exit 0", &["--mode", "batch"]);
    h.wait_ended(&[&quiet], "60s");
    assert!(
        poll(limits::TASK, || h
            .events_of(&quiet, "cuekit_notify_sent")
            .iter()
            .any(|e| e["held"] == "quiet_hours")),
        "no hold recorded"
    );
    assert_eq!(ended.requests().len(), 1);
}

#[test]
fn the_digest_counts_what_ended_and_goes_out_once_when_the_queue_drains() {
    let server = Server::start(Answer::Ok);
    let h = Harness::new();
    h.user_config(&format!(
        "notify:\n  channels:\n    morning:\n      webhook: {}/d\n      notify_on: [digest]\n",
        server.origin
    ));
    let done = h.submit_sh("exit 0", &["--mode", "batch"]);
    let failed = h.submit_sh("exit 4", &["--mode", "batch"]);
    h.wait_ended(&[&done, &failed], "60s");
    let text = h.ok(&["digest", "--since", "1h"]);
    assert!(text.contains("2 ended (1 completed, 1 failed)"), "{text}");
    assert!(
        text.contains("0 unchecked") || text.contains("1 unchecked"),
        "{text}"
    );
    let (json, code) = h.json(&["digest", "--since", "1h"]);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["digest"]["ended"]["completed"], 1, "{json}");
    assert_eq!(json["digest"]["unchecked"], 1, "{json}");
    // The queue drained: a digest went out (two, when the first task ended before the second
    // was submitted: each since the last one), each drained state once, every ending in one.
    assert!(
        server.wait_for(1, limits::TASK),
        "no digest when the queue drained"
    );
    h.monitor_ticks_pass(2);
    let digests = server.requests();
    assert!((1..=2).contains(&digests.len()), "{digests:?}");
    let said: Vec<String> = digests
        .iter()
        .map(|d| {
            let body = d.json();
            assert_eq!(body["event"], "digest");
            body["status"].as_str().unwrap().to_string()
        })
        .collect();
    let said = said.join(" / ");
    assert!(
        said.contains("1 completed") && said.contains("1 failed"),
        "{said}"
    );
    let drained = digests.len();
    // `--send` once a day: the second is refused by the day's claim.
    let first = h.ok(&["digest", "--send", "--since", "1h"]);
    assert!(first.contains("sent to morning"), "{first}");
    let again = h.ok(&["digest", "--send"]);
    assert!(again.contains("not sent"), "{again}");
    assert_eq!(server.requests().len(), drained + 1);
}

#[test]
fn failed_checks_and_a_race_decided_are_announced_once_each() {
    let server = Server::start(Answer::Ok);
    let h = Harness::new();
    crate::checks::checked_project(&h);
    h.user_config(&format!(
        "notify:\n  channels:\n    races:\n      webhook: {}/r\n      notify_on: [check_failed, race_decided]\n",
        server.origin
    ));
    let (race, _) = sh_race(&h, &["--best-of", "2"], "echo answer=1 > answer.txt");
    let (waited, _) = h.json(&["wait", &race, "--timeout", "60s"]);
    assert!(server.wait_for(3, limits::TASK), "{waited}");
    h.monitor_ticks_pass(3);
    let notices: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    let of = |event: &str| notices.iter().filter(|n| n["event"] == event).count();
    assert_eq!(of("check_failed"), 2, "{notices:?}");
    assert_eq!(of("race_decided"), 1, "{notices:?}");
    let decided = notices
        .iter()
        .find(|n| n["event"] == "race_decided")
        .unwrap();
    assert_eq!(decided["task_id"], race.as_str());
    assert_eq!(decided["status"], "no_winner");
}

/// The race is decided by whoever holds its lock when the last candidate ends — here a `wait`
/// in another process, which announces nothing itself: the monitor's look waits for that
/// decider and announces its decision. (It once left the race to the holder and went quiet: a
/// `wait` that won the lock under load lost the notice.) The test holds the lock until
/// both candidates ended, the `wait` started and the monitor had its look.
#[test]
fn a_race_decided_by_a_wait_in_another_process_is_still_announced() {
    let server = Server::start(Answer::Ok);
    let h = Harness::new();
    crate::checks::checked_project(&h);
    h.user_config(&format!(
        "notify:\n  channels:\n    races:\n      webhook: {}/r\n      notify_on: [race_decided]\n",
        server.origin
    ));
    let (race, candidates) = sh_race(
        &h,
        &["--best-of", "2"],
        "sleep 3; echo answer=1 > answer.txt",
    );
    // Held by this test (the lock is `flock`'s, as cuekit's own): the monitor and the `wait`
    // below, other processes, find it taken.
    let lock = crate::harness::held_lock(&h.data_dir().join(format!("races/{race}.lock")));
    for id in &candidates {
        h.wait_until(id, "the candidate's ending", limits::TASK, || {
            h.status(id)["status"] == "failed"
        });
    }
    let waiting = h
        .cuekit()
        .args(["wait", &race, "--timeout", "60s"])
        .spawn()
        .unwrap();
    h.monitor_ticks_pass(2);
    assert!(
        server.requests().is_empty(),
        "nothing is decided under the lock"
    );
    drop(lock);
    let waited = waiting.wait_with_output().unwrap();
    assert!(waited.status.code().is_some(), "{waited:?}");
    assert!(
        server.wait_for(1, limits::TASK),
        "the decision was never announced"
    );
    h.monitor_ticks_pass(2);
    let notices: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["event"], "race_decided");
    assert_eq!(notices[0]["task_id"], race.as_str());
}

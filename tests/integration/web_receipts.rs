//! An action on a task's page stays on the page: done, the browser goes back to the task page
//! (303, its receipt named by a fixed code) and the page says what happened near its top; not
//! done, the task page is drawn again with the problem and its hint, and the steer box keeps
//! what was typed. Plain HTTP, as a browser without JavaScript sends the forms.

use crate::harness::{Harness, limits, poll};
use crate::web::{Reply, csrf_of, http, pair_http, serve};

/// A paired session's cookie and CSRF token.
fn signed_in(s: &crate::web::Serve) -> (String, String) {
    let (_, session) = pair_http(s, &s.code, "phone");
    let session = session.expect("paired");
    let csrf = csrf_of(s, &session);
    (format!("ck_session={session}"), csrf)
}

/// A form posted as the page posts it: signed by the paired device's key.
fn post(s: &crate::web::Serve, cookie: &str, path: &str, fields: &[(&str, &str)]) -> Reply {
    let session = cookie
        .strip_prefix("ck_session=")
        .expect("a session cookie");
    crate::web::post_signed(&s.addr, session, path, fields)
}

fn get(s: &crate::web::Serve, cookie: &str, path: &str) -> Reply {
    http(&s.addr, "GET", path, &[("Cookie", cookie)], "")
}

#[test]
fn a_steer_from_the_page_comes_back_to_the_task_with_its_receipt() {
    let h = Harness::new();
    let got = h.root().join("got.txt");
    let id = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        r#"printf 'ready\n> '; while IFS= read -r line; do printf '%s\n' "$line" >> "$0"; printf '> '; done"#,
        got.to_str().unwrap(),
    ]);
    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("ready")
    });
    let s = serve(&h, &[]);
    let (cookie, csrf) = signed_in(&s);
    let steered = post(
        &s,
        &cookie,
        &format!("/t/{id}/steer"),
        &[("csrf", &csrf), ("text", "hello from the page")],
    );
    assert_eq!(steered.status, 303, "{}", steered.body);
    let back = steered.header("location").unwrap_or_default().to_string();
    assert_eq!(back, format!("/t/{id}?done=steered"));
    assert!(
        poll(limits::SHORT, || std::fs::read_to_string(&got)
            .is_ok_and(|text| text == "hello from the page\n")),
        "the message never reached the child"
    );
    let page = get(&s, &cookie, &back);
    assert_eq!(page.status, 200, "{}", page.body);
    let receipt = page
        .body
        .find("id=\"receipt\"")
        .unwrap_or_else(|| panic!("no receipt on the task page:\n{}", page.body));
    assert!(
        page.body
            .contains("<b>Steered</b> — the child received your message"),
        "{}",
        page.body
    );
    // Near the top: above the task's own parts, outside the part an update replaces.
    let live = page.body.find("id=\"live\"").unwrap();
    assert!(receipt < live, "{}", page.body);
    // Only a code of the table names a receipt: other text in the query shows nothing.
    let forged = get(
        &s,
        &cookie,
        &format!("/t/{id}?done=%3Cscript%3Ealert(1)%3C/script%3E"),
    );
    assert_eq!(forged.status, 200, "{}", forged.body);
    assert!(!forged.body.contains("id=\"receipt\""), "{}", forged.body);
    assert!(!forged.body.contains("alert(1)"), "{}", forged.body);
    h.ok(&["cancel", &id]);
}

#[test]
fn a_steer_not_done_is_said_on_the_task_page_and_keeps_what_was_typed() {
    let h = Harness::new();
    let id = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    // A batch child takes no messages (its page offers no steer box; a form sent anyway).
    let batch = h.submit_batch_sh("sleep 600");
    for task in [&id, &batch] {
        h.wait_until(task, "running", limits::AGENT, || {
            h.status(task)["status"] == "running"
        });
    }
    let s = serve(&h, &[]);
    let (cookie, csrf) = signed_in(&s);
    let steer = |task: &str, text: &str| {
        post(
            &s,
            &cookie,
            &format!("/t/{task}/steer"),
            &[("csrf", &csrf), ("text", text)],
        )
    };
    let reply = steer(&batch, "hello");
    assert_eq!(reply.status, 409, "{}", reply.body);
    let page = &reply.body;
    // The task page itself, not a page with a way back.
    assert!(page.contains("id=\"objective\""), "{page}");
    assert!(!page.contains(">Back</a>"), "{page}");
    let problem = page
        .find("id=\"problem\"")
        .unwrap_or_else(|| panic!("no problem said:\n{page}"));
    assert!(problem < page.find("id=\"live\"").unwrap(), "{page}");
    assert!(
        page.contains("data-code=\"steering_unsupported\""),
        "{page}"
    );
    assert!(page.contains("cannot be steered"), "{page}");
    assert!(
        page.contains("<p class=\"hint\" id=\"problem-hint\">submit with --mode interactive"),
        "{page}"
    );
    assert!(!page.contains("error["), "{page}");
    assert!(!page.contains("id=\"steer-text\""), "{page}");
    // A message the steer refuses (a NUL byte): what was typed is in the steer box, escaped,
    // with the focus (the NUL dropped, as every control character on a page).
    let reply = steer(&id, "keep <b>this</b> & that\nsecond\0 line");
    assert_eq!(reply.status, 409, "{}", reply.body);
    let page = &reply.body;
    assert!(page.contains("data-code=\"invalid_input\""), "{page}");
    assert!(page.contains("NUL byte"), "{page}");
    assert!(
        page.contains(
            "autofocus>\nkeep &lt;b&gt;this&lt;/b&gt; &amp; that\nsecond line</textarea>"
        ),
        "{page}"
    );
    // And above the task, where an update of the live part does not reach.
    assert!(
        page.contains(
            "id=\"problem-typed\">keep &lt;b&gt;this&lt;/b&gt; &amp; that\nsecond line</pre>"
        ),
        "{page}"
    );
    // An empty message is said the same way.
    let empty = post(
        &s,
        &cookie,
        &format!("/t/{id}/steer"),
        &[("csrf", &csrf), ("text", "  ")],
    );
    assert_eq!(empty.status, 400, "{}", empty.body);
    assert!(
        empty.body.contains("An empty message is not sent"),
        "{}",
        empty.body
    );
    assert!(empty.body.contains("id=\"objective\""), "{}", empty.body);
    h.ok(&["cancel", &id, &batch]);
}

#[test]
fn cancel_and_retry_from_the_page_come_back_with_their_receipts() {
    let h = Harness::new();
    let id = h.submit_batch_sh("sleep 600");
    h.wait_until(&id, "running", limits::AGENT, || {
        h.status(&id)["status"] == "running"
    });
    let mut s = serve(&h, &[]);
    let (cookie, csrf) = signed_in(&s);
    let act = |action: &str| {
        post(
            &s,
            &cookie,
            &format!("/t/{id}/{action}"),
            &[("csrf", &csrf)],
        )
    };
    // An answer to a request that is not there: said on the task page.
    let answered = post(
        &s,
        &cookie,
        &format!("/t/{id}/answer"),
        &[("csrf", &csrf), ("answer", "allow"), ("tool", "gone")],
    );
    assert_eq!(answered.status, 409, "{}", answered.body);
    assert!(
        answered
            .body
            .contains("Not done: It waits on no permission request"),
        "{}",
        answered.body
    );
    assert!(
        answered.body.contains("id=\"objective\""),
        "{}",
        answered.body
    );
    let cancelled = act("cancel");
    assert_eq!(cancelled.status, 303, "{}", cancelled.body);
    let back = cancelled.header("location").unwrap_or_default().to_string();
    assert_eq!(back, format!("/t/{id}?done=cancelled"));
    let page = get(&s, &cookie, &back).body;
    assert!(
        page.contains("<b>Cancelled</b> — the child was stopped"),
        "{page}"
    );
    // A retry starts the command agent again, unsandboxed: the terminal's code is asked first.
    let asked = act("retry");
    assert!(asked.body.contains("confirm-code"), "{}", asked.body);
    let code = crate::web::confirm_code(&mut s);
    let retried = post(
        &s,
        &cookie,
        &format!("/t/{id}/retry"),
        &[("csrf", &csrf), ("code", &code)],
    );
    assert_eq!(retried.status, 303, "{}", retried.body);
    assert_eq!(
        retried.header("location"),
        Some(format!("/t/{id}?done=retried").as_str())
    );
    h.ok(&["cancel", &id]);
}

/// In a browser (JavaScript on): the task ends while you type a message (the page held still
/// for the focused box); the steer comes back to the task page, which says why it was not sent
/// and still shows the message; a batch task's page offers no steer box at all.
#[test]
fn in_a_browser_a_steer_not_done_keeps_its_text_and_a_batch_task_offers_none() {
    use crate::web::{click, on_a_paired_phone, type_into, wait_text};
    use fantoccini::Locator;
    let h = Harness::new();
    let id = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        "while :; do echo tick; sleep 0.3; done",
    ]);
    let batch = h.submit_batch_sh("sleep 600");
    h.wait_until(&id, "running", limits::AGENT, || {
        h.status(&id)["status"] == "running"
    });
    on_a_paired_phone(&h, async |client, s| {
        client.goto(&format!("{}/t/{batch}", s.url)).await.unwrap();
        wait_text(client, "Cancel task").await;
        assert!(client.find(Locator::Id("steer-text")).await.is_err());
        client.goto(&format!("{}/t/{id}", s.url)).await.unwrap();
        type_into(client, "steer-text", "please keep this").await;
        h.ok(&["cancel", &id]);
        // The updates that follow (it printed, it ended) leave the focused box alone.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        click(client, "steer").await;
        wait_text(client, "Not done: Task").await;
        let kept = client
            .execute(
                "return [document.getElementById('problem-typed').textContent, \
                 !!document.getElementById('steer-text')];",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(kept, serde_json::json!(["please keep this", false]));
        // Its hint names this task, not a placeholder.
        wait_text(client, &format!("cuekit logs {id}")).await;
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let png = client.screenshot().await.unwrap();
        std::fs::write(dir.join("task-steer-not-done-390x844.png"), png).unwrap();
        let _ = client.clone().close().await;
    });
    h.ok(&["cancel", &batch]);
}

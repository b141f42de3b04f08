//! The web page as a person reads it, in headless Chromium at a phone's 390×844 and a desktop's
//! 1280×800: the list leads with each objective and says how each task stands in words, what
//! waits for you first; a task waiting on a permission leads with its question, its screen
//! scrolls sideways inside its box; a completed task offers no retry. Every size writes its
//! screenshots into target/screenshots/ and checks the layout's facts: element order, targets
//! of 44 px at least, no page wider than the window.

use std::path::PathBuf;

use fantoccini::Client;
use serde_json::Value;

use crate::harness::{Harness, limits};
use crate::web::{browser_at, click_and_leave, pair_in_browser, runtime, serve, wait_text};

const SIZES: [(u32, u32); 2] = [(390, 844), (1280, 800)];

async fn shot(client: &Client, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = client.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let path = dir.join(name);
    std::fs::write(&path, png).unwrap();
    path
}

async fn js(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.unwrap()
}

/// The page is no wider than the window, and every visible link and button in it is 44 px
/// tall at least (the ones that are not: their text and height).
async fn layout_holds(client: &Client, page: &str) {
    let overflow = js(
        client,
        "return document.documentElement.scrollWidth - window.innerWidth;",
    )
    .await;
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "{page}: the page is {overflow} px too wide"
    );
    let small = js(
        client,
        "return [...document.querySelectorAll('a, button, select, input:not([type=hidden]), textarea')]
            .map(e => [e.textContent.trim().slice(0, 40) || e.name || e.tagName,
                       (e.type === 'checkbox' ? e.closest('label') : e).getBoundingClientRect().height])
            .filter(([_, h]) => h > 0 && h < 44);",
    )
    .await;
    assert_eq!(small, Value::Array(vec![]), "{page}: targets under 44 px");
}

#[test]
fn the_list_and_a_task_read_plainly_on_a_phone_and_a_desktop() {
    let h = Harness::new().with_fake_gemini();
    crate::plain_screens::screen_drawing_gemini(&h);
    let asks = h.submit(&["Write f.txt: needs a permission to run a shell command"]);
    let running = h.submit(&["--agent", "command", "--", "sh", "-c", "sleep 600"]);
    let done = h.submit(&["--agent", "command", "--", "sh", "-c", "echo all done"]);
    h.wait_until(&done, "the completion", limits::TASK, || {
        h.status(&done)["status"] == "completed"
    });
    h.wait_until(&asks, "the permission dialog", limits::AGENT, || {
        h.status(&asks)["reason"] == "permission_prompt"
    });
    let rt = runtime();
    for (width, height) in SIZES {
        // A pairing code is good once: each device pairs with a server of its own.
        let s = serve(&h, &[]);
        rt.block_on(async {
            let browser = browser_at(false, (width, height)).await;
            let client = browser.client();
            pair_in_browser(client, &s, &format!("device-{width}")).await;

            // The list: what waits for you first, the objective leading each card.
            let listed = wait_text(client, "asks to run `echo hi > f.txt`").await;
            assert!(listed.contains("waiting for you"), "{listed}");
            assert!(!listed.contains("input_required"), "{listed}");
            let order = js(
                client,
                "return [...document.querySelectorAll('li.task')].map(li => li.dataset.id);",
            )
            .await;
            assert_eq!(order[0], Value::from(asks.as_str()), "{order}");
            let parts = js(
                client,
                "return [...document.querySelector('li.task a').children].map(c => c.className);",
            )
            .await;
            assert_eq!(parts[0], "obj", "the objective leads the card: {parts}");
            assert_eq!(parts[1], "said", "{parts}");
            layout_holds(client, "the list").await;
            if width >= 1000 {
                let main = js(client, "return document.querySelector('main').getBoundingClientRect().width;").await;
                assert!(main.as_f64().unwrap() > 1000.0, "a desktop gets the width: {main}");
            }
            shot(client, &format!("list-{width}x{height}.png")).await;

            // A task waiting on a permission: its question before anything else it shows.
            client.goto(&format!("{}/t/{asks}", s.url)).await.unwrap();
            wait_text(client, "Waiting for you").await;
            let sections = js(
                client,
                "const ids = ['objective', 'said', 'needs-you', 'screen'];
                 return ids.map(id => document.getElementById(id)?.getBoundingClientRect().top ?? null);",
            )
            .await;
            let tops: Vec<f64> = sections
                .as_array()
                .unwrap()
                .iter()
                .map(|top| top.as_f64().unwrap_or_else(|| panic!("missing: {sections}")))
                .collect();
            assert!(tops.windows(2).all(|w| w[0] < w[1]), "order: {sections}");
            let asked = js(client, "return document.querySelector('#needs-you .asked').textContent;").await;
            assert!(asked.as_str().unwrap().contains("Allow execution of [Shell]?"), "{asked}");
            // The screen keeps its width inside its box: the page does not grow.
            layout_holds(client, "a task waiting on a permission").await;
            shot(client, &format!("task-permission-{width}x{height}.png")).await;

            // A completed task: no retry of what it did, and no steering.
            client.goto(&format!("{}/t/{done}", s.url)).await.unwrap();
            wait_text(client, "completed").await;
            let forms = js(client, "return [...document.querySelectorAll('form')].map(f => f.getAttribute('action'));").await;
            assert!(
                !forms.to_string().contains("/retry") && !forms.to_string().contains("/steer"),
                "{forms}"
            );
            layout_holds(client, "a completed task").await;
            shot(client, &format!("task-completed-{width}x{height}.png")).await;
            let _ = &running;

            // /new: an error keeps what was typed and says what to do, installed agents first.
            client.goto(&format!("{}/new", s.url)).await.unwrap();
            wait_text(client, "New task").await;
            let groups = js(
                client,
                "return [...document.querySelectorAll('#agent optgroup')].map(g => g.label);",
            )
            .await;
            assert_eq!(groups[0], "installed", "{groups}");
            let typed = "Keep every word I typed here";
            client
                .find(fantoccini::Locator::Id("objective-input"))
                .await
                .unwrap()
                .send_keys(typed)
                .await
                .unwrap();
            js(client, "document.getElementById('agent').value = 'jcode'; return null;").await;
            click_and_leave(client, "submit").await;
            let problem = wait_text(client, "jcode").await;
            let kept = js(client, "return document.getElementById('objective-input').value;").await;
            assert_eq!(kept, typed, "{problem}");
            let hint = js(client, "return document.getElementById('problem-hint')?.textContent ?? null;").await;
            assert!(hint.is_string(), "the error's hint, inline: {problem}");
            assert!(!problem.contains("error["), "{problem}");
            layout_holds(client, "the new-task form with an error").await;
            shot(client, &format!("new-error-{width}x{height}.png")).await;
        });
    }
}

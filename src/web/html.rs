//! The pages, rendered on the server. Every value that did not come from this file goes
//! through [`esc`]: a task's objective, screen, log, report, branch and file names and a tool's
//! title are text a child or a repository wrote. No value ever reaches an attribute that
//! starts a URL except task ids, which are checked (`store::is_task_id`) before any page.

use std::fmt::Write;
use std::time::SystemTime;

use super::receipt::{Problem, Receipt};
use crate::domain::status::Status;
use crate::domain::transcript::{Style, runs};
use crate::ops::{BoardRow, TaskResult, TaskView};

/// Text made safe for HTML element content and quoted attribute values; control characters
/// (terminal escapes a child printed) are dropped, tabs and newlines kept.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A whole page around `body`. `live` is the fragment URL `app.js` reloads when the server
/// says something changed (the list, or one task).
pub fn page(title: &str, csrf: Option<&str>, live: Option<&str>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    out.push_str("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">");
    let _ = write!(out, "<title>{} · cuekit</title>", esc(title));
    out.push_str("<link rel=\"stylesheet\" href=\"/app.css\">");
    out.push_str("<link rel=\"manifest\" href=\"/manifest.webmanifest\">");
    out.push_str("<link rel=\"icon\" href=\"/icon.svg\" type=\"image/svg+xml\">");
    out.push_str("<meta name=\"theme-color\" content=\"#1d2433\">");
    if let Some(csrf) = csrf {
        let _ = write!(out, "<meta name=\"csrf\" content=\"{}\">", esc(csrf));
    }
    out.push_str("<script src=\"/app.js\" defer></script></head><body");
    if let Some(live) = live {
        let _ = write!(out, " data-live=\"{}\"", esc(live));
    }
    out.push_str("><header><a href=\"/\" class=\"home\">cuekit</a>");
    if csrf.is_some() {
        out.push_str("<a href=\"/new\" class=\"new\">+ New task</a>");
    }
    out.push_str("</header>");
    out.push_str(body);
    out.push_str("</body></html>");
    out
}

/// A short page saying what happened, with a way back.
pub fn message(title: &str, text: &str, back: &str) -> String {
    page(
        title,
        None,
        None,
        &format!(
            "<main><h1>{}</h1><p class=\"msg\">{}</p><p><a href=\"{}\">Back</a></p></main>",
            esc(title),
            esc(text),
            esc(back)
        ),
    )
}

pub fn pair_form(form_token: &str, code: Option<&str>, error: Option<&str>) -> String {
    let mut body = String::from("<main><h1>Pair this device</h1>");
    if let Some(error) = error {
        let _ = write!(
            body,
            "<p class=\"error\" id=\"pair-error\">{}</p>",
            esc(error)
        );
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/pair\" class=\"stack\">\
         <input type=\"hidden\" name=\"form\" value=\"{}\">\
         <label>Code printed by <code>cuekit serve</code>\
         <input name=\"code\" id=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" value=\"{}\" required></label>\
         <label>Name of this device<input name=\"name\" id=\"name\" value=\"phone\" maxlength=\"32\"></label>\
         <button type=\"submit\" id=\"pair\">Pair</button></form></main>",
        esc(form_token),
        esc(code.unwrap_or(""))
    );
    page("Pair", None, None, &body)
}

/// Filters of the list page, from its query.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub struct Filter {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub team: Option<String>,
    #[serde(default)]
    pub project: Option<String>,
    /// Rows shown (default [`LIST_ROWS`]): the page stays small on a phone.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Rows the list shows unless asked for more.
pub const LIST_ROWS: usize = 100;

impl Filter {
    fn keeps(&self, view: &TaskView) -> bool {
        let wanted = |want: &Option<String>, have: Option<&str>| {
            want.as_deref()
                .filter(|w| !w.is_empty())
                .is_none_or(|w| have == Some(w))
        };
        wanted(&self.status, Some(view.status.as_str()))
            && wanted(&self.team, view.team.as_deref())
            && wanted(&self.project, project_of(view).as_deref())
    }

    fn query(&self) -> String {
        let mut parts = Vec::new();
        for (key, value) in [
            ("status", &self.status),
            ("team", &self.team),
            ("project", &self.project),
        ] {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                parts.push(format!("{key}={}", url_encode(value)));
            }
        }
        if let Some(limit) = self.limit {
            parts.push(format!("limit={limit}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// The project folder a task works for: the folder holding its `.cuekit/tasks/`.
pub fn project_of(view: &TaskView) -> Option<String> {
    let tasks = view.task_dir.parent()?;
    Some(tasks.parent()?.parent()?.display().to_string())
}

fn url_encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The rows the filter keeps, in the order every face shows them (`ops::attention_order`).
pub fn ordered<'a>(rows: &'a [BoardRow], filter: &Filter) -> Vec<&'a BoardRow> {
    let mut kept: Vec<&BoardRow> = rows.iter().filter(|row| filter.keeps(&row.view)).collect();
    kept.sort_by(|a, b| crate::ops::attention_order(a, b));
    kept
}

fn first_line(text: &str, limit: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut kept: String = line.chars().take(limit).collect();
    if line.chars().count() > limit {
        kept.push('…');
    }
    kept
}

/// A checked task's verdict: where it stands, the last command's result and its log, and the
/// protected files the child edited (which did not sway the verdict).
fn check_facts(view: &TaskView) -> Vec<(&'static str, String)> {
    let Some(check) = &view.check else {
        return Vec::new();
    };
    let mut facts = vec![("check", check.summary.clone())];
    if check.changed_since_check {
        facts.push((
            "changed",
            "changed since its check: a merge takes the checked commit".to_string(),
        ));
    }
    if let Some(last) = check.state.verdicts.last() {
        let result = if last.passed {
            "passed".to_string()
        } else {
            last.exit_code
                .map_or("did not finish".to_string(), |code| format!("exit {code}"))
        };
        facts.push(("last check", format!("{}: {result}", last.command)));
        facts.push(("check log", last.log.clone()));
        if !last.protected_edits.is_empty() {
            facts.push(("protected edits", last.protected_paths().join(", ")));
        }
        if !last.review_paths.is_empty() {
            facts.push(("changed, for review", last.review_paths.join(", ")));
        }
        if let (Some(ran), Some(base)) = (last.tests_ran, last.base_tests_ran) {
            facts.push(("tests", format!("{ran} ran (the base: {base})")));
        }
        if let Some(error) = &last.error {
            facts.push(("check said", error.clone()));
        }
    }
    facts
}

/// The status in words (`waiting for you`, `finished its turn`) in a pill whose colour says
/// who must move: a dialog (`st-asks`), a finished turn (`st-idle`), or the status's own.
fn plain_badge(view: &TaskView) -> String {
    let said = said(view);
    let class = match (view.status, view.reason.as_deref()) {
        (Status::InputRequired, Some("idle_at_prompt")) => "st-idle".to_string(),
        (Status::InputRequired, _) => "st-asks".to_string(),
        (status, _) => format!("st-{}", status.as_str()),
    };
    format!(
        "<span class=\"st {class}\" data-status=\"{}\">{}</span>",
        esc(view.status.as_str()),
        esc(said.word)
    )
}

/// How the task stands, in the words every face uses (`crate::domain::plain`).
fn said(view: &TaskView) -> crate::domain::plain::Said {
    let mut said = crate::domain::plain::said(
        view.status,
        view.reason.as_deref(),
        view.phase.as_deref(),
        view.hint.as_deref(),
    );
    if view.stopping {
        said.word = "stopping";
    }
    said
}

/// The list's live part: one card per task.
pub fn list_fragment(rows: &[BoardRow], filter: &Filter, now: SystemTime) -> String {
    let kept = ordered(rows, filter);
    let limit = filter.limit.unwrap_or(LIST_ROWS);
    let mut out = String::with_capacity(kept.len().min(limit) * 400 + 256);
    let _ = write!(
        out,
        "<p class=\"count\" id=\"count\">{} task{}</p><ul class=\"tasks\">",
        kept.len(),
        if kept.len() == 1 { "" } else { "s" }
    );
    let more = kept.len().saturating_sub(limit);
    for row in kept.into_iter().take(limit) {
        let view = &row.view;
        // The objective leads; then how it stands in words, and why; then the facts.
        let _ = write!(
            out,
            "<li class=\"task\" data-id=\"{id}\"><a href=\"/t/{id}\"><div class=\"obj\">{objective}</div>\
             <div class=\"said\">{badge}",
            id = esc(&view.id),
            objective = esc(&first_line(&view.objective, 120)),
            badge = plain_badge(view),
        );
        if let Some(detail) = said(view).detail {
            let _ = write!(out, "<span class=\"why\">{}</span>", esc(&detail));
        }
        if !view.conflicts.is_empty() {
            out.push_str("<span class=\"conflict\" title=\"conflicts\">⚠ conflicts</span>");
        }
        let _ = write!(
            out,
            "</div><div class=\"line1 meta\"><b>{}</b><span>{}",
            esc(&view.id),
            esc(&view.agent_kind)
        );
        if let Some(mode) = view.mode {
            let _ = write!(out, " · {}", esc(mode.as_str()));
        }
        let age = crate::domain::display::age::ago(&view.created_at, now);
        let _ = write!(out, " · {}</span></div>", esc(&age));
        let mut notes = Vec::new();
        if let Some(place) = view.queue.as_ref().and_then(|queue| queue.place) {
            notes.push(format!("queue #{place}"));
        }
        if let Some(check) = &view.check {
            notes.push(check.summary.clone());
        }
        if let Some(report) = &view.last_report {
            notes.push(format!(
                "{}: {}",
                report.kind.as_str(),
                first_line(&report.message, 60)
            ));
        }
        if !notes.is_empty() {
            let _ = write!(out, "<div class=\"note\">{}</div>", esc(&notes.join(" · ")));
        }
        out.push_str("</a></li>");
    }
    out.push_str("</ul>");
    if more > 0 {
        let mut wider = filter.clone();
        wider.limit = Some(limit.saturating_mul(10));
        let _ = write!(
            out,
            "<p><a href=\"/{}\" id=\"more-tasks\">{more} more</a></p>",
            esc(&wider.query())
        );
    }
    out
}

pub fn list_page(rows: &[BoardRow], filter: &Filter, csrf: &str, now: SystemTime) -> String {
    let mut body = String::from("<main><form class=\"filters\" method=\"get\" action=\"/\">");
    let options = |name: &str, current: &Option<String>, values: Vec<String>| {
        let mut select = format!("<select name=\"{name}\"><option value=\"\">any {name}</option>");
        for value in values {
            let chosen = if current.as_deref() == Some(value.as_str()) {
                " selected"
            } else {
                ""
            };
            // A status is offered in words; the query keeps its code.
            let word = Status::ALL
                .iter()
                .find(|status| status.as_str() == value)
                .map(|status| crate::domain::plain::status_word(*status));
            let label = match (name, word) {
                ("status", Some(word)) => word.to_string(),
                _ => value.clone(),
            };
            let _ = write!(
                select,
                "<option value=\"{}\"{chosen}>{}</option>",
                esc(&value),
                esc(&label)
            );
        }
        select.push_str("</select>");
        select
    };
    let mut statuses: Vec<String> = rows
        .iter()
        .map(|r| r.view.status.as_str().to_string())
        .collect();
    let mut teams: Vec<String> = rows.iter().filter_map(|r| r.view.team.clone()).collect();
    let mut projects: Vec<String> = rows.iter().filter_map(|r| project_of(&r.view)).collect();
    for values in [&mut statuses, &mut teams, &mut projects] {
        values.sort();
        values.dedup();
    }
    body.push_str(&options("status", &filter.status, statuses));
    if !teams.is_empty() {
        body.push_str(&options("team", &filter.team, teams));
    }
    if projects.len() > 1 {
        body.push_str(&options("project", &filter.project, projects));
    }
    body.push_str("<button type=\"submit\">Filter</button></form>");
    let _ = write!(
        body,
        "<div id=\"live\">{}</div></main>",
        list_fragment(rows, filter, now)
    );
    page(
        "Tasks",
        Some(csrf),
        Some(&format!("/live{}", filter.query())),
        &body,
    )
}

/// What the task page shows besides the view: read by the server face from operations.
pub struct TaskExtras {
    pub screen: Vec<String>,
    pub result: Option<TaskResult>,
    /// Lines shown, and whether more can be asked for.
    pub lines: usize,
    /// The transitions the monitor recorded for it, oldest first: `(at, from, to, reason)`.
    pub transitions: Vec<(String, String, String, String)>,
    /// The branch the task's work was merged into (the registry's merge record), if it was.
    pub merged_into: Option<String>,
}

/// A screen's lines (normalized SGR from the styled renderer) as escaped text in spans whose
/// classes name the colours and attributes (`f`/`g` + a 256-colour index, `b`, `d`, `i`, `u`,
/// `rv`): no style attribute, which the page's CSP forbids, and nothing a child printed
/// reaches the page but escaped text.
fn screen_html(lines: &[String]) -> String {
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        for (style, text) in runs(line) {
            let classes = style_classes(&style);
            if classes.is_empty() {
                out.push_str(&esc(text));
            } else {
                let _ = write!(out, "<span class=\"{classes}\">{}</span>", esc(text));
            }
        }
    }
    out
}

fn style_classes(style: &Style) -> String {
    let (mut fg, mut bg) = (style.fg.indexed(), style.bg.indexed());
    let mut classes = Vec::new();
    if style.attrs & Style::INVERSE != 0 {
        std::mem::swap(&mut fg, &mut bg);
        // A default swapped in is the screen's own colour, named by the class.
        if fg.is_none() || bg.is_none() {
            classes.push("rv".to_string());
        }
    }
    for (bit, class) in [
        (Style::BOLD, "b"),
        (Style::DIM, "d"),
        (Style::ITALIC, "i"),
        (Style::UNDERLINE, "u"),
    ] {
        if style.attrs & bit != 0 {
            classes.push(class.to_string());
        }
    }
    classes.extend(fg.map(|n| format!("f{n}")));
    classes.extend(bg.map(|n| format!("g{n}")));
    classes.join(" ")
}

fn hidden(csrf: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(csrf)
    )
}

fn button_form(
    action: &str,
    csrf: &str,
    fields: &[(&str, &str)],
    label: &str,
    class: &str,
) -> String {
    let mut out = format!(
        "<form method=\"post\" action=\"{}\" class=\"inline\">{}",
        esc(action),
        hidden(csrf)
    );
    for (name, value) in fields {
        let _ = write!(
            out,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            esc(name),
            esc(value)
        );
    }
    let _ = write!(
        out,
        "<button type=\"submit\" class=\"{}\">{}</button></form>",
        esc(class),
        esc(label)
    );
    out
}

/// The task page's live part, in the order a person needs it: what it is and how it stands,
/// what waits for you (a question, a request), its last answer, what can be done, then its
/// screen at its own width, its events, and the facts.
pub fn task_fragment(
    view: &TaskView,
    extras: &TaskExtras,
    csrf: &str,
    read_only: bool,
    now: SystemTime,
) -> String {
    task_fragment_typed(view, extras, csrf, read_only, now, None)
}

/// [`task_fragment`] with `typed` in its steer box (a steer that was not done, drawn again).
fn task_fragment_typed(
    view: &TaskView,
    extras: &TaskExtras,
    csrf: &str,
    read_only: bool,
    now: SystemTime,
    typed: Option<&str>,
) -> String {
    let id = &view.id;
    let said = said(view);
    let mut out = String::new();
    let _ = write!(
        out,
        "<section class=\"head\"><p class=\"objective\" id=\"objective\">{}</p><div class=\"said\" id=\"said\">{}",
        esc(&view.objective),
        plain_badge(view),
    );
    if let Some(detail) = &said.detail {
        let _ = write!(out, "<span class=\"why\">{}</span>", esc(detail));
    }
    out.push_str("</div></section>");
    out.push_str(&needs_you(view, csrf, read_only));
    if let Some(answer) = extras
        .result
        .as_ref()
        .map(|result| result.final_text.as_str())
        .filter(|text| !text.trim().is_empty())
    {
        let _ = write!(
            out,
            "<section class=\"answer\" id=\"answer\"><h2>Last answer</h2><pre class=\"final\" id=\"final\">{}</pre></section>",
            esc(answer)
        );
    }
    if let Some(report) = &view.last_report {
        let _ = write!(
            out,
            "<section class=\"report\"><h2>Last report: {}</h2><p id=\"last-report\">{}</p></section>",
            esc(report.kind.as_str()),
            esc(&report.message)
        );
    }
    out.push_str(&actions(
        view,
        extras.merged_into.as_deref(),
        (csrf, read_only),
        typed,
    ));
    let _ = write!(
        out,
        "<section><h2>Screen</h2><div class=\"scroll\"><pre class=\"screen\" id=\"screen\">{}</pre></div>",
        screen_html(&extras.screen)
    );
    if extras.screen.len() >= extras.lines {
        let _ = write!(
            out,
            "<p><a href=\"/t/{}?lines={}\" id=\"more\">More of the log</a></p>",
            esc(id),
            extras.lines.saturating_mul(4).min(20_000)
        );
    }
    out.push_str("</section>");
    if !extras.transitions.is_empty() {
        out.push_str("<section><h2>Events</h2><ul class=\"events\">");
        for (at, from, to, reason) in &extras.transitions {
            let _ = write!(
                out,
                "<li>{} {} → {} {}</li>",
                esc(&crate::domain::display::age::ago(at, now)),
                esc(from),
                esc(to),
                esc(reason)
            );
        }
        out.push_str("</ul></section>");
    }
    out.push_str(&details(view, extras, now));
    out
}

/// What waits for a person: the request cuekit can answer, else the question read off the
/// screen and what to do; any other hint.
fn needs_you(view: &TaskView, csrf: &str, read_only: bool) -> String {
    let mut out = String::new();
    if let Some(request) = view.request.as_ref().filter(|_| !read_only) {
        // What it asks and its answers, first, as any wait on a person is.
        out.push_str("<section class=\"needs\" id=\"needs-you\"><h2>Waiting for you</h2>");
        if let Some(asked) = view
            .hint
            .as_deref()
            .and_then(crate::domain::plain::asked_in_hint)
        {
            let _ = write!(out, "<p class=\"asked\">{}</p>", esc(asked));
        }
        out.push_str(&request_section(request, &view.id, csrf));
        out.push_str("</section>");
        return out;
    }
    let Some(hint) = &view.hint else {
        return out;
    };
    if crate::domain::plain::needs_you(view.status) {
        let asked = crate::domain::plain::asked_in_hint(hint);
        let _ = write!(
            out,
            "<section class=\"needs\" id=\"needs-you\"><h2>Waiting for you</h2>"
        );
        if let Some(asked) = asked {
            let _ = write!(out, "<p class=\"asked\">{}</p>", esc(asked));
        }
        // What to do, without the question said above it.
        let todo = asked
            .and_then(|asked| hint.strip_prefix(&format!("it asks: {asked}; ")))
            .unwrap_or(hint);
        let _ = write!(out, "<p class=\"hint\">{}</p></section>", esc(todo));
    } else {
        let _ = write!(out, "<p class=\"hint\">{}</p>", esc(hint));
    }
    out
}

/// The facts (agent, times, codes, branch, check) and the result's files and reports, last.
fn details(view: &TaskView, extras: &TaskExtras, now: SystemTime) -> String {
    let mut out = String::from("<section class=\"details\"><h2>Details</h2><dl>");
    let mut facts: Vec<(&str, String)> = vec![
        ("id", view.id.clone()),
        ("status", view.status.as_str().to_string()),
        ("agent", view.agent_kind.clone()),
    ];
    if let Some(mode) = view.mode {
        facts.push(("mode", mode.as_str().to_string()));
    }
    if let Some(model) = &view.model {
        facts.push(("model", model.clone()));
    }
    facts.push((
        "started",
        crate::domain::display::age::ago(&view.created_at, now),
    ));
    if let Some(ended) = &view.ended_at {
        facts.push(("ended", crate::domain::display::age::ago(ended, now)));
    }
    if let Some(reason) = &view.reason {
        facts.push(("reason", reason.clone()));
    }
    if let Some(code) = view.exit_code {
        facts.push(("exit", code.to_string()));
    }
    if let Some(branch) = &view.branch {
        facts.push(("branch", branch.clone()));
    }
    if let Some(team) = &view.team {
        facts.push(("team", team.clone()));
    }
    if !view.conflicts.is_empty() {
        facts.push(("conflicts", view.conflicts.join(", ")));
    }
    if let Some(place) = view.queue.as_ref().and_then(|q| q.place) {
        facts.push(("queue", format!("#{place}")));
    }
    facts.extend(check_facts(view));
    for (name, value) in facts {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(&value));
    }
    out.push_str("</dl>");
    if let Some(result) = &extras.result {
        if let Some(files) = &result.files_changed
            && !files.is_empty()
        {
            out.push_str("<h3>Files changed</h3><ul class=\"files\">");
            for file in files {
                let _ = write!(out, "<li>{}</li>", esc(&file.path));
            }
            out.push_str("</ul>");
        }
        if !result.reports.is_empty() {
            out.push_str("<h3>Reports</h3><ul class=\"reports\">");
            for report in &result.reports {
                let _ = write!(
                    out,
                    "<li><b>{}</b> {}</li>",
                    esc(report.kind.as_str()),
                    esc(&report.message)
                );
            }
            out.push_str("</ul>");
        }
    }
    out.push_str("</section>");
    out
}

/// A permission request the task waits on, with its three answers.
fn request_section(request: &crate::domain::acp::session::Pending, id: &str, csrf: &str) -> String {
    let mut out = String::new();
    let tool = &request.tool;
    let kind = tool
        .kind
        .map(|kind| format!("{kind:?}").to_lowercase())
        .unwrap_or_else(|| "other".into());
    let _ = write!(
        out,
        "<section class=\"request\" id=\"request\"><h2>Permission: {}</h2><p class=\"tool\">{}</p>",
        esc(&kind),
        esc(tool.title.as_deref().unwrap_or(&tool.id))
    );
    if let Some(text) = &tool.text {
        let _ = write!(out, "<pre class=\"tooltext\">{}</pre>", esc(text));
    }
    for path in &tool.paths {
        let _ = write!(out, "<p class=\"path\">{}</p>", esc(path));
    }
    out.push_str("<div class=\"answers\">");
    for (answer, label, class) in [
        ("allow", "Allow", "ok"),
        ("allow_always", "Allow always", "ok"),
        ("reject", "Reject", "danger"),
    ] {
        out.push_str(&button_form(
            &format!("/t/{id}/answer"),
            csrf,
            &[("answer", answer), ("tool", &tool.id)],
            label,
            class,
        ));
    }
    out.push_str("</div></section>");
    out
}

/// What a task page says above the task after an action: its receipt, or the problem it met.
pub enum Note<'a> {
    Done(Receipt),
    Problem(&'a Problem),
}

/// A task's page, with `note` near its top, outside the live part (an update keeps it); after
/// a problem the steer box holds what was typed, and has the focus (`app.js` holds a page
/// still while a form has it).
pub fn task_page(
    view: &TaskView,
    extras: &TaskExtras,
    (csrf, read_only): (&str, bool),
    now: SystemTime,
    note: Option<Note>,
) -> String {
    let id = &view.id;
    let typed = match &note {
        Some(Note::Problem(problem)) => problem.typed.as_deref(),
        _ => None,
    };
    let body = format!(
        "<main>{}<div id=\"live\">{}</div></main>",
        note.as_ref().map(note_html).unwrap_or_default(),
        task_fragment_typed(view, extras, csrf, read_only, now, typed)
    );
    page(id, Some(csrf), Some(&format!("/t/{id}/live")), &body)
}

/// A receipt (`role=status`) or a problem with its hint (`role=alert`). Every word is this
/// file's or an operation's; none comes from the request.
fn note_html(note: &Note) -> String {
    match note {
        Note::Done(receipt) => {
            let (word, detail) = receipt.said();
            format!(
                "<div class=\"receipt{}\" id=\"receipt\" role=\"status\" data-done=\"{}\"><p><b>{}</b> — {}</p></div>",
                if receipt.warns() { " warn" } else { "" },
                esc(receipt.code()),
                esc(&word),
                esc(&detail)
            )
        }
        Note::Problem(problem) => {
            let mut out = format!(
                "<div class=\"problem\" id=\"problem\" role=\"alert\" data-code=\"{}\"><p class=\"error\">Not done: {}</p>",
                esc(problem.code),
                esc(&problem.message)
            );
            if let Some(hint) = &problem.hint {
                let _ = write!(
                    out,
                    "<p class=\"hint\" id=\"problem-hint\">{}</p>",
                    esc(hint)
                );
            }
            // Kept here too, outside the live part: an update while the steer box has no focus
            // draws that box empty again.
            if let Some(typed) = &problem.typed {
                let _ = write!(
                    out,
                    "<p class=\"hint\">Your message, not sent:</p><pre id=\"problem-typed\">{}</pre>",
                    esc(typed)
                );
            }
            out.push_str("</div>");
            out
        }
    }
}

/// What can be done to the task as it stands (nothing under `--read-only`): part of the live
/// fragment, so a task that ends trades its steer box for retry and merge without a reload.
/// `typed`: what the steer box holds (a steer not done, drawn again with the focus).
fn actions(
    view: &TaskView,
    merged_into: Option<&str>,
    (csrf, read_only): (&str, bool),
    typed: Option<&str>,
) -> String {
    let id = &view.id;
    let mut out = String::new();
    if !read_only {
        out.push_str("<section class=\"actions\"><h2>Actions</h2>");
        // A batch child reads no messages: no steer box to offer it.
        let steerable = view.mode != Some(crate::domain::spec::Mode::Batch);
        if steerable && !view.status.is_terminal() && view.status != Status::Queued {
            let _ = write!(
                out,
                "<form method=\"post\" action=\"/t/{}/steer\" class=\"stack\" id=\"steer-form\">{}\
                 <textarea name=\"text\" id=\"steer-text\" rows=\"3\" required placeholder=\"Message to the child\"{}>\n{}</textarea>\
                 <button type=\"submit\" id=\"steer\">Steer</button></form>",
                esc(id),
                hidden(csrf),
                if typed.is_some() { " autofocus" } else { "" },
                // (The parser drops a textarea's first newline: the one above, not the text's.)
                esc(typed.unwrap_or(""))
            );
        }
        if view.status == Status::Running {
            out.push_str(&handoff_form(id, csrf));
        }
        out.push_str("<div class=\"row\">");
        if !view.status.is_terminal() {
            out.push_str(&button_form(
                &format!("/t/{id}/cancel"),
                csrf,
                &[],
                "Cancel task",
                "danger confirm",
            ));
        } else {
            // A completed task did what it was asked: no retry to offer it.
            if view.status != Status::Completed {
                out.push_str(&button_form(
                    &format!("/t/{id}/retry"),
                    csrf,
                    &[],
                    "Retry",
                    "",
                ));
            }
            // Work already merged, or with no change left against its base, has nothing to merge.
            if let Some(target) = merged_into {
                let _ = write!(out, "<p id=\"merged\">merged into {}</p>", esc(target));
            } else if view.branch.is_some()
                && view.diff_stat.as_ref().is_none_or(|stat| stat.files > 0)
            {
                let _ = write!(
                    out,
                    "<a class=\"button\" href=\"/t/{}/merge\" id=\"merge\">Merge…</a>",
                    esc(id)
                );
            }
        }
        out.push_str("</div></section>");
    }
    if view.branch.is_some() {
        let _ = write!(
            out,
            "<p><a href=\"/t/{}/diff\" id=\"diff\">The diff, per file</a></p>",
            esc(id)
        );
    }
    out
}

/// The hand-off of a running task (`cuekit handoff`): the agents here but the command agent
/// (installed first), an optional model and an optional message for the next agent.
fn handoff_form(id: &str, csrf: &str) -> String {
    let mut options = String::new();
    let mut agents: Vec<crate::ops::AgentHere> = crate::ops::agents_here()
        .into_iter()
        .filter(|agent| agent.kind != "command")
        .collect();
    agents.sort_by_key(|agent| !agent.installed);
    for agent in &agents {
        let note = if agent.installed {
            ""
        } else {
            " (not installed)"
        };
        let _ = write!(
            options,
            "<option value=\"{0}\">{0}{note}</option>",
            esc(agent.kind)
        );
    }
    format!(
        "<form method=\"post\" action=\"/t/{}/handoff\" class=\"stack\" id=\"handoff-form\">{}\
         <label>Hand off to<select name=\"agent\" id=\"handoff-agent\" required>{options}</select></label>\
         <label>Model<input name=\"model\" id=\"handoff-model\" placeholder=\"the agent's default\"></label>\
         <textarea name=\"message\" id=\"handoff-message\" rows=\"2\" placeholder=\"Message to the next agent (optional)\"></textarea>\
         <button type=\"submit\" id=\"handoff\" class=\"confirm\">Hand off</button></form>",
        esc(id),
        hidden(csrf)
    )
}

/// A worktree task's work against its base: the files, then the patch.
pub fn diff_page(id: &str, files: &str, patch: &str) -> String {
    let mut body = format!(
        "<main><h1>Diff of {}</h1><pre class=\"screen\" id=\"files\">{}</pre><div id=\"patch\">",
        esc(id),
        esc(files),
    );
    for (n, file) in patch_files(patch).into_iter().enumerate() {
        let _ = write!(
            body,
            "<section class=\"file\" id=\"file-{n}\"><h2>{}</h2><div class=\"scroll\"><pre class=\"diff\">",
            esc(file.0)
        );
        for line in file.1 {
            let class = match line.as_bytes().first() {
                Some(b'+') if !line.starts_with("+++") => "add",
                Some(b'-') if !line.starts_with("---") => "del",
                Some(b'@') => "hunk",
                _ if line.starts_with("diff ") || line.starts_with("index ") => "meta",
                _ if line.starts_with("+++") || line.starts_with("---") => "meta",
                _ => "ctx",
            };
            let _ = write!(body, "<span class=\"{class}\">{}</span>", esc(line));
        }
        body.push_str("</pre></div></section>");
    }
    let _ = write!(
        body,
        "</div><p><a href=\"/t/{}\">Back</a></p></main>",
        esc(id)
    );
    page("Diff", None, None, &body)
}

/// A patch split per file (`diff --git a/… b/…` starts one): each file's name and lines.
fn patch_files(patch: &str) -> Vec<(&str, Vec<&str>)> {
    let mut files: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in patch.lines() {
        if let Some(names) = line.strip_prefix("diff --git ") {
            let name = names.rsplit_once(" b/").map_or(names, |(_, name)| name);
            files.push((name, vec![line]));
        } else if let Some(file) = files.last_mut() {
            file.1.push(line);
        } else {
            files.push(("", vec![line]));
        }
    }
    files
}

/// What a merge would bring, before it is done: conflicts and the files that need review.
pub fn merge_page(
    id: &str,
    csrf: &str,
    conflicts: &[String],
    review: &[String],
    stat: &str,
) -> String {
    let mut body = format!("<main><h1>Merge {}</h1>", esc(id));
    if !review.is_empty() {
        body.push_str(
            "<h2>Review first: files that run code or set policy</h2><ul class=\"files\" id=\"review\">",
        );
        for path in review {
            let _ = write!(body, "<li>{}</li>", esc(path));
        }
        let _ = write!(
            body,
            "</ul><p><a href=\"/t/{}/diff\">Read the diff</a></p>",
            esc(id)
        );
    }
    if conflicts.is_empty() {
        body.push_str("<p class=\"msg\">No conflicts on record.</p>");
    } else {
        body.push_str("<h2>Conflicts</h2><ul class=\"files\">");
        for conflict in conflicts {
            let _ = write!(body, "<li>{}</li>", esc(conflict));
        }
        body.push_str("</ul>");
    }
    let _ = write!(
        body,
        "<h2>Changes</h2><pre class=\"screen\">{}</pre>",
        esc(stat)
    );
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/t/{}/merge\" class=\"stack\">{}\
         <label><input type=\"checkbox\" name=\"reviewed\" id=\"reviewed\" value=\"yes\"> I reviewed the files that run code or set policy</label>\
         <button type=\"submit\" id=\"do-merge\">Merge</button></form><p><a href=\"/t/{}\">Back</a></p></main>",
        esc(id),
        hidden(csrf),
        esc(id)
    );
    page("Merge", Some(csrf), None, &body)
}

pub fn submit_page(csrf: &str, allow_commands: bool, error: Option<&str>) -> String {
    submit_page_again(
        csrf,
        allow_commands,
        error.map(|error| (error, None)),
        &std::collections::HashMap::new(),
    )
}

/// The new-task form, with what was typed (`typed`, the form's fields) kept after an error,
/// the error and its hint said above the form; the installed agents offered first, the
/// others with how to install them.
pub fn submit_page_again(
    csrf: &str,
    allow_commands: bool,
    error: Option<(&str, Option<&str>)>,
    typed: &std::collections::HashMap<String, String>,
) -> String {
    let value = |name: &str| typed.get(name).map(String::as_str).unwrap_or("");
    let mut body = String::from("<main><h1>New task</h1>");
    if let Some((error, hint)) = error {
        let _ = write!(
            body,
            "<div class=\"problem\" id=\"problem\" role=\"alert\"><p class=\"error\">{}</p>",
            esc(error)
        );
        if let Some(hint) = hint {
            let _ = write!(
                body,
                "<p class=\"hint\" id=\"problem-hint\">{}</p>",
                esc(hint)
            );
        }
        body.push_str("</div>");
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/new\" class=\"stack\">{}\
         <label>Objective{}<textarea name=\"objective\" id=\"objective-input\" rows=\"5\" required>{}</textarea></label>\
         <label>Agent<select name=\"agent\" id=\"agent\"><option value=\"\">default</option>",
        hidden(csrf),
        if allow_commands {
            " (for the command agent: the shell line it runs)"
        } else {
            ""
        },
        esc(value("objective"))
    );
    let agents: Vec<crate::ops::AgentHere> = crate::ops::agents_here()
        .into_iter()
        .filter(|agent| allow_commands || agent.kind != "command")
        .collect();
    let mut group = None;
    for agent in &agents {
        if group != Some(agent.installed) {
            if group.is_some() {
                body.push_str("</optgroup>");
            }
            let label = if agent.installed {
                "installed"
            } else {
                "not installed"
            };
            let _ = write!(body, "<optgroup label=\"{label}\">");
            group = Some(agent.installed);
        }
        let chosen = if value("agent") == agent.kind {
            " selected"
        } else {
            ""
        };
        let label = if agent.installed {
            agent.kind.to_string()
        } else {
            format!("{} — install: {}", agent.kind, agent.install_hint)
        };
        let _ = write!(
            body,
            "<option value=\"{}\"{chosen}>{}</option>",
            esc(agent.kind),
            esc(&label)
        );
    }
    if group.is_some() {
        body.push_str("</optgroup>");
    }
    let mode = value("mode");
    let mut modes = String::new();
    for name in ["interactive", "batch", "acp"] {
        let chosen = if mode == name { " selected" } else { "" };
        let _ = write!(modes, "<option{chosen}>{name}</option>");
    }
    let _ = write!(
        body,
        "</select></label><label>Model<input name=\"model\" value=\"{}\"></label>\
         <label>Mode<select name=\"mode\"><option value=\"\">default</option>{modes}</select></label>\
         <label class=\"check\"><input type=\"checkbox\" name=\"worktree\" id=\"worktree\" value=\"yes\"{}> In a worktree of its own</label>\
         <button type=\"submit\" id=\"submit\">Submit</button></form></main>",
        esc(value("model")),
        if value("worktree") == "yes" {
            " checked"
        } else {
            ""
        }
    );
    page("New task", Some(csrf), None, &body)
}

/// The page a paired device signs in on at a new run of serve: `app.js` signs the nonce with
/// the key pairing left in IndexedDB and sends it; a browser without one goes to pairing.
pub fn unlock_page(nonce: &str) -> String {
    let body = format!(
        "<main id=\"unlock\" data-nonce=\"{}\"><h1>Signing in</h1><p class=\"msg\" \
         id=\"unlock-msg\">This device signs in with the key it made when it paired (this \
         needs JavaScript).</p><p><a href=\"/pair\">Pair this device</a></p></main>",
        esc(nonce)
    );
    page("Sign in", None, None, &body)
}

/// The step a destructive action needs: the code `cuekit serve` printed in its terminal for
/// it (a squatter that took the page cannot read that terminal). `fields` are the action's
/// own, sent again with the code.
pub fn code_page(
    action: &str,
    csrf: &str,
    what: &str,
    fields: &[(&str, &str)],
    error: Option<&str>,
) -> String {
    let mut body = String::from("<main><h1>Confirm with the terminal's code</h1>");
    if let Some(error) = error {
        let _ = write!(
            body,
            "<p class=\"error\" id=\"code-error\">{}</p>",
            esc(error)
        );
    }
    let _ = write!(
        body,
        "<p class=\"msg\">{}</p><p>The terminal running <code>cuekit serve</code> printed a \
         6-digit code for this; type it here.</p><form method=\"post\" action=\"{}\" \
         class=\"stack\">{}",
        esc(what),
        esc(action),
        hidden(csrf)
    );
    for (name, value) in fields {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            esc(name),
            esc(value)
        );
    }
    body.push_str(
        "<label>Code<input name=\"code\" id=\"confirm-code\" inputmode=\"numeric\" \
         autocomplete=\"off\" required></label><button type=\"submit\" id=\"confirm\" \
         class=\"danger\">Confirm</button></form><p><a href=\"/\">Back</a></p></main>",
    );
    page("Confirm", Some(csrf), None, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup_and_no_terminal_escapes() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(esc("a\x1b[31mred\x07\nb"), "a[31mred\nb");
    }

    #[test]
    fn a_patch_is_split_per_file_and_its_lines_coloured() {
        let patch = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n\
                     diff --git a/b.rs b/b.rs\n@@ -0,0 +1 @@\n+fn b() {}\n";
        let files = patch_files(patch);
        assert_eq!(files.len(), 2);
        assert_eq!((files[0].0, files[1].0), ("a.txt", "b.rs"));
        let page = diff_page("t_1", "a.txt | 2 +-", patch);
        assert!(page.contains("<span class=\"del\">-old</span>"), "{page}");
        assert!(page.contains("<span class=\"add\">+new</span>"), "{page}");
        assert!(page.contains("id=\"file-1\"><h2>b.rs</h2>"), "{page}");
    }

    #[test]
    fn query_values_are_encoded() {
        let filter = Filter {
            status: Some("running".into()),
            team: Some("a b&c".into()),
            project: None,
            limit: None,
        };
        assert_eq!(filter.query(), "?status=running&team=a%20b%26c");
    }
}

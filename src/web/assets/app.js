// cuekit serve: the page's only script (served as a file: the CSP allows no inline script).
// It asks before a form marked "confirm" is sent, and reloads the page's live part when the
// server's event stream says something changed (not while a form has the focus). Fragments
// are HTML the server escaped.
"use strict";
(function () {
  document.addEventListener("submit", function (event) {
    var button = event.target.querySelector("button.confirm");
    if (button && !window.confirm(button.textContent + "?")) {
      event.preventDefault();
    }
  });
  var live = document.body.getAttribute("data-live");
  var target = document.getElementById("live");
  if (!live || !target || !window.EventSource) {
    return;
  }
  var match = /^\/t\/([A-Za-z0-9_-]+)\/live$/.exec(live);
  var source = new EventSource("/events" + (match ? "?task=" + match[1] : ""));
  var pending = null;
  // What was last put in; an answer that brings nothing new leaves the page alone.
  var last = null;
  function reload() {
    // Someone typing a message or pressing a button keeps the page still: later.
    var active = document.activeElement;
    if (active && active !== document.body && active.closest && active.closest("form")) {
      pending = window.setTimeout(reload, 500);
      return;
    }
    pending = null;
    fetch(live, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      if (response.status === 403) {
        window.location.href = "/pair";
        return null;
      }
      return response.ok ? response.text() : null;
    }).then(function (text) {
      if (text !== null && text !== undefined && text !== last) {
        last = text;
        target.innerHTML = text;
        document.body.setAttribute("data-updated", String(Date.now()));
      }
    });
  }
  source.onmessage = function (event) {
    var news = {};
    try { news = JSON.parse(event.data); } catch (e) { return; }
    if (news.kind === "ended") {
      source.close();
      window.location.href = "/pair";
      return;
    }
    if (pending === null) {
      pending = window.setTimeout(reload, 50);
    }
  };
})();

// cuekit serve: the page's only script (served as a file: the CSP allows no inline script).
// It asks before a form marked "confirm" is sent, and reloads the page's live part when the
// server's event stream says something changed (not while a form has the focus). Fragments
// are HTML the server escaped.
"use strict";
// cuekit's pages register no service worker and keep nothing in Cache Storage (nor in
// the Web Storage areas: a test says so): any found was left by something that
// answered on this origin while serve was down, and goes.
(function () {
  if (navigator.serviceWorker && navigator.serviceWorker.getRegistrations) {
    navigator.serviceWorker.getRegistrations().then(function (found) {
      found.forEach(function (registration) { registration.unregister(); });
    }, function () {});
  }
  if (window.caches && window.caches.keys) {
    window.caches.keys().then(function (keys) {
      keys.forEach(function (key) { window.caches.delete(key); });
    }, function () {});
  }
})();
(function () {
  document.addEventListener("submit", function (event) {
    var button = event.target.querySelector("button.confirm");
    if (button && !window.confirm(button.textContent + "?")) {
      event.preventDefault();
    }
  });
  // A screen shows its latest lines, as a terminal does.
  function toBottom() {
    var screen = document.getElementById("screen");
    if (screen) {
      screen.scrollTop = screen.scrollHeight;
    }
  }
  toBottom();
  var live = document.body.getAttribute("data-live");
  var target = document.getElementById("live");
  if (!live || !target || !window.EventSource) {
    return;
  }
  var match = /^\/t\/([A-Za-z0-9_-]+)\/live$/.exec(live);
  var source = new EventSource("/events" + (match ? "?task=" + match[1] : ""));
  // A reload waiting or on its way; `again`: news came meanwhile, so one more follows.
  var pending = null;
  var again = false;
  // What was last put in; an answer that brings nothing new leaves the page alone.
  var last = null;
  // Someone typing a message or pressing a button keeps the page still.
  function busy() {
    var active = document.activeElement;
    return !!(active && active !== document.body && active.closest && active.closest("form"));
  }
  function reload() {
    if (busy()) {
      pending = window.setTimeout(reload, 500);
      return;
    }
    fetch(live, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      if (response.status === 403) {
        window.location.href = "/pair";
        return null;
      }
      return response.ok ? response.text() : null;
    }).then(function (text) {
      if (text !== null && text !== undefined && text !== last) {
        if (busy()) {
          // The focus went into a form while the answer was on its way: try again later.
          pending = window.setTimeout(reload, 500);
          return;
        }
        last = text;
        target.innerHTML = text;
        toBottom();
        document.body.setAttribute("data-updated", String(Date.now()));
      }
      done();
    }, done);
  }
  function done() {
    pending = null;
    if (again) {
      again = false;
      pending = window.setTimeout(reload, 50);
    }
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
    } else {
      again = true;
    }
  };
})();

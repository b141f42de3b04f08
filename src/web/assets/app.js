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
// The device's key: pairing makes an ECDSA P-256 pair in the browser (the private half not
// extractable) and keeps it in IndexedDB, sending the public half with the code; at each new
// run of serve the page /unlock has the device sign the server's nonce with it. A session
// cookie from another run (a squatter that answered on the port while serve was down got the
// last one) is refused; the key never leaves the browser.
(function () {
  var subtle = window.crypto && window.crypto.subtle;
  function store() {
    return new Promise(function (resolve, reject) {
      var open = window.indexedDB.open("cuekit", 1);
      open.onupgradeneeded = function () { open.result.createObjectStore("keys"); };
      open.onsuccess = function () { resolve(open.result); };
      open.onerror = function () { reject(open.error); };
    });
  }
  function keep(pair) {
    return store().then(function (db) {
      return new Promise(function (resolve, reject) {
        var tx = db.transaction("keys", "readwrite");
        tx.objectStore("keys").put(pair, "device");
        tx.oncomplete = function () { resolve(); };
        tx.onerror = function () { reject(tx.error); };
      });
    });
  }
  function kept() {
    return store().then(function (db) {
      return new Promise(function (resolve, reject) {
        var read = db.transaction("keys").objectStore("keys").get("device");
        read.onsuccess = function () { resolve(read.result || null); };
        read.onerror = function () { reject(read.error); };
      });
    });
  }
  function hex(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }
  function field(form, name, value) {
    var input = document.createElement("input");
    input.type = "hidden";
    input.name = name;
    input.value = value;
    form.appendChild(input);
  }
  var ready = !!(subtle && window.indexedDB);
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!ready || form.getAttribute("action") !== "/pair" || form.querySelector("input[name=key]")) {
      return;
    }
    event.preventDefault();
    subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])
      .then(function (pair) {
        return keep(pair).then(function () { return subtle.exportKey("raw", pair.publicKey); });
      })
      .then(function (raw) {
        field(form, "key", hex(raw));
        form.submit();
      }, function () {
        // No key could be kept: paired for this run only.
        form.submit();
      });
  }, true);
  var unlock = document.getElementById("unlock");
  if (!unlock) {
    return;
  }
  if (!ready) {
    window.location.href = "/pair";
    return;
  }
  var nonce = unlock.getAttribute("data-nonce");
  kept().then(function (pair) {
    if (!pair) {
      window.location.href = "/pair";
      return null;
    }
    var message = "cuekit serve sign-in\n" + nonce + "\n" + window.location.host.toLowerCase();
    return subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey,
      new TextEncoder().encode(message)).then(function (signature) {
      var form = document.createElement("form");
      form.method = "post";
      form.action = "/unlock";
      field(form, "nonce", nonce);
      field(form, "signature", hex(signature));
      document.body.appendChild(form);
      form.submit();
    });
  }).catch(function () { window.location.href = "/pair"; });
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

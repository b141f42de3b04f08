// cuekit serve: the page's only script (served as a file: the CSP allows no inline script).
// It asks before a form marked "confirm" is sent, and reloads the page's live part when the
// server's event stream says something changed (not while a form has the focus). Fragments
// are HTML the server escaped.
"use strict";
// What the parts below share: `sign` (the device key's signature of a request, made by the
// second part).
var cuekit = {};
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
    return input;
  }
  var ready = !!(subtle && window.indexedDB);
  // Keys, not bearer cookies: each action a page sends (every POST form but pairing and
  // sign-in) and the event stream's start are signed with the device's key over a single-use
  // nonce serve gives this session (POST /nonce with the page's CSRF token). Signed:
  // "cuekit serve request", the method, the path, the nonce, the host and the SHA-256 of the
  // fields (the URL's, then the form's, in order, each name=value as encodeURIComponent has
  // it, line breaks as \n, joined by &), a line each (src/web/signed.rs checks it).
  function csrfOf(form) {
    var input = form && form.querySelector("input[name=csrf]");
    if (input) {
      return input.value;
    }
    var meta = document.querySelector("meta[name=csrf]");
    return meta ? meta.getAttribute("content") : "";
  }
  function component(text) {
    text = String(text);
    if (text.toWellFormed) {
      text = text.toWellFormed();
    }
    return encodeURIComponent(text.replace(/\r\n?/g, "\n"));
  }
  // Resolves to {nonce, signature}; rejects with "session" when serve gives this session no
  // nonce (a new run, or revoked), else with why it could not sign.
  function sign(method, url, entries, token) {
    return kept().then(function (pair) {
      if (!pair) {
        throw new Error("no key");
      }
      return fetch("/nonce", {
        method: "POST", credentials: "same-origin", cache: "no-store",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: "csrf=" + encodeURIComponent(token || "")
      }).then(function (response) {
        if (response.status === 403) {
          throw new Error("session");
        }
        if (!response.ok) {
          throw new Error("nonce " + response.status);
        }
        return response.text();
      }).then(function (nonce) {
        var all = [];
        url.searchParams.forEach(function (value, name) { all.push([name, value]); });
        var text = all.concat(entries).filter(function (entry) {
          return entry[0] !== "ck_nonce" && entry[0] !== "ck_sig";
        }).map(function (entry) {
          return component(entry[0]) + "=" + component(entry[1]);
        }).join("&");
        return subtle.digest("SHA-256", new TextEncoder().encode(text)).then(function (digest) {
          var message = ["cuekit serve request", method, url.pathname, nonce,
            window.location.host.toLowerCase(), hex(digest)].join("\n");
          return subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey,
            new TextEncoder().encode(message));
        }).then(function (signature) {
          return { nonce: nonce, signature: hex(signature) };
        });
      });
    });
  }
  // A page brought back from the back-forward cache is not on its way out any more.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      document.body.removeAttribute("data-signing");
    }
  });
  cuekit.sign = ready ? function (method, url) {
    return sign(method, url, [], csrfOf(null));
  } : null;
  // On the window, so after the document's own listeners (a confirmation asked first): a
  // form's native submission, signed. Without a key it goes unsigned, and serve says why.
  window.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !ready || (form.getAttribute("method") || "").toLowerCase() !== "post") {
      return;
    }
    var action = new URL(form.getAttribute("action") || "", window.location.href);
    if (action.origin !== window.location.origin ||
        ["/pair", "/unlock", "/nonce"].indexOf(action.pathname) >= 0) {
      return;
    }
    event.preventDefault();
    if (form.hasAttribute("data-signing")) {
      return;
    }
    form.setAttribute("data-signing", "");
    document.body.setAttribute("data-signing", "");
    Array.prototype.forEach.call(
      form.querySelectorAll("input[name=ck_nonce],input[name=ck_sig],input[data-submitter]"),
      function (old) { old.remove(); });
    var submitter = event.submitter;
    if (submitter && submitter.name) {
      field(form, submitter.name, submitter.value).setAttribute("data-submitter", "");
    }
    var entries = [];
    new FormData(form).forEach(function (value, name) {
      entries.push([name, typeof value === "string" ? value : ""]);
    });
    function send() {
      form.removeAttribute("data-signing");
      HTMLFormElement.prototype.submit.call(form);
    }
    sign("POST", action, entries, csrfOf(form)).then(function (signed) {
      field(form, "ck_nonce", signed.nonce);
      field(form, "ck_sig", signed.signature);
      send();
    }, send);
  });
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
  // The stream's start is signed (cuekit.sign): a new nonce for each start, so when the
  // browser's own reconnection is refused (its nonce is spent) the page opens it again; a
  // session serve no longer knows goes to "/" (a new run's sign-in, or pairing). A browser
  // without a key (no WebCrypto) gets no stream: serve would refuse it.
  var source = null;
  // The wait before opening again after a refusal: doubled each time, back to 1 s once open.
  var backoff = 1000;
  function later() {
    window.setTimeout(listen, backoff);
    backoff = Math.min(backoff * 2, 30000);
  }
  function listen() {
    var url = new URL("/events" + (match ? "?task=" + match[1] : ""), window.location.href);
    if (!cuekit.sign) {
      return;
    }
    cuekit.sign("GET", url).then(function (signed) {
      url.searchParams.set("ck_nonce", signed.nonce);
      url.searchParams.set("ck_sig", signed.signature);
      start(url.pathname + url.search);
    }, function (why) {
      if (why && why.message === "session") {
        window.location.href = "/";
      } else if (why && why.message !== "no key") {
        later();
      }
    });
  }
  function start(url) {
    source = new EventSource(url);
    source.onmessage = heard;
    source.onopen = function () {
      backoff = 1000;
      newsCame();
    };
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED) {
        later();
      }
    };
  }
  // A reload waiting or on its way; `again`: news came meanwhile, so one more follows.
  var pending = null;
  var again = false;
  // What was last put in; an answer that brings nothing new leaves the page alone.
  var last = null;
  // Someone typing a message or pressing a button keeps the page still.
  function busy() {
    var active = document.activeElement;
    return document.body.hasAttribute("data-signing") ||
      !!(active && active !== document.body && active.closest && active.closest("form"));
  }
  function reload() {
    if (busy()) {
      pending = window.setTimeout(reload, 500);
      return;
    }
    fetch(live, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      if (response.status === 403) {
        // A session this run does not know: "/" signs in with the key, or pairs.
        window.location.href = "/";
        return null;
      }
      return response.ok ? response.text() : null;
    }).then(function (text) {
      if (last === null && typeof text === "string" && same(text)) {
        // The catch-up after the stream opened: nothing changed since the page was drawn.
        last = text;
      }
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
  // Whether a fragment says what the live part already shows (its text).
  function same(text) {
    var drawn = document.createElement("template");
    drawn.innerHTML = text;
    return drawn.content.textContent === target.textContent;
  }
  function done() {
    pending = null;
    if (again) {
      again = false;
      pending = window.setTimeout(reload, 50);
    }
  }
  function heard(event) {
    var news = {};
    try { news = JSON.parse(event.data); } catch (e) { return; }
    if (news.kind === "ended") {
      source.close();
      window.location.href = "/pair";
      return;
    }
    newsCame();
  }
  // News, or a stream just opened (what changed while it was being signed and opened is
  // caught up): the live part is fetched again.
  function newsCame() {
    if (pending === null) {
      pending = window.setTimeout(reload, 50);
    } else {
      again = true;
    }
  }
  listen();
})();

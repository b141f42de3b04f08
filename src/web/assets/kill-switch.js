// cuekit serve answers every service worker script request with this worker: cuekit's pages
// register none, so any worker on this origin was left by something else that answered on
// the port while serve was down. It takes over at once, empties every cache, unregisters
// itself and reloads the pages it held, which then come from the server.
"use strict";
self.addEventListener("install", function () {
  self.skipWaiting();
});
self.addEventListener("activate", function (event) {
  event.waitUntil(
    caches.keys()
      .then(function (keys) {
        return Promise.all(keys.map(function (key) { return caches.delete(key); }));
      })
      .then(function () { return self.registration.unregister(); })
      .then(function () { return self.clients.matchAll({ type: "window" }); })
      .then(function (pages) {
        pages.forEach(function (page) { page.navigate(page.url); });
      })
  );
});

// The first requests of a page opened on a session, sent as the page
// starts: index.html runs this classic script first, before its
// stylesheet and the app's modules are fetched and compiled, and the app
// takes each answer once (api.js). On a phone this saves a round trip
// before the first screen. Not a module: an async module ran only once
// the browser had the other modules in hand.
"use strict";
self.mekaEarly = (() => {
  const sent = new Map(); // path → its fetch

  // tailPath is where a session's history is read first: its last events,
  // enough for a screen of rows in most sessions (session.js reads more
  // when they are not).
  const tailPath = (base) => base + "/history?tail=300";

  const m = location.hash.match(/^#s\/([^&#]+)$/);
  if (m) {
    let base = "";
    try { base = "/v1/sessions/" + encodeURIComponent(decodeURIComponent(m[1])); } catch { /* not a session id */ }
    // The paths as session.js and app.js ask for them.
    for (const path of base ? [base, tailPath(base), "/v1/sessions?limit=200"] : []) {
      const res = fetch(path, { credentials: "same-origin" });
      res.catch(() => {}); // whoever takes it sees the failure
      sent.set(path, res);
    }
  }

  // taken returns the fetch sent early for a GET of path, once; else null.
  const taken = (path) => {
    const res = sent.get(path);
    sent.delete(path);
    return res || null;
  };
  return { tailPath, taken };
})();

// The first requests of a page opened on a session, sent while the rest
// of the app loads: index.html runs this module as soon as it arrives,
// and the app, importing the same module, takes each answer once (api).
// On a phone this saves a round trip before the first screen.

const sent = new Map(); // path → its fetch

// tailPath is where a session's history is read first: its last events,
// enough for a screen of rows in most sessions (session.js reads more
// when they are not).
export const tailPath = (base) => base + "/history?tail=300";

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
export function taken(path) {
  const res = sent.get(path);
  sent.delete(path);
  return res || null;
}

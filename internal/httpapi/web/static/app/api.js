// Requests to meka serve's API with the browser session's cookie.

// What early.js, run before the modules, sent as the page started.
const early = self.mekaEarly;
export const tailPath = early.tailPath;

let onSignedOut = () => {};

// whenSignedOut sets what a 401 does (the app shows its sign-in page).
export function whenSignedOut(fn) { onSignedOut = fn; }

// api calls the API; a 401 means signed out. Errors carry the problem's
// status and code.
export async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await ((method === "GET" && early.taken(path)) || fetch(path, init).then(early.read));
  if (res.status === 401) {
    onSignedOut("Your browser session has ended.");
    throw new Error("signed out");
  }
  const data = res.json();
  if (!res.ok) {
    const err = new Error((data && (data.detail || data.title)) || res.statusText);
    err.status = res.status;
    err.code = data && data.code;
    throw err;
  }
  return data;
}

export const enc = encodeURIComponent;

// api.js -- talking to the server: the API key (when the server has keys)
// and fetch with it as a bearer token.
//
// The key is kept in sessionStorage: it lasts while the tab is open and is
// never sent anywhere but this server's own endpoints (same origin).

const KEY_ITEM = 'strata.apiKey';

export class AuthError extends Error {
  constructor(message) { super(message); this.name = 'AuthError'; }
}

export function getKey() {
  try { return sessionStorage.getItem(KEY_ITEM) || ''; } catch { return ''; }
}

export function setKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_ITEM, key);
    else sessionStorage.removeItem(KEY_ITEM);
  } catch { /* storage off: the key lasts until the page reloads */ }
  memoryKey = key;
  generation++;
}

let memoryKey = getKey();
let generation = 0;

// +1 each time the key changes: an answer fetched with an older key is dropped.
export function keyGeneration() {
  return generation;
}

export function headers(extra = {}) {
  const h = { ...extra };
  const key = memoryKey || getKey();
  if (key) h.authorization = `Bearer ${key}`;
  return h;
}

// fetch(path) with the key; throws AuthError on 401, Error on other
// failures; resolves to the Response otherwise.
export async function apiFetch(path, init = {}) {
  const res = await fetch(path, { ...init, headers: headers(init.headers || {}) });
  if (res.status === 401) {
    await res.arrayBuffer().catch(() => {});
    throw new AuthError(memoryKey ? 'The server refused this key.' : 'This server needs an API key.');
  }
  if (!res.ok) {
    let msg = `${path}: HTTP ${res.status}`;
    try { msg = (await res.json()).error.message || msg; } catch { /* not JSON */ }
    throw new Error(msg);
  }
  return res;
}

export async function getJSON(path) {
  return (await apiFetch(path)).json();
}

export async function getText(path) {
  return (await apiFetch(path)).text();
}

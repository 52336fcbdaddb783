// server.mjs -- start the real `strata serve` for a test and talk to it.
//
// The binary comes from $STRATA_BIN (ctest passes $<TARGET_FILE:strata>).
// It is started on 127.0.0.1 port 0 with the simulated engine; the port is
// read back from its log line "listening on http://HOST:PORT". Each test
// file starts its own server, so counters on /metrics are its own.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const STRATA_BIN = process.env.STRATA_BIN;

export async function startServer(args = [], { waitReady = true, timeoutMs = 15000 } = {}) {
  if (!STRATA_BIN) throw new Error('STRATA_BIN is not set: point it at the built strata binary');
  const proc = spawn(STRATA_BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--backend', 'sim', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const onData = (d) => { log += d.toString(); };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  const exited = once(proc, 'exit');
  const deadline = Date.now() + timeoutMs;
  let url = null;
  while (!url) {
    const m = log.match(/listening on (http:\/\/[^\s"]+)/);
    if (m) { url = m[1]; break; }
    if (proc.exitCode !== null) throw new Error(`strata exited (${proc.exitCode}) before listening:\n${log}`);
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`strata did not start:\n${log}`); }
    await sleep(20);
  }
  const srv = {
    url, proc,
    log: () => log,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
      const [code, signal] = await exited;
      clearTimeout(t);
      if (signal === 'SIGKILL') throw new Error(`strata did not stop on SIGTERM:\n${log}`);
      // a clean shutdown exits 0; under ASan a leak or error at exit does not
      if (code !== 0) throw new Error(`strata exited ${code} (signal ${signal}) after SIGTERM:\n${log.slice(-4000)}`);
      return code;
    },
  };
  if (waitReady) await waitHealthy(srv, timeoutMs);
  return srv;
}

export async function waitHealthy(srv, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(`${srv.url}/health`);
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error('strata never became healthy');
    await sleep(25);
  }
}

export async function postJSON(srv, path, body, headers = {}) {
  const r = await fetch(`${srv.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, text, json };
}

export async function getJSON(srv, path, headers = {}) {
  const r = await fetch(`${srv.url}${path}`, { headers });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, headers: r.headers, text, json };
}

// Read an SSE response to the end; returns the raw text and the events
// ({ data } per "data:" event, in order).
export async function readSSE(res) {
  const text = await res.text();
  return { text, events: parseSSE(text) };
}

export function parseSSE(text) {
  const events = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    const lines = block.split('\n');
    const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    events.push({ block, data });
  }
  return events;
}

// The value of one sample on /metrics, e.g. metric(text, 'strata_requests_total',
// { band: 'normal', outcome: 'cancelled' }); undefined when absent.
export function metric(text, name, labels = {}) {
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = line.match(/^([^\s{]+)(\{([^}]*)\})?\s+(\S+)$/);
    if (!m || m[1] !== name) continue;
    const got = {};
    for (const kv of (m[3] || '').matchAll(/(\w+)="([^"]*)"/g)) got[kv[1]] = kv[2];
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return undefined;
}

// Sum of every sample of a family matching the given labels.
export function metricSum(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = line.match(/^([^\s{]+)(\{([^}]*)\})?\s+(\S+)$/);
    if (!m || m[1] !== name) continue;
    const got = {};
    for (const kv of (m[3] || '').matchAll(/(\w+)="([^"]*)"/g)) got[kv[1]] = kv[2];
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[4]);
  }
  return sum;
}

// headers: e.g. the API key, which /metrics needs when keys are set.
export async function metricsText(srv, headers = {}) {
  const r = await fetch(`${srv.url}/metrics`, { headers });
  return r.text();
}

// Poll until fn() returns truthy (or throw after timeoutMs).
export async function until(fn, timeoutMs = 5000, what = 'condition') {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export const chatBody = (extra = {}) => ({
  model: 'default',
  messages: [{ role: 'user', content: 'hello there general kenobi' }],
  ...extra,
});

// `strata make-model` (preset 'preset', 'seed') in a new temporary directory
// named from 'prefix', and the server on it (CPU, 1 thread, context 'ctx',
// alias 'preset', then 'extra' arguments). Resolves to { srv, dir }; the
// caller stops srv and removes dir.
export async function startPresetModel(prefix, preset, seed, ctx, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const model = join(dir, `${preset}.gguf`);
  const mk = spawnSync(STRATA_BIN, ['make-model', model, '--preset', preset, '--seed', String(seed)], { encoding: 'utf8' });
  assert.equal(mk.status, 0, `make-model: ${mk.stderr}`);
  const srv = await startServer(['--backend', 'cpu', '-m', model, '-a', preset, '--threads', '1', '-c', String(ctx), ...extra]);
  return { srv, dir };
}

// startPresetModel with the tiny preset (alias "tiny").
export function startTinyModel(prefix, seed, ctx, extra = []) {
  return startPresetModel(prefix, 'tiny', seed, ctx, extra);
}

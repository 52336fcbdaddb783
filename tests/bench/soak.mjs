#!/usr/bin/env node
// soak.mjs -- the soak benchmark (issue 25): many clients for minutes
// against the sim engine, with mixed priorities, streams and plain
// requests, slow readers, clients that never read, and clients that leave
// (before the first byte or mid-stream). It samples the server's RSS and
// open descriptors, counts every request's outcome, and at the end checks
// that every slot is free and nothing waits.
//
//   node tests/bench/soak.mjs [--bin build/src/strata] [--minutes 10] [--clients 200]
//
// It fails (exit 1) on a leak trend, not on speed: RSS still growing over
// the last two thirds of the run (after a warm-up third), descriptors left
// open once the load stops, a request lost (no answer and not left by its client: a reset,
// a 500, a stream cut without its end), or a slot or queue entry left when
// the load stops. Needs Node 20+ only (no npm modules).
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const BIN = opt('--bin', process.env.STRATA_BIN || 'build/src/strata');
const MINUTES = Number(opt('--minutes', '10'));
const CLIENTS = Number(opt('--clients', '200'));
const SAMPLE_MS = 2000;

function startServer() {
  return new Promise((resolve, reject) => {
    const proc = spawn(BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--backend', 'sim',
      '--batch', '--parallel', '8', '--max-queue', '64', '--sim-decode-tps', '200',
      '--sim-tokens', '64', '--stream-buffer', '64k', '--timeout', '10'], {
      stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const on = (d) => {
      log = (log + d.toString()).slice(-8000);
      const m = log.match(/listening on (http:\/\/[^\s"]+)/);
      if (m) resolve({ proc, url: m[1], log: () => log });
    };
    proc.stdout.on('data', on);
    proc.stderr.on('data', on);
    proc.on('exit', (code) => reject(new Error(`strata exited ${code}:\n${log.slice(-2000)}`)));
  });
}

const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;

const outcomes = {};
const count = (k) => { outcomes[k] = (outcomes[k] || 0) + 1; };

// One request of a random kind; resolves when it is settled.
async function oneRequest(url) {
  const r = Math.random();
  const kind = r < 0.35 ? 'plain' : r < 0.65 ? 'stream' : r < 0.75 ? 'slow' : r < 0.82 ? 'noread'
    : r < 0.91 ? 'leave-early' : 'leave-mid';
  const stream = kind !== 'plain';
  const priority = [-5, 0, 0, 5, 10][Math.floor(Math.random() * 5)];
  const ac = new AbortController();
  const body = JSON.stringify({ model: 'default', stream, max_tokens: 8 + Math.floor(Math.random() * 48),
    messages: [{ role: 'user', content: `soak ${Math.random()}` }] });
  let res;
  try {
    if (kind === 'leave-early') setTimeout(() => ac.abort(), Math.random() * 50);
    res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', signal: ac.signal, body,
      headers: { 'content-type': 'application/json', 'x-llamaswap-priority': String(priority) } });
  } catch (e) {
    count(ac.signal.aborted ? 'left' : `lost:${e.cause?.code || e.message}`);
    return;
  }
  if (res.status !== 200) {
    await res.arrayBuffer().catch(() => {});
    count(res.status === 429 || res.status === 503 ? `refused:${res.status}` : `lost:http${res.status}`);
    return;
  }
  try {
    if (kind === 'noread') {   // holds the connection without reading, then leaves
      await sleep(3000 + Math.random() * 3000);
      ac.abort();
      count('left');
      return;
    }
    const reader = res.body.getReader();
    let text = '';
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
      if (kind === 'slow') await sleep(50);
      if (kind === 'leave-mid' && text.length > 400) { ac.abort(); count('left'); return; }
    }
    if (!stream) count(JSON.parse(text).choices ? 'completed' : 'lost:body');
    else count(/data: \[DONE\]\n\n$/.test(text) ? (/"error"/.test(text) ? 'cut' : 'completed') : 'lost:stream');
  } catch (e) {
    count(ac.signal.aborted ? 'left' : `lost:${e.cause?.code || e.message}`);
  }
}

// Least-squares slope of ys over xs (per x unit).
function slope(xs, ys) {
  const n = xs.length, mx = xs.reduce((a, b) => a + b, 0) / n, my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0, den = 0;
  for (let i = 0; i < n; i++) { num += (xs[i] - mx) * (ys[i] - my); den += (xs[i] - mx) ** 2; }
  return den ? num / den : 0;
}

const srv = await startServer();
const pid = srv.proc.pid;
console.log(`soak: ${CLIENTS} clients for ${MINUTES} min against ${srv.url} (pid ${pid})`);
await sleep(500);
const base = { rss: rssKiB(pid), fds: fds(pid) };
const samples = [];
const t0 = Date.now();
const end = t0 + MINUTES * 60000;
const sampler = setInterval(() => {
  samples.push({ t: (Date.now() - t0) / 1000, rss: rssKiB(pid), fds: fds(pid) });
}, SAMPLE_MS);
const clients = Array.from({ length: CLIENTS }, async () => {
  while (Date.now() < end) await oneRequest(srv.url);
});
await Promise.all(clients);
clearInterval(sampler);

// The load is over: every slot free, nothing queued.
let idle = false;
for (let i = 0; i < 100 && !idle; i++) {
  const s = await (await fetch(`${srv.url}/slots`)).json();
  const m = await (await fetch(`${srv.url}/metrics`)).text();
  const depth = [...m.matchAll(/^llamaswap_scheduler_queue_depth\{[^}]*\} (\d+)/gm)]
    .reduce((a, x) => a + Number(x[1]), 0);
  idle = s.every((x) => x.state === 'idle') && depth === 0;
  if (!idle) await sleep(100);
}
await sleep(1000);
const after = { rss: rssKiB(pid), fds: fds(pid) };
srv.proc.kill('SIGTERM');

const steady = samples.slice(Math.floor(samples.length / 3));
const ts = steady.map((s) => s.t);
const rssSlope = slope(ts, steady.map((s) => s.rss)) * 60;   // KiB per minute
const fdSlope = slope(ts, steady.map((s) => s.fds)) * 60;
const total = Object.values(outcomes).reduce((a, b) => a + b, 0);
const lost = Object.entries(outcomes).filter(([k]) => k.startsWith('lost')).reduce((a, [, v]) => a + v, 0);
const first = steady[0] || { rss: 0, fds: 0 };
console.log(`requests: ${total}`, JSON.stringify(outcomes));
console.log(`RSS: start of steady state ${first.rss} KiB, max ${Math.max(...samples.map((s) => s.rss))} KiB, ` +
  `after ${after.rss} KiB; trend ${rssSlope.toFixed(0)} KiB/min`);
console.log(`fds: start of steady state ${first.fds}, max ${Math.max(...samples.map((s) => s.fds))}, ` +
  `after ${after.fds}; trend ${fdSlope.toFixed(2)}/min`);
const fails = [];
// a leak keeps growing: the last third's median RSS over the middle third's
// by more than 10% + 2 MiB (allocator noise and caches settle in the first)
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] || 0; };
const third = Math.floor(samples.length / 3);
const midRss = median(samples.slice(third, 2 * third).map((s) => s.rss));
const lastRss = median(samples.slice(2 * third).map((s) => s.rss));
console.log(`RSS median: middle third ${midRss} KiB, last third ${lastRss} KiB`);
if (lastRss > midRss * 1.1 + 2048) fails.push('RSS keeps growing');
if (after.fds > base.fds + 8) fails.push(`descriptors left open (${base.fds} before the load)`);
if (lost) fails.push(`${lost} request(s) lost`);
if (!idle) fails.push('slots or queue not empty after the load');
console.log(fails.length ? `soak: FAIL: ${fails.join('; ')}` : 'soak: PASS');
process.exit(fails.length ? 1 : 0);

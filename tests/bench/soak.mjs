#!/usr/bin/env node
// soak.mjs -- the soak benchmark (issue 25): many clients for minutes
// against `strata serve --batch` (the built-in tiny model on the CPU engine by
// default, or the sim engine), each request of a random kind: plain and
// streamed (chat and text completions), slow readers, clients that never
// read, clients that leave before the first byte or mid-stream, bad bodies,
// prompts too long for the context and bodies over --body-limit, with
// priorities from -5 to 10. Every request carries an X-Request-Id, so each
// one is matched with the server's own log line for it.
//
//   node tests/bench/soak.mjs [--bin build/src/strata] [--minutes 10 | --seconds S]
//        [--clients 200] [--backend cpu|sim] [--parallel 4] [--no-rss] [-- serve flags...]
//
// It samples every 2 s the server's RSS and descriptors (/proc/PID) and its
// /metrics (busy slots, queue depth, requests in and out), and fails (exit 1)
// on a leak or a lost request, never on speed:
//  - a request lost: a kind answered with the wrong status or error shape, a
//    reset, a stream cut without its end, a body that does not parse;
//  - a request whose client-side outcome and server log line disagree (a
//    completed reply the server did not log as completed, a 400 not logged as
//    refused with 400, a 429 not logged as rejected), a log line `failed`, a
//    log line for an id no client sent, a dispatched request never logged;
//  - once the load stops: a busy slot, a queued or running request, submitted
//    != settled in /metrics, a 500, /metrics' completed or cancelled counts not
//    those of the log, more than 8 descriptors left open;
//  - RSS growing after warm-up: the first 20% of the samples are warm-up; the
//    median of the rest's second half above the median of its first half by
//    more than 5% + 1 MiB (the check --no-rss leaves out: it needs minutes);
//  - strata not exiting 0 on SIGTERM (a sanitizer build: a leak found at exit).
// Needs Node 20+ only (no npm modules).
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import { benchArgs, rssKiB, spawnServer } from './lib/serve.mjs';

const { args, extra, opt, bin: BIN } = benchArgs();
const SECONDS = Number(opt('--seconds', 60 * Number(opt('--minutes', '10'))));
const CLIENTS = Number(opt('--clients', '200'));
const BACKEND = opt('--backend', 'cpu');
const PARALLEL = opt('--parallel', '4');
const RSS_CHECK = !args.includes('--no-rss');
const SAMPLE_MS = 2000;
const IDLE_S = RSS_CHECK ? 12 : 0;   // RSS read again this long after the load settled: src/server/idle.c
                                    // trims 1 s after work, then at most every 10 s
const BODY_LIMIT = 1 << 20;   // --body-limit 1m

// --- the server and its log ----------------------------------------------

const logged = new Map();     // request id -> { outcome, status }
const dispatched = new Set(); // request ids the scheduler gave a slot
const logProblems = [];

function onLogLine(line) {
  if (line[0] !== '{') return;
  let o;
  try { o = JSON.parse(line); } catch { return; }
  if (o.module === 'http' && o.msg === 'request') {
    if (logged.has(o.id)) logProblems.push(`${o.id} logged twice`);
    logged.set(o.id, { outcome: o.outcome, status: o.status });
  } else if (o.module === 'sched' && o.msg === 'dispatch') {
    dispatched.add(o.request_id);
  }
}

function startServer() {
  const sargs = ['--batch', '--parallel', PARALLEL, '--max-queue', '32', '--stream-buffer', '64k',
    '--timeout', '10', '--body-limit', '1m', '--log-format', 'json'];
  if (BACKEND === 'sim')
    sargs.push('--backend', 'sim', '--sim-decode-tps', '200', '--sim-tokens', '64');
  else if (BACKEND !== 'cpu')
    sargs.push('--backend', BACKEND);
  sargs.push(...extra);
  return spawnServer(BIN, sargs, {
    onLine: onLogLine,
    onExit: (code, sig, tail) => {
      if (stopping) return;
      console.error(`soak: strata died (${code ?? sig}):\n${tail.slice(-2000)}`);
      process.exit(1);
    },
  });
}
let stopping = false;

const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;

function metricSum(text, name, where = '') {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm')))
    if ((m[1] || '').includes(where)) sum += Number(m[2]);
  return sum;
}

async function scrape(url) {
  const t = await (await fetch(`${url}/metrics`)).text();
  return {
    busy: metricSum(t, 'strata_slots') - metricSum(t, 'strata_slots', 'state="idle"'),
    queue: metricSum(t, 'llamaswap_scheduler_queue_depth'),
    running: metricSum(t, 'strata_requests_running'),
    submitted: metricSum(t, 'strata_requests_submitted_total'),
    settled: metricSum(t, 'strata_requests_total'),
    completed: metricSum(t, 'strata_requests_total', 'outcome="completed"'),
    cancelled: metricSum(t, 'strata_requests_total', 'outcome="cancelled"'),
    failed: metricSum(t, 'strata_requests_total', 'outcome="failed"'),
    http500: metricSum(t, 'strata_http_responses_total', 'code="500"'),
  };
}

// --- the clients -----------------------------------------------------------

const sent = new Map();       // request id -> the client's outcome
const outcomes = {};
let nextId = 0;
const settle = (id, k) => {
  sent.set(id, k);
  outcomes[k] = (outcomes[k] || 0) + 1;
  return k;
};
const pick = (a) => a[Math.floor(Math.random() * a.length)];
const KINDS = [['plain', 20], ['stream', 20], ['slow', 10], ['noread', 6], ['leave-early', 8],
  ['leave-mid', 8], ['bad', 12], ['long', 8], ['huge', 2]];
const KIND_TOTAL = KINDS.reduce((a, [, w]) => a + w, 0);
function kindOf() {
  let r = Math.random() * KIND_TOTAL;
  for (const [k, w] of KINDS) if ((r -= w) < 0) return k;
  return 'plain';
}
const words = (n) => Array.from({ length: n }, (_, i) => `w${(i * 7919) % 1000}`).join(' ');
const BAD = [   // [body, content type]: each a 400 or 415 with an OpenAI-shaped error
  ['{"model":"default","messages":[{"role":"user"', 'application/json'],
  ['{"model":"default","messages":"x"}', 'application/json'],
  ['{"model":"default"}', 'application/json'],
  ['{"model":"default","messages":[{"role":"wizard","content":"x"}]}', 'application/json'],
  ['{"model":"default","messages":[{"role":"user","content":"x"}],"max_tokens":"x"}', 'application/json'],
  ['{"model":"default","messages":[{"role":"user","content":"x"}],"n":0}', 'application/json'],
  ['[1,2]', 'application/json'],
  ['{"model":"default","messages":[{"role":"user","content":"x"}]}', 'text/plain'],
];

function bodyOf(kind, id) {
  const chat = Math.random() < 0.75;
  const b = { model: 'default', max_tokens: 8 + Math.floor(Math.random() * 56) };
  const text = kind === 'long' ? words(6000 + Math.floor(Math.random() * 30000))
    : kind === 'huge' ? 'x'.repeat(BODY_LIMIT + Math.floor(Math.random() * BODY_LIMIT))
    : `soak ${id}: ${words(Math.floor(Math.random() * 200))}`;
  if (chat) b.messages = [{ role: 'user', content: text }];
  else b.prompt = text;
  if (!['plain', 'long', 'huge'].includes(kind)) b.stream = true;
  if (kind === 'noread') { b.max_tokens = 2000; b.ignore_eos = true; }
  if (Math.random() < 0.5) b.priority = pick([-5, 0, 5, 10]);
  return { path: chat ? '/v1/chat/completions' : '/v1/completions', body: JSON.stringify(b) };
}

// A stream's text: every event JSON, [DONE] last, a finish_reason before it;
// or cut by the server (--stream-buffer): its error event last, no [DONE].
function streamOutcome(text) {
  if (/"code":"stream_buffer_full"[^\n]*\n\n$/.test(text)) return 'cut';
  if (!/data: \[DONE\]\n\n$/.test(text)) return 'lost:stream-without-end';
  let finished = false;
  for (const ev of text.split('\n\n')) {
    if (!ev || ev.startsWith(':') || ev === 'data: [DONE]') continue;
    if (!ev.startsWith('data: ')) return 'lost:stream-bad-event';
    let o;
    try { o = JSON.parse(ev.slice(6)); } catch { return 'lost:stream-bad-json'; }
    if (o.error) return o.error.code === 'stream_buffer_full' ? 'cut' : `lost:stream-error:${o.error.code}`;
    if (o.choices?.some((c) => c.finish_reason)) finished = true;
  }
  return finished ? 'completed' : 'lost:stream-no-finish';
}

// A client that sends its request and then never reads; it leaves after 3-6 s.
function noRead(url, id, { path, body }) {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect(Number(u.port), u.hostname, () => {
      s.write(`POST ${path} HTTP/1.1\r\nHost: ${u.host}\r\ncontent-type: application/json\r\n` +
        `x-request-id: ${id}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      s.pause();
      setTimeout(() => { s.destroy(); resolve(settle(id, 'left')); }, 3000 + Math.random() * 3000);
    });
    s.on('error', (e) => resolve(settle(id, `lost:${e.code || e.message}`)));
  });
}

// One request of a random kind; resolves with its outcome once settled.
async function oneRequest(url) {
  const kind = kindOf();
  const id = `soak-${++nextId}`;
  const req = bodyOf(kind, id);
  if (kind === 'noread') return noRead(url, id, req);
  let ctype = 'application/json';
  if (kind === 'bad') [req.body, ctype] = pick(BAD);
  const headers = { 'content-type': ctype, 'x-request-id': id };
  if (Math.random() < 0.3) headers['x-llamaswap-priority'] = pick(['interactive', 'batch', '3', '-2']);
  const ac = new AbortController();
  if (kind === 'leave-early') setTimeout(() => ac.abort(), Math.random() * 200);
  let res;
  try {
    res = await fetch(`${url}${req.path}`, { method: 'POST', signal: ac.signal, body: req.body, headers });
  } catch (e) {
    // an over-limit body: the server may answer 413 and close while it is still being sent
    if (kind === 'huge' && ['EPIPE', 'ECONNRESET'].includes(e.cause?.code)) return settle(id, 'too-large:closed');
    return settle(id, ac.signal.aborted ? 'left' : `lost:${e.cause?.code || e.message}`);
  }
  try {
    if (res.status !== 200) {
      const text = await res.text();
      let err = null;
      try { err = JSON.parse(text).error; } catch { /* checked below */ }
      if (!err || typeof err.message !== 'string' || typeof err.type !== 'string')
        return settle(id, `lost:${kind}-${res.status}-not-openai-shaped`);
      if (res.status === 429 || res.status === 503) {
        await sleep(1000 * Number(res.headers.get('retry-after') || 1));   // as a client should
        return settle(id, `refused:${res.status}`);
      }
      if (kind === 'bad' && (res.status === 400 || res.status === 415)) return settle(id, `bad:${res.status}`);
      if (kind === 'long' && res.status === 400 && err.code === 'context_length_exceeded')
        return settle(id, 'too-long:400');
      if (kind === 'huge' && res.status === 413) return settle(id, 'too-large:413');
      return settle(id, `lost:${kind}-got-${res.status}`);
    }
    if (['bad', 'long', 'huge'].includes(kind)) return settle(id, `lost:${kind}-got-200`);
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
      if (kind === 'slow') await sleep(50);
      if (kind === 'leave-mid' && text.length > 300 + Math.random() * 1000) {
        ac.abort();
        return settle(id, 'left');
      }
    }
    if (req.body.includes('"stream":true')) return settle(id, streamOutcome(text));
    const o = JSON.parse(text);
    return settle(id, o.choices?.[0]?.finish_reason ? 'completed' : 'lost:body');
  } catch (e) {
    return settle(id, ac.signal.aborted ? 'left' : `lost:${e.cause?.code || e.message}`);
  }
}

// --- accounting --------------------------------------------------------------

// What the server's log line must say for each client-side outcome
// (undefined: no line; 413 and 415 are answered before a handler logs).
const EXPECT = {
  completed: (l) => l?.outcome === 'completed',
  'refused:429': (l) => l?.outcome === 'rejected',
  'refused:503': (l) => !l || l.outcome === 'rejected' || l.outcome === 'refused',
  'bad:400': (l) => l?.outcome === 'refused' && l.status === 400,
  'bad:415': (l) => !l || (l.outcome === 'refused' && l.status === 415),
  'too-long:400': (l) => l?.outcome === 'refused' && l.status === 400,
  'too-large:413': (l) => !l || (l.outcome === 'refused' && l.status === 413),
  'too-large:closed': (l) => !l || (l.outcome === 'refused' && l.status === 413),
  cut: (l) => l?.outcome === 'cancelled',
  left: (l) => !l || l.outcome !== 'failed',
};

function account(fails) {
  const mismatch = {};
  for (const [id, k] of sent) {
    const l = logged.get(id);
    const ok = EXPECT[k];
    if (ok && !ok(l)) {
      const key = `${k} logged ${l ? `${l.outcome}${l.status ? ` ${l.status}` : ''}` : 'nothing'}`;
      if (!mismatch[key]) mismatch[key] = { n: 0, ids: [] };
      if (mismatch[key].n++ < 3) mismatch[key].ids.push(id);
    }
  }
  for (const [k, v] of Object.entries(mismatch)) fails.push(`${v.n} x ${k} (${v.ids.join(' ')})`);
  const phantom = [...logged.keys()].filter((id) => !sent.has(id));
  if (phantom.length) fails.push(`${phantom.length} log line(s) for ids no client sent (${phantom.slice(0, 3)})`);
  const unended = [...dispatched].filter((id) => !logged.has(id));
  if (unended.length) fails.push(`${unended.length} dispatched request(s) never logged (${unended.slice(0, 3)})`);
  const failed = [...logged.values()].filter((l) => l.outcome === 'failed').length;
  if (failed) fails.push(`${failed} request(s) logged failed`);
  fails.push(...logProblems.slice(0, 5));
}

// --- the run -----------------------------------------------------------------

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] || 0; };

const srv = await startServer();
const pid = srv.proc.pid;
console.log(`soak: ${CLIENTS} clients for ${SECONDS} s against ${BIN} ${srv.args.join(' ')} (pid ${pid}, ${srv.url})`);
await sleep(500);
const base = { rss: rssKiB(pid), fds: fds(pid) };
console.log(`before the load: RSS ${base.rss} KiB, ${base.fds} descriptors`);
const samples = [];
const t0 = Date.now();
const end = t0 + SECONDS * 1000;
const printEvery = Math.max(1, Math.round(Math.min(30, SECONDS / 10) * 1000 / SAMPLE_MS));
let sampling = Promise.resolve();
const sampler = setInterval(() => {
  sampling = (async () => {
    const m = await scrape(srv.url).catch(() => null);
    const s = { t: (Date.now() - t0) / 1000, rss: rssKiB(pid), fds: fds(pid), ...m };
    samples.push(s);
    if (samples.length % printEvery === 0)
      console.log(`t=${s.t.toFixed(0)}s RSS ${s.rss} KiB fds ${s.fds} busy ${s.busy} queue ${s.queue} ` +
        `in ${s.submitted} out ${s.settled}; clients sent ${nextId}, settled ${sent.size}`);
  })();
}, SAMPLE_MS);
await Promise.all(Array.from({ length: CLIENTS }, async () => {
  while (Date.now() < end) await oneRequest(srv.url);
}));
clearInterval(sampler);
await sampling;
const endOfLoad = { rss: rssKiB(pid), fds: fds(pid) };

// The load is over: every slot free, nothing queued or running, all settled,
// the connections closed (waited for up to 30 s, so a slow machine passes
// too: the server closes an idle keep-alive connection after --timeout 10).
let m = null;
const loadEnd = Date.now();
for (let i = 0; i < 300; i++) {
  m = await scrape(srv.url);
  if (!m.busy && !m.queue && !m.running && m.submitted === m.settled && fds(pid) <= base.fds + 8)
    break;
  await sleep(100);
}
const settleS = (Date.now() - loadEnd) / 1000;
await sleep(1000);            // the last log lines
m = await scrape(srv.url);
const after = { rss: rssKiB(pid), fds: fds(pid) };
await sleep(IDLE_S * 1000);   // the server gives memory back once idle (docs/BENCHMARKS.md "Soak")
const idle = { rss: rssKiB(pid) };
stopping = true;
srv.proc.kill('SIGTERM');
// a clean stop: exit 0 (a sanitizer build exits non-zero on a leak it found at exit)
const exit = await new Promise((r) => srv.proc.once('exit', (code, sig) => r(code ?? sig)));

const fails = [];
const total = sent.size;
const lost = Object.entries(outcomes).filter(([k]) => k.startsWith('lost')).reduce((a, [, v]) => a + v, 0);
console.log(`requests: ${total} sent in ${SECONDS} s`, JSON.stringify(outcomes));
const logCount = (o) => [...logged.values()].filter((l) => l.outcome === o).length;
console.log(`server: ${logged.size} log lines, ${dispatched.size} dispatched; /metrics after: ` +
  JSON.stringify(m));
if (lost) fails.push(`${lost} request(s) lost`);
if (nextId !== total) fails.push(`${nextId - total} request(s) never settled by the client`);
account(fails);
if (m.busy || m.queue || m.running) fails.push(`after the load: ${m.busy} busy slot(s), ${m.queue} queued, ${m.running} running`);
if (m.submitted !== m.settled) fails.push(`/metrics: ${m.submitted} submitted, ${m.settled} settled`);
if (m.failed || m.http500) fails.push(`/metrics: ${m.failed} failed, ${m.http500} HTTP 500`);
if (m.completed !== logCount('completed') || m.cancelled !== logCount('cancelled'))
  fails.push(`/metrics completed ${m.completed}, cancelled ${m.cancelled}; the log ${logCount('completed')}, ${logCount('cancelled')}`);
if (exit !== 0) fails.push(`strata exited ${exit} after SIGTERM:\n${srv.tail().slice(-3000)}`);
if (after.fds > base.fds + 8) fails.push(`descriptors left open: ${after.fds} (${base.fds} before the load)`);

const warm = Math.floor(samples.length / 5);
const rest = samples.slice(warm);
const half = Math.floor(rest.length / 2);
const rssA = median(rest.slice(0, half).map((s) => s.rss));
const rssB = median(rest.slice(half).map((s) => s.rss));
console.log(`RSS: before ${base.rss} KiB; after warm-up (${samples[warm]?.t.toFixed(0)} s) ${samples[warm]?.rss} KiB; ` +
  `median ${rssA} KiB then ${rssB} KiB (${(100 * (rssB - rssA) / (rssA || 1)).toFixed(1)}%); ` +
  `max ${Math.max(...samples.map((s) => s.rss))} KiB; end of load ${endOfLoad.rss} KiB; idle after ${after.rss} KiB; ` +
  `${IDLE_S} s later ${idle.rss} KiB`);
console.log(`descriptors: before ${base.fds}, max ${Math.max(...samples.map((s) => s.fds))}, ` +
  `end of load ${endOfLoad.fds}, after ${after.fds} (idle ${settleS.toFixed(1)} s after the load)`);
if (RSS_CHECK && rssB > rssA * 1.05 + 1024) fails.push(`RSS grows after warm-up: ${rssA} -> ${rssB} KiB`);
console.log(fails.length ? `soak: FAIL: ${fails.join('; ')}` : 'soak: PASS');
process.exit(fails.length ? 1 : 0);

#!/usr/bin/env node
// mem_spike.mjs -- memory after a load spike (issue 25; docs/BENCHMARKS.md
// "Soak"): starts `strata serve --batch --parallel 4` on the built-in tiny
// model, sends rounds of 200 requests at once (chat, streamed chat, a
// 30,000-word prompt the context refuses, a 900 KiB body, a 250 KB
// /tokenize), then reads the server's RSS at the end of the spike and 1, 4
// and 12 s later (src/server/idle.c gives memory back 1 s after work, then
// at most every 10 s). Prints one JSON line of KiB figures and the server's
// trim log lines. Never fails on the figures: a measurement, not a test.
//
//   node tests/bench/mem_spike.mjs [--bin build/src/strata] [--rounds 5] [-- serve flags...]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const dash = process.argv.indexOf('--');
const args = process.argv.slice(2, dash >= 0 ? dash : undefined);
const extra = dash >= 0 ? process.argv.slice(dash + 1) : [];
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const BIN = opt('--bin', process.env.STRATA_BIN || 'build/src/strata');
const ROUNDS = Number(opt('--rounds', '5'));

const proc = spawn(BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--batch', '--parallel', '4',
  '--max-queue', '64', '--body-limit', '1m', '--log-level', 'debug', ...extra],
{ stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
proc.stdout.on('data', (d) => { log += d; });
proc.stderr.on('data', (d) => { log += d; });
let url;
while (!(url = /listening on (http:\/\/\S+)/.exec(log)?.[1])) {
  if (proc.exitCode !== null) throw new Error(`strata exited:\n${log}`);
  await sleep(50);
}
while ((await fetch(`${url}/health`).catch(() => ({ status: 0 }))).status !== 200) await sleep(50);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))[1]);

const post = (path, body) => fetch(url + path, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body,
}).then((r) => r.arrayBuffer()).catch(() => null);
const kinds = [
  () => post('/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'hi '.repeat(50) }], max_tokens: 16 })),
  () => post('/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 32, stream: true })),
  () => post('/v1/completions', JSON.stringify({ prompt: 'word '.repeat(30000), max_tokens: 4 })),
  () => post('/v1/completions', `{"prompt": "${'x'.repeat(900 * 1024)}", "max_tokens": 1}`),
  () => post('/tokenize', JSON.stringify({ content: 'word '.repeat(50000) })),
];

const start = rss();
let peak = start;
for (let r = 0; r < ROUNDS; r++) {
  await Promise.all(Array.from({ length: 200 }, (_, i) => kinds[i % kinds.length]()));
  peak = Math.max(peak, rss());
}
const end = rss();
await sleep(1000);
const idle1 = rss();
await sleep(3000);
const idle4 = rss();
await sleep(8000);
const idle12 = rss();
console.log(JSON.stringify({ start, peak, end, idle1, idle4, idle12 }));
for (const l of log.match(/idle: memory given back[^\n]*/g) || []) console.log(l);
proc.kill('SIGTERM');

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
import { setTimeout as sleep } from 'node:timers/promises';

import { benchArgs, rssKiB, spawnServer } from './lib/serve.mjs';

const { extra, opt, bin: BIN } = benchArgs();
const ROUNDS = Number(opt('--rounds', '5'));

const trims = [];   // the server's log lines of idle.c's trims
const { proc, url } = await spawnServer(BIN, ['--batch', '--parallel', '4', '--max-queue', '64',
  '--body-limit', '1m', '--log-level', 'debug', ...extra], {
  onLine: (l) => {
    const m = /idle: memory given back.*/.exec(l);
    if (m) trims.push(m[0]);
  },
});
while ((await fetch(`${url}/health`).catch(() => ({ status: 0 }))).status !== 200) await sleep(50);
const rss = () => rssKiB(proc.pid);

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
for (const l of trims) console.log(l);
proc.kill('SIGTERM');

// concurrency.test.mjs -- issue 3's load test: 2,000 streamed requests of
// mixed priority from 200 concurrent clients, 10% of them disconnecting
// mid-stream. Every request either completes (finish_reason, then
// [DONE]) or is cancelled by its own client; no slot is leaked; and the
// counters on /metrics add up:
//   dispatched = completed + cancelled + failed + running   (per band and in all)
// A fast sim keeps it to a few seconds.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, getJSON, metric, metricSum, metricsText, until, parseSSE } from './lib/server.mjs';

const TOTAL = 2000;
const CLIENTS = 200;
const BANDS = ['interactive', 'normal', 'batch'];
const PRIORITIES = [
  { body: { priority: 100 } }, { headers: { 'x-llamaswap-priority': 'interactive' } },
  { body: {} }, { body: { priority: 3 } }, { headers: { 'x-llamaswap-priority': '-7' } },
  { body: { priority: -100 } }, { headers: { 'x-llamaswap-priority': 'batch' } },
];

let srv;
before(async () => {
  srv = await startServer(['--batch', '--parallel', '16', '--gpus', '0,1', '--sim-decode-tps', '400',
    '--sim-prompt-tps', '1000000', '--sim-tokens', '6', '--http-threads', '4']);
});
after(async () => { await srv.stop(); });

// One request; i % 10 == 9 disconnects after its first content token.
async function one(i) {
  const leave = i % 10 === 9;
  const p = PRIORITIES[i % PRIORITIES.length];
  const ctl = new AbortController();
  const body = { model: 'default', messages: [{ role: 'user', content: `request ${i} says hi` }], stream: true, ...(p.body || {}) };
  if (leave) Object.assign(body, { ignore_eos: true, max_tokens: 100000 });   // surely still running when it leaves
  const res = await fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', signal: ctl.signal,
    headers: { 'content-type': 'application/json', 'x-request-id': `load-${i}`, ...(p.headers || {}) },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) return { i, status: res.status, text: await res.text() };
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    let chunk;
    try { chunk = await reader.read(); } catch (e) { return { i, status: 'read-error', text: String(e) }; }
    if (chunk.done) break;
    text += dec.decode(chunk.value, { stream: true });
    if (leave && text.includes('"content":"tok1"')) {
      ctl.abort();
      return { i, status: 'left' };
    }
  }
  return { i, status: 200, text };
}

test(`${TOTAL} requests from ${CLIENTS} clients, 10% leaving mid-stream`, { timeout: 60000 }, async () => {
  const t0 = Date.now();
  const results = new Array(TOTAL);
  let next = 0;
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (next < TOTAL) {
      const i = next++;
      results[i] = await one(i);
    }
  }));
  const wall = Date.now() - t0;

  let completed = 0, left = 0;
  for (const r of results) {
    if (r.status === 'left') { left++; continue; }
    assert.equal(r.status, 200, `request ${r.i}: ${r.status} ${r.text}`);
    const ev = parseSSE(r.text);
    assert.equal(ev.at(-1).data, '[DONE]', `request ${r.i} ends with [DONE]`);
    const chunks = ev.slice(0, -1).map((e) => JSON.parse(e.data));
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop', `request ${r.i} finished`);
    assert.equal(chunks.map((c) => c.choices[0].delta.content ?? '').join(''), 'tok1 tok2 tok3 tok4 tok5 tok6');
    completed++;
  }
  assert.equal(left, TOTAL / 10);
  assert.equal(completed, TOTAL - TOTAL / 10);

  // no slot leaked: every slot idle again, nothing running or waiting
  await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'), 10000, 'every slot idle');
  const t = await until(async () => {
    const m = await metricsText(srv);
    return metricSum(m, 'strata_requests_total', { outcome: 'cancelled' }) === left ? m : null;
  }, 10000, 'every cancel counted');
  assert.equal((await getJSON(srv, '/slots')).json.length, 32);
  assert.equal(metric(t, 'vllm:num_requests_running'), 0);
  assert.equal(metric(t, 'vllm:num_requests_waiting'), 0);

  let dispatched = 0;
  for (const band of BANDS) {
    const d = metric(t, 'llamaswap_scheduler_dispatched_total', { band });
    const out = (o) => metric(t, 'strata_requests_total', { band, outcome: o });
    const undispatched = metricSum(t, 'strata_requests_undispatched_total', { band });
    const running = metric(t, 'strata_requests_running', { band });
    assert.equal(d, out('completed') + out('cancelled') + out('failed') + running - undispatched, `band ${band} adds up`);
    assert.ok(d > 0, `band ${band} saw traffic`);
    dispatched += d;
  }
  assert.equal(dispatched, TOTAL);
  assert.equal(metricSum(t, 'strata_requests_total', { outcome: 'completed' }), completed);
  assert.equal(metricSum(t, 'strata_requests_total', { outcome: 'cancelled' }), left);
  assert.equal(metricSum(t, 'strata_requests_total', { outcome: 'failed' }), 0);
  assert.equal(metricSum(t, 'strata_requests_total', { outcome: 'rejected' }), 0);
  assert.equal(metricSum(t, 'strata_requests_undispatched_total'), 0, 'every client left mid-stream, after dispatch');
  console.log(`# ${TOTAL} requests in ${wall} ms`);
});

// disconnect.test.mjs -- a client that leaves cancels its request: mid
// stream (the slot comes back and /metrics counts it cancelled), while
// waiting in the queue (it leaves the queue at once), and without
// streaming. Other requests are not disturbed. A connection reset (TCP
// RST: what Envoy does to the upstream when a router's endpoint picker
// evicts or sheds a request; docs/SCALE-OUT.md) frees the slot, or the
// queue place, the same way.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, getJSON, postJSON, metric, metricsText, until, chatBody } from './lib/server.mjs';

let srv;
before(async () => { srv = await startServer(['--batch', '--parallel', '2', '--sim-decode-tps', '20', '--sim-tokens', '100000']); });
after(async () => { await srv.stop(); });

const allIdle = async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle');

async function openStream(extra = {}, headers = {}) {
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(chatBody({ stream: true, ...extra })),
  });
  return { ctl, res };
}

test('abort mid-stream: the slot is idle again and the request counts as cancelled', async () => {
  const { ctl, res } = await openStream();
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  let got = '';
  while (!got.includes(' tok2')) {          // a few tokens in: truly mid-stream
    const { value } = await reader.read();
    got += new TextDecoder().decode(value);
  }
  const busy = (await getJSON(srv, '/slots')).json.filter((s) => s.state !== 'idle');
  assert.equal(busy.length, 1);
  assert.equal(busy[0].state, 'decoding');
  ctl.abort();
  await until(allIdle, 5000, 'the slot to be idle');
  const m = await until(async () => {
    const t = await metricsText(srv);
    return metric(t, 'strata_requests_total', { band: 'normal', outcome: 'cancelled' }) === 1 ? t : null;
  }, 5000, 'the cancelled counter');
  assert.equal(metric(m, 'vllm:num_requests_running'), 0);
  assert.equal(metric(m, 'strata_slots', { state: 'idle' }), 2);
});

test('abort while queued: the request leaves the queue at once', async () => {
  const a = await openStream({}, { 'x-request-id': 'hold-a' });
  const b = await openStream({}, { 'x-request-id': 'hold-b' });
  const before = metric(await metricsText(srv), 'strata_requests_total', { band: 'normal', outcome: 'cancelled' });
  // both slots busy: this one waits (its headers only come with its first token)
  const ctl = new AbortController();
  const waiting = fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ stream: true })),
  }).catch((e) => e);
  await until(async () => metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'normal' }) === 1, 5000, 'queued');
  ctl.abort();
  await until(async () => metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'normal' }) === 0, 3000, 'the queue to empty');
  const t = await metricsText(srv);
  assert.equal(metric(t, 'strata_requests_total', { band: 'normal', outcome: 'cancelled' }), before + 1);
  assert.equal(metric(t, 'strata_requests_undispatched_total', { band: 'normal', outcome: 'cancelled' }), 1);
  assert.ok((await waiting) instanceof Error);
  // the two streams were not disturbed: both still running
  const busy = (await getJSON(srv, '/slots')).json.filter((s) => s.state === 'decoding');
  assert.deepEqual(busy.map((s) => s.request_id).sort(), ['hold-a', 'hold-b']);
  a.ctl.abort();
  b.ctl.abort();
  await until(allIdle, 5000, 'slots idle');
});

test('abort a non-streamed request while it generates', async () => {
  const ctl = new AbortController();
  const p = fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ max_tokens: 100000 })),
  }).catch((e) => e);
  await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
  ctl.abort();
  assert.ok((await p) instanceof Error);
  await until(allIdle, 5000, 'the slot to be idle');
});

test('the server still serves normally afterwards', async () => {
  const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 2 }));
  assert.equal(r.status, 200);
  assert.equal(r.json.choices[0].message.content, 'tok1 tok2');
});

// A raw HTTP/1.1 request on its own socket, so the test can reset it (RST,
// not FIN). Resolves once 'ready' is true of the bytes received so far.
function rawRequest(body, ready) {
  const u = new URL(srv.url);
  const sock = net.connect(Number(u.port), u.hostname);
  const json = JSON.stringify(body);
  let got = '';
  return new Promise((resolve, reject) => {
    sock.on('error', reject);
    sock.on('data', (d) => {
      got += d.toString();
      if (ready(got)) resolve(sock);
    });
    sock.on('connect', () => {
      sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
      if (ready(got)) resolve(sock);
    });
  });
}

test('a connection reset mid-stream frees the slot and counts the request cancelled', async () => {
  const before = metric(await metricsText(srv), 'strata_requests_total', { band: 'normal', outcome: 'cancelled' });
  const sock = await rawRequest(chatBody({ stream: true }), (got) => got.includes(' tok2'));
  assert.equal((await getJSON(srv, '/slots')).json.filter((s) => s.state === 'decoding').length, 1);
  sock.resetAndDestroy();
  await until(allIdle, 5000, 'the slot to be idle after the reset');
  const t = await until(async () => {
    const m = await metricsText(srv);
    return metric(m, 'strata_requests_total', { band: 'normal', outcome: 'cancelled' }) === before + 1 ? m : null;
  }, 5000, 'the cancelled counter');
  assert.equal(metric(t, 'vllm:num_requests_running'), 0);
});

test('a connection reset while queued takes the request out of the queue', async () => {
  const a = await openStream({}, { 'x-request-id': 'reset-a' });
  const b = await openStream({}, { 'x-request-id': 'reset-b' });
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_running') === 2, 5000, 'both slots busy');
  const before = metric(await metricsText(srv), 'strata_requests_undispatched_total', { band: 'normal', outcome: 'cancelled' });
  const sock = await rawRequest(chatBody({ stream: true, priority: -100 }), () => true);
  await until(async () => metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'batch' }) === 1, 5000, 'queued');
  sock.resetAndDestroy();
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_waiting') === 0, 3000, 'the queue to empty after the reset');
  const t = await metricsText(srv);
  assert.equal(metric(t, 'strata_requests_undispatched_total', { band: 'batch', outcome: 'cancelled' }), 1);
  assert.equal(metric(t, 'strata_requests_undispatched_total', { band: 'normal', outcome: 'cancelled' }), before);
  const busy = (await getJSON(srv, '/slots')).json.filter((s) => s.state === 'decoding');
  assert.deepEqual(busy.map((s) => s.request_id).sort(), ['reset-a', 'reset-b']);
  a.ctl.abort();
  b.ctl.abort();
  await until(allIdle, 5000, 'slots idle');
});

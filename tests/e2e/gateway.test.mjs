// gateway.test.mjs -- priority and cancellation through a gateway hop, as
// behind Envoy and a router's endpoint picker (docs/SCALE-OUT.md
// "Priorities"). The hop here is a small forwarding proxy that behaves the
// way the llm-d EPP + Envoy do to a request on its way to the pod: the body
// goes unchanged, the router's own control headers (x-llm-d-*,
// x-gateway-*) are stripped, other headers pass, and when the client goes
// away (or the picker evicts the request) the upstream connection is
// reset. What must hold on the Strata side:
//   - the body's "priority" and X-LlamaSwap-Priority arrive and set the
//     band (seen in /api/activity by request id);
//   - an objective-style priority (InferenceObjective: small integers,
//     higher = more important, negative = sheddable; what llm-d-router's
//     pending priority rewrite would write into the body) is ordered as is;
//   - a client abort through the hop frees the slot at once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startServer, getJSON, postJSON, metric, metricsText, until, chatBody } from './lib/server.mjs';

let srv;
let proxy;
let proxyUrl;

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host']);

function startProxy(target) {
  const up = new URL(target);
  const server = http.createServer((req, res) => {
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (HOP.has(k) || k.startsWith('x-llm-d-') || k.startsWith('x-gateway-')) continue;
      headers[k] = v;
    }
    const fwd = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers },
      (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
    fwd.on('error', () => res.destroy());
    // the client left before the answer ended: reset the upstream (RST)
    res.on('close', () => { if (!res.writableFinished) fwd.socket?.resetAndDestroy(); });
    req.pipe(fwd);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

before(async () => {
  srv = await startServer(['--batch', '--parallel', '1', '--sim-decode-tps', '50', '--sim-tokens', '100000']);
  proxy = await startProxy(srv.url);
  proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
});
after(async () => {
  proxy?.close();
  await srv.stop();
});

const viaGateway = (body, headers = {}) => postJSON({ url: proxyUrl }, '/v1/chat/completions', body, headers);

async function bandOf(requestId) {
  const acts = (await getJSON(srv, '/api/activity')).json;
  const a = acts.find((x) => x.request_id === requestId);
  assert.ok(a, `no activity record for ${requestId}`);
  return { band: a.serial_band, priority: a.serial_priority };
}

test('body priority and X-LlamaSwap-Priority pass through the hop and set the band', async () => {
  const cases = [
    { id: 'gw-body-hi', body: { priority: 100 }, headers: {}, band: 'interactive', priority: 100 },
    { id: 'gw-body-lo', body: { priority: -100 }, headers: {}, band: 'batch', priority: -100 },
    { id: 'gw-hdr-batch', body: {}, headers: { 'X-LlamaSwap-Priority': 'batch' }, band: 'batch', priority: -100 },
    { id: 'gw-hdr-int', body: {}, headers: { 'X-LlamaSwap-Priority': 'interactive' }, band: 'interactive', priority: 100 },
    // the router's own headers (an objective's name) are its business: stripped on the way
    { id: 'gw-objective', body: {}, headers: { 'x-llm-d-inference-objective': 'critical' }, band: 'normal', priority: 0 },
    // objective-style numbers (higher = more important; negative = sheddable) keep their order
    { id: 'gw-obj-2', body: { priority: 2 }, headers: {}, band: 'normal', priority: 2 },
    { id: 'gw-obj-neg', body: { priority: -1 }, headers: {}, band: 'normal', priority: -1 },
  ];
  for (const c of cases) {
    const r = await viaGateway(chatBody({ max_tokens: 2, ...c.body }), { 'x-request-id': c.id, ...c.headers });
    assert.equal(r.status, 200, `${c.id}: ${r.text}`);
    assert.deepEqual(await bandOf(c.id), { band: c.band, priority: c.priority }, c.id);
  }
});

test('queued behind a busy slot, the more urgent request through the hop goes first', async () => {
  const hold = new AbortController();
  const held = fetch(`${proxyUrl}/v1/chat/completions`, {
    method: 'POST', signal: hold.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ stream: true })),
  }).catch(() => null);
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_running') === 1, 5000, 'the slot busy');
  const order = [];
  const sheddable = viaGateway(chatBody({ max_tokens: 1, priority: -1 }), { 'x-request-id': 'gw-q-shed' })
    .then(() => order.push('sheddable'));
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_waiting') === 1, 5000, 'one waiting');
  const urgent = viaGateway(chatBody({ max_tokens: 1, priority: 2 }), { 'x-request-id': 'gw-q-urgent' })
    .then(() => order.push('urgent'));
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_waiting') === 2, 5000, 'two waiting');
  hold.abort();
  await held;
  await Promise.all([sheddable, urgent]);
  assert.deepEqual(order, ['urgent', 'sheddable']);
});

test('a client abort through the hop resets the upstream and frees the slot at once', async () => {
  const before = metric(await metricsText(srv), 'strata_requests_total', { band: 'normal', outcome: 'cancelled' });
  const ctl = new AbortController();
  const res = await fetch(`${proxyUrl}/v1/chat/completions`, {
    method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ stream: true })),
  });
  const reader = res.body.getReader();
  let got = '';
  while (!got.includes(' tok2')) got += new TextDecoder().decode((await reader.read()).value);
  ctl.abort();
  await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'), 5000, 'the slot idle');
  await until(async () => metric(await metricsText(srv), 'strata_requests_total', { band: 'normal', outcome: 'cancelled' }) === before + 1,
    5000, 'counted cancelled');
});

// cors.test.mjs -- CORS for browser front-ends (--cors-origins, docs/API.md
// "CORS"): OPTIONS preflights answer 200 without the API key and without
// counting on /metrics; Access-Control-Allow-Origin on normal responses,
// errors (401, 404, 405), streams; an origin not listed gets none; other
// unsupported methods keep 405. Two servers: any origin (*) with an API
// key, and one with a list of two origins. The default (localhost) is in
// security.test.mjs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, metricSum, metricsText, chatBody } from './lib/server.mjs';

const KEY = 'sk-cors-test';
const APP = 'http://app.example:5173';

const preflight = (srv, path, origin, reqHeaders) => fetch(`${srv.url}${path}`, {
  method: 'OPTIONS',
  headers: {
    origin, 'access-control-request-method': 'POST',
    ...(reqHeaders ? { 'access-control-request-headers': reqHeaders } : {}),
  },
});

const responses = async (srv) => metricSum(await metricsText(srv, { authorization: `Bearer ${KEY}` }),
  'strata_http_responses_total');

describe('any origin (*), with an API key', () => {
  let srv;
  before(async () => { srv = await startServer(['--cors-origins', '*', '--api-key', KEY, '--sim-decode-tps', '1000']); });
  after(async () => { await srv?.stop(); });

  test('preflight: 200 with the CORS headers, no key needed, not counted', async () => {
    const before = await responses(srv);
    for (const path of ['/v1/chat/completions', '/v1/models', '/v1/models/default', '/health',
      '/v1/responses/resp_x']) {
      const r = await preflight(srv, path, APP, 'authorization, content-type, x-llamaswap-priority');
      assert.equal(r.status, 200, path);
      assert.equal(await r.text(), '');
      assert.equal(r.headers.get('access-control-allow-origin'), '*');
      assert.equal(r.headers.get('access-control-allow-credentials'), null, 'never * with credentials');
      // DELETE /v1/responses/{id} from a page needs DELETE here
      assert.equal(r.headers.get('access-control-allow-methods'), 'GET, POST, DELETE, OPTIONS');
      assert.equal(r.headers.get('access-control-allow-headers'), 'authorization, content-type, x-llamaswap-priority');
      assert.ok(Number(r.headers.get('access-control-max-age')) > 0);
      assert.equal(r.headers.get('vary'), null);
    }
    // without Access-Control-Request-Headers: the headers the API reads
    const r = await preflight(srv, '/v1/chat/completions', APP);
    assert.equal(r.headers.get('access-control-allow-headers'),
      'Authorization, Content-Type, X-LlamaSwap-Priority, X-Request-Id');
    assert.equal(r.headers.get('allow'), 'POST, OPTIONS');
    // the metrics scrape above is counted, the preflights are not
    assert.equal(await responses(srv), before + 1);
  });

  test('a plain OPTIONS (no Origin): 200 with Allow only; an unknown path: 404', async () => {
    const r = await fetch(`${srv.url}/v1/models`, { method: 'OPTIONS' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('allow'), 'GET, HEAD, OPTIONS');
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    const nf = await preflight(srv, '/v1/nope', APP);
    assert.equal(nf.status, 404);
    assert.equal(nf.headers.get('access-control-allow-origin'), '*');
  });

  test('ACAO on a normal response, a stream, and errors (401, 404, 405)', async () => {
    const auth = { authorization: `Bearer ${KEY}`, origin: APP };
    const ok = await fetch(`${srv.url}/v1/models`, { headers: auth });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), '*');
    assert.match(ok.headers.get('access-control-expose-headers'), /x-request-id/);
    await ok.text();
    const st = await fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody({ stream: true, max_tokens: 2 })),
    });
    assert.equal(st.status, 200);
    assert.equal(st.headers.get('access-control-allow-origin'), '*');
    assert.match(await st.text(), /data: \[DONE\]/);
    const noKey = await fetch(`${srv.url}/v1/models`, { headers: { origin: APP } });
    assert.equal(noKey.status, 401);                     // CORS does not replace the key
    assert.equal(noKey.headers.get('access-control-allow-origin'), '*');
    const nf = await fetch(`${srv.url}/v1/nope`, { headers: auth });
    assert.equal(nf.status, 404);
    assert.equal(nf.headers.get('access-control-allow-origin'), '*');
    const bad = await fetch(`${srv.url}/v1/models`, { method: 'DELETE', headers: auth });
    assert.equal(bad.status, 405);                       // other methods: still 405
    assert.equal(bad.headers.get('allow'), 'GET, HEAD, OPTIONS');
    assert.equal(bad.headers.get('access-control-allow-origin'), '*');
    // no Origin: not a browser's cross-origin call, no CORS headers
    const plain = await fetch(`${srv.url}/health`);
    assert.equal(plain.headers.get('access-control-allow-origin'), null);
  });
});

describe('--cors-origins with a list', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--cors-origins', `https://ui.example, ${APP}`]);
  });
  after(async () => { await srv?.stop(); });

  test('a listed origin is echoed, with Vary: Origin', async () => {
    for (const origin of ['https://ui.example', APP]) {
      const r = await fetch(`${srv.url}/v1/models`, { headers: { origin } });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('access-control-allow-origin'), origin);
      assert.equal(r.headers.get('access-control-allow-credentials'), 'true');
      assert.equal(r.headers.get('vary'), 'Origin');
      await r.text();
      const p = await preflight(srv, '/v1/chat/completions', origin);
      assert.equal(p.status, 200);
      assert.equal(p.headers.get('access-control-allow-origin'), origin);
      assert.equal(p.headers.get('access-control-allow-credentials'), 'true');
    }
  });

  test('localhost (any port, 127.0.0.1, [::1]) is not in this list: not echoed', async () => {
    const r = await fetch(`${srv.url}/v1/models`, { headers: { origin: 'http://localhost:3000' } });
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    assert.equal(r.headers.get('access-control-allow-credentials'), null);
    await r.text();
  });

  test('an origin not listed gets no ACAO (still Vary), preflight included', async () => {
    const evil = 'https://evil.example';
    const r = await fetch(`${srv.url}/v1/models`, { headers: { origin: evil } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    assert.equal(r.headers.get('vary'), 'Origin');
    await r.text();
    const p = await preflight(srv, '/v1/chat/completions', evil);
    assert.equal(p.status, 200);
    assert.equal(p.headers.get('access-control-allow-origin'), null);
    assert.equal(p.headers.get('access-control-allow-methods'), null);
    assert.equal(p.headers.get('access-control-allow-credentials'), null);
  });
});

describe('--cors-origin repeated, with localhost', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--cors-origin', 'https://ui.example', '--cors-origin', 'localhost']);
  });
  after(async () => { await srv?.stop(); });

  test('each occurrence adds origins; localhost matches any port of localhost, 127.0.0.1, [::1]', async () => {
    for (const origin of ['https://ui.example', 'http://localhost:5173', 'http://127.0.0.1:8081',
      'http://[::1]:3000', 'https://localhost']) {
      const p = await preflight(srv, '/v1/chat/completions', origin);
      assert.equal(p.status, 200, origin);
      assert.equal(p.headers.get('access-control-allow-origin'), origin, origin);
      assert.equal(p.headers.get('access-control-allow-credentials'), 'true', origin);
    }
    const p = await preflight(srv, '/v1/chat/completions', 'http://localhost.evil.example');
    assert.equal(p.headers.get('access-control-allow-origin'), null);
  });
});

describe('--cors-origins none', () => {
  test('no CORS headers at all; a bad list fails at start', async () => {
    const srv = await startServer(['--cors-origins', 'none']);
    try {
      const r = await fetch(`${srv.url}/v1/models`, { headers: { origin: APP } });
      assert.equal(r.headers.get('access-control-allow-origin'), null);
      assert.equal(r.headers.get('vary'), null);
      await r.text();
      const p = await preflight(srv, '/v1/models', APP);
      assert.equal(p.status, 200);
      assert.equal(p.headers.get('access-control-allow-origin'), null);
    } finally {
      await srv.stop();
    }
    await assert.rejects(startServer(['--cors-origins', 'https://a.example,*'], { timeoutMs: 5000 }),
      /cors-origins/);
  });
});

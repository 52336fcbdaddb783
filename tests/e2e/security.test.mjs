// security.test.mjs -- the hardening of issue 26 (docs/SECURITY.md): strings
// from requests cannot forge log lines; browsers reach only what they
// should (CORS, Host, Content-Type); /health says 503 when no model can
// serve, and a failed load answers model_load_failed with Retry-After.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  STRATA_BIN, startServer, postJSON, getJSON, chatBody, until,
} from './lib/server.mjs';

// short: error messages quote at most ~40 bytes of a bad value
const FORGED = '2026-01-01T00:00Z error FORGED';

describe('log forging', () => {
  let srv, dir;
  before(async () => {
    // two models: an unknown "model" is refused (with one, any name runs on it)
    dir = mkdtempSync(join(tmpdir(), 'strata-forge-'));
    writeFileSync(join(dir, 'two.yaml'), 'models:\n  - name: default\n  - name: other\n');
    srv = await startServer(['--config', join(dir, 'two.yaml'), '--sim-decode-tps', '1000']);
  });
  after(async () => {
    await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const forgedLines = () => srv.log().split('\n').filter((l) => l.includes('FORGED'));

  test('a newline in "model" is escaped in the text log', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chatBody({ model: `nope\n${FORGED}` }));
    assert.equal(r.status, 404);
    await until(() => srv.log().includes(`nope\\n${FORGED}`), 5000, 'the refusal logged, escaped');
    for (const l of forgedLines()) assert.ok(!l.startsWith(FORGED), l);
  });

  test('a newline in a message role is escaped in the text log', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chatBody({
      messages: [{ role: `x\r\n${FORGED}`, content: 'hi' }],
    }));
    assert.equal(r.status, 400);
    await until(() => srv.log().includes(`x\\r\\n${FORGED}`), 5000, 'the refusal logged, escaped');
    for (const l of forgedLines()) assert.ok(!l.startsWith(FORGED), l);
  });
});

// What a browser may do by default: only this machine's pages read answers
// (CORS), a rebound DNS name is refused (Host), and a body a page can send
// without a preflight (text/plain, a form) is refused (Content-Type).
describe('browser safety by default', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-decode-tps', '1000']); });
  after(async () => { await srv?.stop(); });

  const post = (headers, body = JSON.stringify(chatBody({ max_tokens: 2 }))) =>
    fetch(`${srv.url}/v1/chat/completions`, { method: 'POST', headers, body });

  test('CORS: localhost origins echoed with Vary: Origin and credentials, others get nothing, never *', async () => {
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:3000', 'https://[::1]']) {
      const r = await post({ 'content-type': 'application/json', origin });
      await r.arrayBuffer();
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('access-control-allow-origin'), origin);
      assert.equal(r.headers.get('vary'), 'Origin');
      assert.equal(r.headers.get('access-control-allow-credentials'), 'true');   // as llama-server
    }
    const r = await post({ 'content-type': 'application/json', origin: 'https://evil.example' });
    await r.arrayBuffer();
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    assert.equal(r.headers.get('vary'), 'Origin');
  });

  test('Host: a DNS name not served is 403 (DNS rebinding); loopback and IP literals pass', async () => {
    const { request } = await import('node:http');
    const get = (host) => new Promise((resolve, reject) => {
      const u = new URL(`${srv.url}/v1/models`);
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, headers: { host } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
      req.on('error', reject);
      req.end();
    });
    for (const host of ['evil.example', `evil.example:${new URL(srv.url).port}`, 'localhost.evil.example']) {
      const r = await get(host);
      assert.equal(r.status, 403, host);
      const j = JSON.parse(r.text);
      assert.equal(j.error.code, 'host_not_allowed');
      assert.equal(j.error.type, 'invalid_request_error');
    }
    for (const host of ['localhost:1', '127.0.0.1', '[::1]:8080', '192.168.0.10:8080']) {
      assert.equal((await get(host)).status, 200, host);
    }
  });

  test('POST bodies must be application/json (charset allowed): 415 otherwise', async () => {
    for (const ct of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', null]) {
      const headers = ct ? { 'content-type': ct } : {};
      // a Blob without a type sends no Content-Type at all
      const r = await post(headers, ct ? JSON.stringify(chatBody()) : new Blob([JSON.stringify(chatBody())]));
      assert.equal(r.status, 415, String(ct));
      const j = await r.json();
      assert.equal(j.error.code, 'unsupported_media_type');
      assert.equal(j.error.type, 'invalid_request_error');
    }
    const r = await post({ 'content-type': 'application/json; charset=utf-8' });
    await r.arrayBuffer();
    assert.equal(r.status, 200);
  });
});

describe('--allowed-hosts and --cors-origin', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--allowed-hosts', 'strata.example', '--cors-origin', 'https://app.example']);
  });
  after(async () => { await srv?.stop(); });

  test('a listed Host is served; listed origins replace the localhost default', async () => {
    const { request } = await import('node:http');
    const u = new URL(`${srv.url}/v1/models`);
    const status = await new Promise((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname,
        headers: { host: 'strata.example:443' } }, (res) => { res.resume(); resolve(res.statusCode); });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 200);
    const app = await fetch(`${srv.url}/v1/models`, { headers: { origin: 'https://app.example' } });
    await app.arrayBuffer();
    assert.equal(app.headers.get('access-control-allow-origin'), 'https://app.example');
    const local = await fetch(`${srv.url}/v1/models`, { headers: { origin: 'http://localhost:5173' } });
    await local.arrayBuffer();
    assert.equal(local.headers.get('access-control-allow-origin'), null);
  });
});

// /health tells a load balancer the truth: 503 (with the reason) while no
// configured model can serve, 200 while at least one can.
describe('/health and models that cannot load', () => {
  let dir;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'strata-sec-'));
    writeFileSync(join(dir, 'broken.gguf'), 'this is not a GGUF file');
    const mk = spawnSync(STRATA_BIN, ['make-model', join(dir, 'tiny.gguf'), '--preset', 'tiny', '--seed', '1'],
      { encoding: 'utf8' });
    assert.equal(mk.status, 0, `make-model: ${mk.stderr}`);
  });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  const config = (name, models) => {
    const path = join(dir, name);
    writeFileSync(path, `models:\n${models.map((m) => `  - name: ${m}\n    path: ${join(dir, `${m}.gguf`)}\n`).join('')}`);
    return path;
  };

  test('the only model broken: 503 model_load_failed with the reason and Retry-After', async () => {
    const srv = await startServer(['--config', config('one.yaml', ['broken']), '--backend', 'cpu',
      '--threads', '1'], { waitReady: false });
    try {
      // its load runs at start (a lone model preloads) and fails
      const r = await until(async () => {
        const h = await fetch(`${srv.url}/health`);
        const j = await h.json();
        return j.error?.code === 'model_load_failed' ? { h, j } : null;
      }, 10000, '/health to report the failed load');
      assert.equal(r.h.status, 503);
      assert.equal(r.j.error.type, 'unavailable_error');
      assert.match(r.j.error.message, /^No model can serve: .*broken/);
      assert.ok(Number(r.h.headers.get('retry-after')) >= 1);
    } finally { await srv.stop(); }
  });

  test('one model broken, another fine: 200, as the other can serve', async () => {
    const srv = await startServer(['--config', config('two.yaml', ['broken', 'tiny']), '--backend', 'cpu',
      '--threads', '1']);
    try {
      // the load that fails, then one in its back-off: the documented code and Retry-After
      for (let i = 0; i < 2; i++) {
        const bad = await postJSON(srv, '/v1/chat/completions', chatBody({ model: 'broken', max_tokens: 1 }));
        assert.equal(bad.status, 503);
        assert.equal(bad.json.error.code, 'model_load_failed');
        assert.equal(bad.json.error.param, null);
        assert.match(bad.json.error.message, /broken/);
        assert.ok(Number(bad.headers.get('retry-after')) >= 1, `Retry-After: ${bad.headers.get('retry-after')}`);
      }
      const models = await getJSON(srv, '/v1/models');
      assert.equal(models.json.data.find((m) => m.id === 'broken').strata.state, 'failed');
      assert.equal((await getJSON(srv, '/health')).status, 200);
    } finally { await srv.stop(); }
  });
});

// With keys: /metrics needs one (or --metrics-key); /api/activity and
// /slots show a key its own requests only, an admin key everything.
describe('per-key views', () => {
  let srv, dir;
  const auth = (k) => ({ authorization: `Bearer ${k}` });
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strata-sec-keys-'));
    writeFileSync(join(dir, 'keys.yaml'), [
      'api_keys:',
      '  - { name: alice, key: ka }',
      '  - { name: bob, key: kb }',
      '  - { name: ops, key: kops, admin: true }',
      '',
    ].join('\n'));
    srv = await startServer(['--config', join(dir, 'keys.yaml'), '--metrics-key', 'kscrape',
      '--sim-decode-tps', '2000', '--sim-tokens', '1']);
  });
  after(async () => { await srv?.stop(); rmSync(dir, { recursive: true, force: true }); });

  test('/metrics: 401 without a key; an API key or --metrics-key reads it', async () => {
    const none = await getJSON(srv, '/metrics');
    assert.equal(none.status, 401);
    assert.equal(none.json.error.code, 'invalid_api_key');
    assert.equal((await getJSON(srv, '/metrics', auth('wrong'))).status, 401);
    for (const k of ['kscrape', 'ka']) {
      const r = await fetch(`${srv.url}/metrics`, { headers: auth(k) });
      assert.equal(r.status, 200, k);
      assert.match(await r.text(), /strata_http_responses_total/);
    }
    // the metrics key is no API key
    assert.equal((await getJSON(srv, '/v1/models', auth('kscrape'))).status, 401);
    // /health stays public for probes
    assert.equal((await getJSON(srv, '/health')).status, 200);
  });

  test('/api/activity and /slots: a key sees its own requests, an admin all', async () => {
    const send = async (k, id) => {
      const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }),
        { ...auth(k), 'x-request-id': id });
      assert.equal(r.status, 200, r.text);
    };
    await send('ka', 'sec-alice-1');
    await send('kb', 'sec-bob-1');
    // bob reuses alice's id: shown to neither of them any more
    await send('ka', 'sec-shared');
    await send('kb', 'sec-shared');
    const ids = async (k) => (await getJSON(srv, '/api/activity', auth(k))).json.map((a) => a.request_id);
    const alice = await ids('ka');
    assert.ok(alice.includes('sec-alice-1'));
    assert.ok(!alice.includes('sec-bob-1'));
    assert.ok(!alice.includes('sec-shared'));
    const bob = await ids('kb');
    assert.deepEqual(bob.filter((id) => id.startsWith('sec-')), ['sec-bob-1']);
    const ops = await ids('kops');
    for (const id of ['sec-alice-1', 'sec-bob-1', 'sec-shared']) assert.ok(ops.includes(id), id);
    // /slots answers every key (idle slots name no request)
    const slots = await getJSON(srv, '/slots', auth('ka'));
    assert.equal(slots.status, 200);
    assert.ok(Array.isArray(slots.json) && slots.json.length > 0);
  });
});

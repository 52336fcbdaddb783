// security.test.mjs -- the hardening of issue 26 (docs/SECURITY.md): strings
// from requests cannot forge log lines; browsers reach only what they
// should (CORS, Host, Content-Type).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJSON, chatBody, until } from './lib/server.mjs';

// short: error messages quote at most ~40 bytes of a bad value
const FORGED = '2026-01-01T00:00Z error FORGED';

describe('log forging', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-decode-tps', '1000']); });
  after(async () => { await srv?.stop(); });

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

  test('CORS: localhost origins echoed with Vary: Origin, others get nothing, never *', async () => {
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:3000', 'https://[::1]']) {
      const r = await post({ 'content-type': 'application/json', origin });
      await r.arrayBuffer();
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('access-control-allow-origin'), origin);
      assert.equal(r.headers.get('vary'), 'Origin');
      assert.equal(r.headers.get('access-control-allow-credentials'), null);
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

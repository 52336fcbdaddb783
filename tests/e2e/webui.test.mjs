// webui.test.mjs -- the dashboard's files over HTTP (docs/DASHBOARD.md):
// content types, caching (ETag + no-cache, 304), the security headers, no
// key needed for the files while the data still needs one, --no-webui.
// The page itself in a browser: dashboard.test.mjs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, getJSON } from './lib/server.mjs';

async function get(srv, path, headers = {}, method = 'GET') {
  const r = await fetch(`${srv.url}${path}`, { method, headers });
  return { status: r.status, headers: r.headers, text: await r.text() };
}

describe('the dashboard files', () => {
  let srv;
  before(async () => { srv = await startServer(); });
  after(async () => { await srv.stop(); });

  test('/ is the page, its files under /ui/ with their types', async () => {
    const page = await get(srv, '/');
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(page.text, /<script type="module" src="\/ui\/app.js"><\/script>/);
    const types = { 'app.js': 'text/javascript; charset=utf-8', 'style.css': 'text/css; charset=utf-8',
      'icon.svg': 'image/svg+xml' };
    for (const [name, type] of Object.entries(types)) {
      const r = await get(srv, `/ui/${name}`);
      assert.equal(r.status, 200, name);
      assert.equal(r.headers.get('content-type'), type, name);
      assert.ok(r.text.length > 0, name);
    }
    for (const path of ['/ui/nope.js', '/ui/', '/ui/../CMakeLists.txt', '/index.html']) {
      const r = await get(srv, path);
      assert.equal(r.status, 404, path);
    }
  });

  test('cached with an ETag and revalidated: 304 while unchanged', async () => {
    const r = await get(srv, '/ui/app.js');
    assert.equal(r.headers.get('cache-control'), 'no-cache');
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{16}"$/);
    const again = await get(srv, '/ui/app.js', { 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    assert.equal(again.headers.get('etag'), etag);
    const other = await get(srv, '/ui/app.js', { 'if-none-match': '"0000000000000000"' });
    assert.equal(other.status, 200);
    const head = await get(srv, '/', {}, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'text/html; charset=utf-8');
  });

  test('security headers: only its own scripts, no framing, no sniffing', async () => {
    const r = await get(srv, '/');
    const csp = r.headers.get('content-security-policy');
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
  });
});

describe('with --api-key', () => {
  let srv;
  before(async () => { srv = await startServer(['--api-key', 'sekrit']); });
  after(async () => { await srv.stop(); });

  test('the page loads without the key; the data it reads does not', async () => {
    assert.equal((await get(srv, '/')).status, 200);
    assert.equal((await get(srv, '/ui/app.js')).status, 200);
    for (const path of ['/slots', '/metrics', '/api/activity', '/v1/models']) {
      assert.equal((await get(srv, path)).status, 401, path);
      assert.equal((await get(srv, path, { authorization: 'Bearer sekrit' })).status, 200, path);
    }
  });
});

describe('--no-webui', () => {
  let srv;
  before(async () => { srv = await startServer(['--no-webui']); });
  after(async () => { await srv.stop(); });

  test('/ and /ui/ answer 404; the API is unchanged', async () => {
    for (const path of ['/', '/ui/app.js', '/ui/style.css']) {
      const r = await get(srv, path);
      assert.equal(r.status, 404, path);
      assert.equal(JSON.parse(r.text).error.code, 'not_found');
    }
    assert.equal((await getJSON(srv, '/v1/models')).status, 200);
  });
});

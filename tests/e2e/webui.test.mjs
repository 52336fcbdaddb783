// webui.test.mjs -- the dashboard's files over HTTP (docs/DASHBOARD.md):
// content types, caching (ETag + no-cache, 304), the security headers, no
// key needed for the files while the data still needs one, --no-webui.
// The page itself in a browser: dashboard.test.mjs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, getJSON, postJSON, metricsText } from './lib/server.mjs';
import { parseMetrics, by, sum } from '../../webui/prom.js';

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

describe('what the page reads is there', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-tokens', '3']); });
  after(async () => { await srv.stop(); });

  // The page's own Prometheus reader (webui/prom.js) on the live /metrics:
  // a metric renamed on the server would leave a panel silently empty.
  test('every /metrics family the page uses, per band where it splits them', async () => {
    const r = await postJSON(srv, '/v1/chat/completions',
      { model: 'default', messages: [{ role: 'user', content: 'hi' }], priority: 100 });
    assert.equal(r.status, 200);
    const samples = parseMetrics(await metricsText(srv));
    const perBand = ['llamaswap_scheduler_queue_depth', 'llamaswap_scheduler_queue_oldest_wait_seconds',
      'strata_requests_running', 'strata_give_ways_total', 'strata_time_to_first_token_seconds_sum',
      'strata_time_to_first_token_seconds_count', 'strata_inter_token_latency_seconds_count'];
    for (const name of perBand) {
      assert.deepEqual(Object.keys(by(samples, name, 'band')).sort(), ['batch', 'interactive', 'normal'], name);
    }
    assert.ok('interactive' in by(samples, 'strata_requests_total', 'band', { outcome: 'rejected' }));
    for (const name of ['strata_queue_full_total', 'vllm:kv_cache_usage_perc']) {
      assert.ok(samples.some((x) => x.name === name), name);
    }
    assert.equal(by(samples, 'strata_model_loaded', 'model').default, 1);
    assert.ok('default' in by(samples, 'strata_model_swaps_total', 'to'));
    assert.ok('default' in by(samples, 'strata_model_load_failures_total', 'model'));
    // one first token and two later ones in the interactive band
    assert.equal(sum(samples, 'strata_time_to_first_token_seconds_count', { band: 'interactive' }), 1);
    assert.equal(sum(samples, 'strata_inter_token_latency_seconds_count', { band: 'interactive' }), 2);
  });

  test('the /slots and /api/activity fields the page uses', async () => {
    const slots = (await getJSON(srv, '/slots')).json;
    for (const k of ['id', 'engine', 'state', 'is_processing', 'request_id', 'priority', 'band', 'n_prompt',
      'n_read', 'n_generated', 'give_ways', 'n_cached', 'model', 'n_draft']) {
      assert.ok(k in slots[0], k);
    }
    const acts = (await getJSON(srv, '/api/activity?limit=500')).json;
    for (const k of ['dispatched_unix_ms', 'request_id', 'model', 'serial_band', 'serial_priority', 'engine',
      'slot', 'serial_queue_wait_ms', 'ttft_ms', 'completion_tokens', 'give_ways', 'swapped', 'swap_from',
      'finished', 'outcome']) {
      assert.ok(k in acts[0], k);
    }
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

// keepalive.test.mjs -- SSE keep-alive (--sse-keepalive, docs/API.md
// "Streaming"): a stream stuck behind another request (one engine, no
// --batch: one request at a time) gets its 200 headers and ": keep-alive"
// comments before its first token; the OpenAI SDK ignores them; a client
// that leaves during the wait still cancels its queued request; a failure
// after the headers (a model load that fails) is an in-stream error event,
// then [DONE]; --sse-keepalive 0 keeps the headers back until the first
// token.
//
// The server: models alpha (preloaded) and broken (every load fails), the
// sim decoding 20 tokens/s, keep-alive every second. A "blocker" stream of
// 100 tokens holds the only slot for 5 s.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, getJSON, metric, metricsText, until, parseSSE, chatBody } from './lib/server.mjs';

const CONFIG = `# written by tests/e2e/keepalive.test.mjs
models:
  - name: alpha
    preload: true
  - name: broken
    path: "fail:disk on fire"
`;

const post = (srv, body, signal) => fetch(`${srv.url}/v1/chat/completions`, {
  method: 'POST', signal, headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

// A stream that holds the slot for 'tokens' / 20 s; resolves to its end time.
// 5 s by default: the tests need it to outlast a 1 s keep-alive (or 1.5 s)
// plus their own polling, which a loaded machine can make slow.
async function blocker(srv, tokens = 100, model = 'alpha') {
  const res = await post(srv, chatBody({ model, stream: true, max_tokens: tokens }));
  assert.equal(res.status, 200);
  const done = res.text().then(() => Date.now());
  // its first token is out: it holds the slot now
  return done;
}

const queued = async (srv, n) =>
  metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'normal' }) === n;

describe('keep-alive every second', () => {
  let srv, dir;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-keepalive-'));
    const cfg = path.join(dir, 'models.yaml');
    fs.writeFileSync(cfg, CONFIG);
    srv = await startServer(['--config', cfg, '--sim-decode-tps', '20', '--sim-tokens', '100000',
      '--sse-keepalive', '1']);
  });
  after(async () => {
    await srv?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a queued stream gets its headers and keep-alive comments before its first token', async () => {
    const blockerEnd = blocker(srv);
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
    const t0 = Date.now();
    const res = await post(srv, chatBody({ model: 'alpha', stream: true, max_tokens: 3 }));
    const tHeaders = Date.now();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const text = await res.text();
    const tEnd = await blockerEnd;
    // the headers came while the blocker still held the slot, after ~1 s
    assert.ok(tHeaders < tEnd, `headers at ${tHeaders - t0} ms, blocker ended at ${tEnd - t0} ms`);
    assert.ok(tHeaders - t0 >= 900, `headers after only ${tHeaders - t0} ms`);
    const blocks = parseSSE(text).map((e) => e.block);
    const firstData = blocks.findIndex((b) => b.startsWith('data: '));
    assert.ok(firstData >= 1, text);
    for (const b of blocks.slice(0, firstData)) assert.equal(b, ': keep-alive');
    // then an ordinary stream: three tokens, finish, [DONE]
    const data = blocks.slice(firstData).filter((b) => b.startsWith('data: '));
    assert.equal(data.at(-1), 'data: [DONE]');
    const content = data.slice(0, -1).map((b) => JSON.parse(b.slice(6)))
      .map((c) => c.choices[0].delta.content ?? '').join('');
    assert.equal(content, 'tok1 tok2 tok3');
  });

  test('the OpenAI SDK streams normally with keep-alives in front', async () => {
    const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const blockerEnd = blocker(srv);
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
    const t0 = Date.now();
    const stream = await client.chat.completions.create({
      model: 'alpha', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 4,
    });
    let content = '';
    let finish = null;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(content, 'tok1 tok2 tok3 tok4');
    assert.equal(finish, 'length');
    assert.ok(Date.now() - t0 > 1500, 'it waited behind the blocker longer than the keep-alive interval (the raw-stream test checks the comments)');
    await blockerEnd;
  });

  test('a client that leaves after the keep-alive headers cancels its queued request', async () => {
    const ctl = new AbortController();
    const hold = await post(srv, chatBody({ model: 'alpha', stream: true }), ctl.signal);   // 100000 tokens
    assert.equal(hold.status, 200);
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
    const before = await metricsText(srv);
    const cancelled0 = metric(before, 'strata_requests_undispatched_total', { band: 'normal', outcome: 'cancelled' }) ?? 0;
    const ctl2 = new AbortController();
    const res = await post(srv, chatBody({ model: 'alpha', stream: true }), ctl2.signal);
    assert.equal(res.status, 200);                       // headers came with the first keep-alive
    const reader = res.body.getReader();
    const { value } = await reader.read();
    assert.equal(new TextDecoder().decode(value), ': keep-alive\n\n');
    assert.ok(await queued(srv, 1), 'still queued');
    ctl2.abort();
    await until(() => queued(srv, 0), 3000, 'the queue to empty');
    const t = await metricsText(srv);
    assert.equal(metric(t, 'strata_requests_undispatched_total', { band: 'normal', outcome: 'cancelled' }), cancelled0 + 1);
    // the holder was not disturbed; then it leaves too and nothing is left behind
    const busy = (await getJSON(srv, '/slots')).json.filter((s) => s.state === 'decoding');
    assert.equal(busy.length, 1);
    ctl.abort();
    await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'), 5000, 'slots idle');
    const m = await metricsText(srv);
    assert.equal(metric(m, 'vllm:num_requests_running'), 0);
    assert.equal(metric(m, 'vllm:num_requests_waiting'), 0);
  });

  test('a model load that fails after the headers is an in-stream error event, then [DONE]', async () => {
    const blockerEnd = blocker(srv);
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
    const res = await post(srv, chatBody({ model: 'broken', stream: true, max_tokens: 3 }));
    assert.equal(res.status, 200);
    const events = parseSSE(await res.text());
    await blockerEnd;
    assert.equal(events[0].block, ': keep-alive');
    const data = events.filter((e) => e.block.startsWith('data: ')).map((e) => e.data);
    assert.equal(data.length, 2, JSON.stringify(events));
    const err = JSON.parse(data[0]);
    assert.equal(err.error.code, 'model_load_failed');
    assert.equal(err.error.type, 'unavailable_error');
    assert.match(err.error.message, /disk on fire/);
    assert.equal(data[1], '[DONE]');
  });
});

describe('--sse-keepalive 0', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--sim-decode-tps', '20', '--sim-tokens', '100000', '--sse-keepalive', '0']);
  });
  after(async () => { await srv?.stop(); });

  test('the headers wait for the first token, and no comment is sent', async () => {
    const blockerEnd = blocker(srv, 100, 'default');
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
    const t0 = Date.now();
    const res = await post(srv, chatBody({ stream: true, max_tokens: 2 }));
    const tHeaders = Date.now();
    assert.equal(res.status, 200);
    const text = await res.text();
    await blockerEnd;
    // the blocker holds the slot ~5 s: no headers before it is done
    assert.ok(tHeaders - t0 >= 1500, `headers after only ${tHeaders - t0} ms`);
    assert.ok(!text.includes(': keep-alive'), text);
    assert.ok(text.startsWith('data: '), text);
  });
});

// A llama-server command line, as llama.cpp's server tests start it, serves here:
// its flags are accepted (docs/CLI.md "llama-server flags"), -n caps a reply that
// asks for no length, and the first stream delta's content is null as llama-server's.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJSON, parseSSE } from './lib/server.mjs';

describe("llama-server's command line", () => {
  let srv;
  before(async () => {
    srv = await startServer(['--temp', '0.8', '--seed', '42', '--batch-size', '32', '--no-slots',
      '--alias', 'tinyllama-2', '--ctx-size', '512', '--parallel', '2', '--n-predict', '3',
      '--no-jinja', '-fa', 'on', '--cont-batching', '--metrics', '--sim-tokens', '10',
      '--sim-decode-tps', '2000']);
  });
  after(async () => { await srv.stop(); });

  test('each accepted flag is named in a warning', () => {
    for (const f of ['--batch-size 32', '-fa on', '--metrics'])
      assert.match(srv.log(), new RegExp(`${f}: llama-server flag accepted`), f);
  });

  test('--no-slots: GET /slots is 501 as llama-server\'s (ours now, no warning)', async () => {
    assert.doesNotMatch(srv.log(), /--no-slots: llama-server flag accepted/);
    const r = await fetch(`${srv.url}/slots`);
    assert.equal(r.status, 501);
    const b = await r.json();
    assert.match(b.error.message, /does not support slots endpoint/);
  });

  test('-n caps a request that sets no length, not one that does', async () => {
    const a = await postJSON(srv, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.json.usage.completion_tokens, 3);
    assert.equal(a.json.choices[0].finish_reason, 'length');
    const b = await postJSON(srv, '/completion', { prompt: 'one', n_predict: 5 });
    assert.equal(b.json.tokens_predicted, 5);
  });

  test('the first stream delta carries role and a null content', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', { stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const ev = parseSSE(r.text).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data));
    assert.deepEqual(ev[0].choices[0].delta, { role: 'assistant', content: null });
    for (const c of ev) {
      const d = c.choices[0]?.delta;
      if (d && d.content !== undefined && d.content !== null) assert.ok(d.content.length > 0);
    }
  });
});

// llama-server batches by default: -np 2 alone is two slots decoding together
// here too, -nocb keeps one (docs/CLI.md "Choices made").
describe('-np above 1 implies --batch', () => {
  let two, one;
  before(async () => {
    two = await startServer(['-c', '512', '-np', '2', '--sim-tokens', '200', '--sim-decode-tps', '200']);
    one = await startServer(['-c', '512', '-np', '2', '-nocb', '--sim-tokens', '3']);
  });
  after(async () => { await two?.stop(); await one?.stop(); });

  test('-np 2: /props total_slots 2, /slots two, both busy at once; the load log says why', async () => {
    const p = await (await fetch(`${two.url}/props`)).json();
    assert.equal(p.total_slots, 2);
    assert.equal(p.default_generation_settings.n_ctx, 256);   // -c is the slots' total
    const s = await (await fetch(`${two.url}/slots`)).json();
    assert.equal(s.length, 2);
    assert.match(two.log(), /2 slot\(s\) per engine, 256 context tokens per slot, batched \(a parallel above 1 implies --batch/);
    assert.doesNotMatch(two.log(), /has no effect/);
    const reqs = [0, 1].map(() => postJSON(two, '/completion', { prompt: 'a', n_predict: 200 }));
    let busy = 0;
    for (let i = 0; i < 100 && busy < 2; i++) {
      const now = await (await fetch(`${two.url}/slots`)).json();
      busy = now.filter((x) => x.is_processing).length;
      if (busy < 2) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(busy, 2);
    for (const r of await Promise.all(reqs)) assert.equal(r.status, 200, r.text);
  });

  test('-np 2 -nocb: one slot, and a warning that --parallel does nothing then', async () => {
    const p = await (await fetch(`${one.url}/props`)).json();
    assert.equal(p.total_slots, 1);
    assert.equal(p.default_generation_settings.n_ctx, 512);
    assert.match(one.log(), /parallel 2 has no effect with batching off/);
    assert.match(one.log(), /one request at a time \(no --batch\)/);
  });
});

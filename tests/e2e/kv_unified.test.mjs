// kv_unified.test.mjs -- --kv-unified (docs/BATCHING.md "The unified KV
// pool"): with -c 512 -np 4 --batch the slots share 512 tokens, so one
// request may read a prompt far past 512 / 4 (without the flag: a 400 at
// 128 a slot), two such reads at once both finish (the second waits for
// room), a prompt past the pool is the usual context-overflow 400, and a
// long generation ends with "length" within the pool. On a real model:
// make-model's tiny preset on the CPU backend (the lazily committed KV).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { postJSON, startTinyModel } from './lib/server.mjs';

// n token ids, all from a run no other prompt of this file shares
const ids = (n, base) => Array.from({ length: n }, (_, i) => base + (i % 50));
const complete = (srv, prompt, extra = {}) =>
  postJSON(srv, '/v1/completions', { model: 'tiny', prompt, max_tokens: 4, temperature: 0, ...extra });

describe('--kv-unified on a real model', () => {
  let srv, dir;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-kvu-', 5, 512,
                                         ['--batch', '-np', '4', '--kv-unified']));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the load says the slots share one pool, reserved', () => {
    assert.match(srv.log(), /4 slots of 512 tokens shared: one unified KV pool/);
    assert.match(srv.log(), /reserved, committed as slots fill it/);
  });

  test('one slot reads 300 tokens, past 512 / 4', async () => {
    const r = await complete(srv, ids(300, 10));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.prompt_tokens, 300);
  });

  test('two 300-token reads at once: both finish (the second waits for room)', async () => {
    const [a, b] = await Promise.all([complete(srv, ids(300, 100)), complete(srv, ids(300, 200))]);
    for (const r of [a, b]) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.usage.prompt_tokens, 300);
    }
  });

  test('a prompt past the pool: context_length_exceeded, n_ctx the pool', async () => {
    const r = await complete(srv, ids(600, 300));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, 'context_length_exceeded');
    assert.equal(r.json.error.n_ctx, 512);
  });

  test('a long generation ends with "length" within the pool', async () => {
    const r = await complete(srv, ids(300, 400), { max_tokens: 1000, ignore_eos: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices[0].finish_reason, 'length');
    assert.ok(r.json.usage.completion_tokens <= 512 - 300 + 1, r.text);
  });
});

describe('without --kv-unified the same -c gives each slot a quarter', () => {
  test('the 300-token prompt is a 400 at 128 a slot', async () => {
    const { srv, dir } = await startTinyModel('strata-e2e-kvu-off-', 5, 512, ['--batch', '-np', '4']);
    try {
      const r = await complete(srv, ids(300, 10));
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.n_ctx, 128);
    } finally {
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

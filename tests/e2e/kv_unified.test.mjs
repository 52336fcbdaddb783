// kv_unified.test.mjs -- --kv-unified (docs/BATCHING.md "The unified KV
// pool"): with -c 512 -np 4 --batch the slots share 512 tokens, so one
// request may read a prompt far past 512 / 4 (without the flag: a 400 at
// 128 a slot), two such reads at once both finish (the second waits for
// room), a prompt past the pool is the usual context-overflow 400, and a
// long generation ends with "length" within the pool. On a real model:
// make-model's tiny preset on the CPU backend (the lazily committed KV).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getJSON, metric, metricsText, postJSON, startServer, startTinyModel, until } from './lib/server.mjs';

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

  test('/metrics and /slots count the pool: an idle cache is held, not in use', async () => {
    await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'),
                30000, 'slots idle');
    const slots = (await getJSON(srv, '/slots')).json;
    const t = await metricsText(srv);
    const cached = slots.reduce((n, s) => n + s.n_kv, 0);
    assert.ok(cached >= 300, JSON.stringify(slots));
    for (const s of slots) assert.equal(s.n_kv, s.n_cached);
    assert.ok(t.includes('# TYPE strata:kv_pool_capacity_tokens gauge\n'));
    assert.ok(t.includes('# TYPE strata:kv_pool_held_tokens gauge\n'));
    assert.equal(metric(t, 'strata:kv_pool_capacity_tokens'), 512);
    assert.equal(metric(t, 'strata:kv_pool_held_tokens'), cached);
    assert.equal(metric(t, 'strata:kv_pool_held_tokens', { state: 'cached' }), cached);
    assert.equal(metric(t, 'strata:kv_pool_held_tokens', { state: 'busy' }), 0);
    assert.equal(metric(t, 'vllm:kv_cache_usage_perc'), 0);
    // the geometry counts the pool once, not once a slot
    const info = t.match(/^vllm:cache_config_info\{block_size="(\d+)",num_gpu_blocks="(\d+)"\} 1$/m);
    assert.ok(info, t);
    assert.equal(Number(info[2]), Math.floor(512 / Number(info[1])));
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

describe('--kv-unified and slot files', () => {
  test('a restored slot evicts the other idle cache to fit the pool', async () => {
    const saves = mkdtempSync(join(tmpdir(), 'strata-e2e-kvu-save-'));
    const { srv, dir } = await startTinyModel('strata-e2e-kvu-slots-', 5, 512,
      ['--batch', '-np', '2', '--kv-unified', '--slot-save-path', saves]);
    const slots = async () => (await getJSON(srv, '/slots')).json;
    const idle = () => until(async () => (await slots()).every((s) => s.state === 'idle'), 30000,
                             'both slots idle');
    try {
      assert.equal((await complete(srv, ids(300, 10))).status, 200);
      await idle();
      const a = (await slots()).find((s) => s.n_cached > 0);
      const save = await postJSON(srv, `/slots/${a.id}?action=save`, { filename: 'a.bin' });
      assert.equal(save.status, 200, save.text);
      // another 300 does not fit beside a's cache: it is evicted
      assert.equal((await complete(srv, ids(300, 100))).status, 200);
      await idle();
      let now = await slots();
      assert.equal(now.find((s) => s.id === a.id).n_cached, 0);
      const b = now.find((s) => s.n_cached > 0);
      assert.notEqual(b.id, a.id);
      const restore = await postJSON(srv, `/slots/${a.id}?action=restore`, { filename: 'a.bin' });
      assert.equal(restore.status, 200, restore.text);
      now = await slots();
      assert.equal(now.find((s) => s.id === a.id).n_cached, save.json.n_saved);
      assert.equal(now.find((s) => s.id === b.id).n_cached, 0);   // evicted for it
    } finally {
      await srv.stop();
      for (const d of [dir, saves]) rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('--kv-unified on the sim: a busy slot counts its grant', () => {
  test('kv_cache_usage, the busy pool gauge and /slots n_kv agree while it decodes', async () => {
    const srv = await startServer(['--batch', '-np', '4', '-c', '1000', '--kv-unified',
                                   '--sim-decode-tps', '5']);
    try {
      const long = postJSON(srv, '/v1/completions',
        { model: 'sim', prompt: 'w '.repeat(400), max_tokens: 60, ignore_eos: true });
      let seen = null;
      await until(async () => {
        const busy = (await getJSON(srv, '/slots')).json.filter((s) => s.state === 'decoding');
        const t = await metricsText(srv);
        const after = (await getJSON(srv, '/slots')).json.filter((s) => s.state === 'decoding');
        if (busy.length !== 1 || after.length !== 1) return false;
        const b = metric(t, 'strata:kv_pool_held_tokens', { state: 'busy' });
        // the slot grows by one cell per token: the gauge lies between two views
        if (!(b >= busy[0].n_kv && b <= after[0].n_kv)) return false;
        seen = { b, t, slot: after[0] };
        // the usage and the gauge are stored one after the other: a scrape
        // between the two stores is tried again
        return Math.abs(metric(t, 'vllm:kv_cache_usage_perc') - b / 1000) < 1e-6;
      }, 20000, 'a decoding slot whose grant kv_cache_usage counts over the pool');
      assert.ok(seen.slot.n_kv >= seen.slot.n_prompt, JSON.stringify(seen.slot));
      assert.equal(metric(seen.t, 'strata:kv_pool_capacity_tokens'), 1000);   // -c: the pool
      const usage = metric(seen.t, 'vllm:kv_cache_usage_perc');
      assert.ok(Math.abs(usage - seen.b / 1000) < 1e-6, `usage ${usage}, busy ${seen.b}`);
      assert.equal(metric(seen.t, 'strata:kv_cache_usage_ratio'), usage);
      assert.equal((await long).status, 200);
    } finally {
      await srv.stop();
    }
  });
});

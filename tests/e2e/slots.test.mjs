// slots.test.mjs -- llama-server's POST /slots/{id}?action=save|restore|erase
// (docs/API.md "/slots") on make-model's tiny preset, CPU backend, one
// slot: a saved prompt cache, erased, then restored, serves the next
// request with the same prompt from the cache with the same greedy answer;
// bad file names, unknown slots and actions, a missing --slot-save-path,
// a file of another model (same shapes, other weights) and the sim are
// refused with clear errors, never a crash. On next-tiny (a hybrid with
// recurrent state): the file carries the slot's state checkpoints, so a
// server that restores it resumes a prompt sharing only the first 100
// tokens from the checkpoint at 96, with a fresh read's greedy tokens.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getJSON, postJSON, startPresetModel, startServer, startTinyModel } from './lib/server.mjs';

const chat = {
  model: 'tiny', temperature: 0, max_tokens: 8,
  messages: [{ role: 'user', content: 'the quick brown fox jumps over the lazy dog and keeps running' }],
};

describe('slot save, erase, restore on a real model', () => {
  let srv, dir, other, otherDir;
  const saves = mkdtempSync(join(tmpdir(), 'strata-e2e-slots-save-'));
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-slots-', 3, 512,
                                         ['--slot-save-path', saves]));
  });
  after(async () => {
    await srv?.stop();
    await other?.stop();
    for (const d of [dir, otherDir, saves]) if (d) rmSync(d, { recursive: true, force: true });
  });

  const ask = async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chat);
    assert.equal(r.status, 200, r.text);
    return { content: r.json.choices[0].message.content, usage: r.json.usage };
  };
  const action = (id, act, body = {}, s = srv) => postJSON(s, `/slots/${id}?action=${act}`, body);
  const cached = async () => (await getJSON(srv, '/slots')).json[0].n_cached;

  test('save, erase, restore: the next request reads from the restored cache', async () => {
    const cold = await ask();
    assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
    // the engine frees the slot before the answer goes out: idle, keeping its tokens
    const slot = (await getJSON(srv, '/slots')).json[0];
    assert.equal(slot.state, 'idle');
    const kept = slot.n_cached;
    assert.ok(kept > 0, JSON.stringify(slot));

    const save = await action(0, 'save', { filename: 'a.bin' });
    assert.equal(save.status, 200, save.text);
    assert.equal(save.json.id_slot, 0);
    assert.equal(save.json.filename, 'a.bin');
    assert.equal(save.json.n_saved, kept);
    assert.ok(save.json.n_written > kept * 4, JSON.stringify(save.json));
    assert.equal(typeof save.json.timings.save_ms, 'number');
    assert.ok(existsSync(join(saves, 'a.bin')));

    const erase = await action(0, 'erase');
    assert.equal(erase.status, 200, erase.text);
    assert.deepEqual(erase.json, { id_slot: 0, n_erased: kept });
    assert.equal(await cached(), 0);

    const restore = await action(0, 'restore', { filename: 'a.bin' });
    assert.equal(restore.status, 200, restore.text);
    assert.equal(restore.json.n_restored, kept);
    assert.equal(restore.json.n_read, save.json.n_written);
    assert.equal(typeof restore.json.timings.restore_ms, 'number');
    assert.equal(await cached(), kept);

    const warm = await ask();
    assert.ok(warm.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(warm.usage));
    assert.equal(warm.content, cold.content);
  });

  test('file names are one plain name in the directory', async () => {
    for (const filename of ['../x.bin', 'a/b.bin', '.hidden', '', 'a\\b', 7]) {
      const r = await action(0, 'save', { filename });
      assert.equal(r.status, 400, `${JSON.stringify(filename)}: ${r.text}`);
      assert.equal(r.json.error.param, 'filename');
    }
    assert.ok(!existsSync(join(saves, '..', 'x.bin')));
  });

  test('unknown slot, action, missing file', async () => {
    assert.equal((await action(9, 'save', { filename: 'z.bin' })).status, 404);
    assert.equal((await action('x', 'erase')).status, 400);
    const bad = await action(0, 'dance');
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'action');
    assert.equal((await action(0, 'restore', { filename: 'none.bin' })).status, 404);
  });

  test('a file that is not a slot file, or of another model, is a 400', async () => {
    writeFileSync(join(saves, 'junk.bin'), 'not a slot file at all');
    const junk = await action(0, 'restore', { filename: 'junk.bin' });
    assert.equal(junk.status, 400, junk.text);
    assert.match(junk.json.error.message, /slot file/);
    // the same preset with another seed: same shapes, other weights
    ({ srv: other, dir: otherDir } = await startTinyModel('strata-e2e-slots-other-', 4, 512,
                                                          ['--slot-save-path', saves]));
    const r = await action(0, 'restore', { filename: 'a.bin' }, other);
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, /another model \(weights mismatch\)/);
    const ok = await postJSON(other, '/v1/chat/completions', chat);   // still serves
    assert.equal(ok.status, 200, ok.text);
    // a failed restore leaves the slot empty, and serving
    assert.equal(await cached(), 0);
    assert.equal((await ask()).usage.prompt_tokens_details.cached_tokens, 0);
  });
});

describe('slot actions without --slot-save-path, and on the sim', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-tokens', '4']); });
  after(async () => { await srv?.stop(); });

  test('save and restore are 501; erase runs', async () => {
    for (const act of ['save', 'restore']) {
      const r = await postJSON(srv, `/slots/0?action=${act}`, { filename: 'a.bin' });
      assert.equal(r.status, 501, r.text);
      assert.match(r.json.error.message, /--slot-save-path/);
    }
    const r = await postJSON(srv, '/slots/0?action=erase', {});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id_slot, 0);
  });

  test('the sim cannot save: 501, no file', async () => {
    const saves = mkdtempSync(join(tmpdir(), 'strata-e2e-slots-sim-'));
    const sim = await startServer(['--slot-save-path', saves]);
    try {
      const r = await postJSON(sim, '/slots/0?action=save', { filename: 'a.bin' });
      assert.equal(r.status, 501, r.text);
      assert.ok(!existsSync(join(saves, 'a.bin')));
      assert.ok(!existsSync(join(saves, 'a.bin.tmp')));
    } finally {
      await sim.stop();
      rmSync(saves, { recursive: true, force: true });
    }
  });
});

describe('slot files of a hybrid model carry its state checkpoints', () => {
  test('restored into another server, a shared prefix resumes from a checkpoint', async () => {
    const saves = mkdtempSync(join(tmpdir(), 'strata-e2e-slots-next-'));
    const flags = ['--slot-save-path', saves, '--ubatch', '32', '--ctx-checkpoints', '3'];
    const sys = Array.from({ length: 100 }, (_, i) => 30 + (i * 37) % 170);
    const end = (w) => Array.from({ length: 20 }, (_, i) => 20 + (i * 11 + w * 53) % 150 + w);
    const ask = async (s, w) => {
      const r = await postJSON(s, '/v1/completions', { model: 'next-tiny', prompt: [...sys, ...end(w)],
        max_tokens: 8, temperature: 0, ignore_eos: true });
      assert.equal(r.status, 200, r.text);
      return { text: r.json.choices[0].text, cached: r.json.usage.prompt_tokens_details.cached_tokens };
    };
    // the slot is free by the time the answer is out
    const idle = async (s) => assert.equal((await getJSON(s, '/slots')).json[0].state, 'idle');
    // same preset and seed: the same weights, so either server restores the other's file
    const a = await startPresetModel('strata-e2e-slots-na-', 'next-tiny', 3, 256, flags);
    const b = await startPresetModel('strata-e2e-slots-nb-', 'next-tiny', 3, 256, flags);
    try {
      assert.equal((await ask(a.srv, 0)).cached, 0);
      await idle(a.srv);
      assert.equal((await getJSON(a.srv, '/slots')).json[0].n_checkpoints, 3);   // 32, 64, 96
      const save = await postJSON(a.srv, '/slots/0?action=save', { filename: 'n.bin' });
      assert.equal(save.status, 200, save.text);
      const fresh = await ask(b.srv, 1);   // b's slot reads prompt 1 whole
      assert.equal(fresh.cached, 0);
      await idle(b.srv);
      const restore = await postJSON(b.srv, '/slots/0?action=restore', { filename: 'n.bin' });
      assert.equal(restore.status, 200, restore.text);
      assert.equal(restore.json.n_restored, save.json.n_saved);
      assert.equal((await getJSON(b.srv, '/slots')).json[0].n_checkpoints, 3);
      const resumed = await ask(b.srv, 1);
      assert.equal(resumed.cached, 96);
      assert.equal(resumed.text, fresh.text);
    } finally {
      for (const x of [a, b]) {
        await x.srv.stop();
        rmSync(x.dir, { recursive: true, force: true });
      }
      rmSync(saves, { recursive: true, force: true });
    }
  });
});

// cuda_serve.test.mjs -- `strata serve --backend cuda --gpus 0,1`: the
// server on the CUDA backend, one engine per device with its own weights,
// KV cache and slots, fed by the one scheduler queue. Registered only in the
// tests/cuemu build (CUDA emulated on the CPU, CUEMU_DEVICES=2), where it
// runs without a GPU.
//
//   - greedy replies (chat, streamed and not, and completions) equal the
//     CPU backend's for the same model: make-model's tiny preset at F32, so
//     nothing is quantized and the two backends agree to ~1e-4 (docs/CUDA.md),
//     far below the margins of greedy picks;
//   - concurrent requests are spread over both engines (the activity
//     records name engines 0 and 1), and every one is answered;
//   - /slots lists every engine's slots; an engine whose device does not
//     exist fails to load, saying which, while the other serves; with no
//     GPU at all (CUEMU_DEVICES=0) `--backend cuda` exits 2 with a clear
//     error.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STRATA_BIN, getJSON, postJSON, readSSE, startServer } from './lib/server.mjs';

const prompts = ['hello there', 'the quick brown fox', 'one two three four', 'a b c',
  'general kenobi', 'tell me a story', 'zero', 'why is the sky blue'];

describe('the server on two (emulated) GPUs', () => {
  let dir, model, cpu, gpu;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strata-e2e-cuda-'));
    model = join(dir, 'tiny-f32.gguf');
    const mk = spawnSync(STRATA_BIN, ['make-model', model, '--preset', 'tiny', '--quant', 'f32',
      '--seed', '3'], { encoding: 'utf8' });
    assert.equal(mk.status, 0, `make-model: ${mk.stderr}`);
    const common = ['-m', model, '-a', 'tiny', '-c', '256', '--batch', '--parallel', '2'];
    cpu = await startServer(['--backend', 'cpu', '--threads', '1', ...common]);
    gpu = await startServer(['--backend', 'cuda', '--gpus', '0,1', ...common],
      { timeoutMs: 120000 });
  });
  after(async () => {
    await cpu?.stop();
    await gpu?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const chat = (srv, content, extra = {}) => postJSON(srv, '/v1/chat/completions', {
    model: 'tiny', messages: [{ role: 'user', content }], temperature: 0, max_tokens: 8,
    ...extra,
  });

  test('greedy replies on cuda equal the cpu backend\'s, spread over both engines', async () => {
    const [want, got] = await Promise.all([
      Promise.all(prompts.map((p) => chat(cpu, p))),
      Promise.all(prompts.map((p) => chat(gpu, p))),
    ]);
    for (let i = 0; i < prompts.length; i++) {
      assert.equal(want[i].status, 200, want[i].text);
      assert.equal(got[i].status, 200, got[i].text);
      assert.equal(got[i].json.choices[0].message.content, want[i].json.choices[0].message.content,
        `prompt '${prompts[i]}'`);
      assert.equal(got[i].json.usage.completion_tokens, want[i].json.usage.completion_tokens);
    }
    const acts = (await getJSON(gpu, '/api/activity?limit=100')).json;
    const engines = new Set(acts.map((a) => a.engine));
    assert.deepEqual([...engines].sort(), [0, 1], JSON.stringify(acts.map((a) => a.engine)));
  });

  test('a streamed reply and a completion match too', async () => {
    const body = { model: 'tiny', messages: [{ role: 'user', content: 'stream me' }],
      temperature: 0, max_tokens: 8, stream: true };
    const texts = [];
    for (const srv of [cpu, gpu]) {
      const res = await fetch(`${srv.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      const { events } = await readSSE(res);
      assert.equal(events.at(-1).data, '[DONE]');
      texts.push(events.slice(0, -1)
        .map((e) => JSON.parse(e.data).choices?.[0]?.delta?.content ?? '').join(''));
    }
    assert.equal(texts[1], texts[0]);
    const comp = await Promise.all([cpu, gpu].map((srv) => postJSON(srv, '/v1/completions', {
      model: 'tiny', prompt: 'once upon a time', temperature: 0, max_tokens: 8,
    })));
    assert.equal(comp[1].status, 200, comp[1].text);
    assert.equal(comp[1].json.choices[0].text, comp[0].json.choices[0].text);
  });

  test('/slots lists both engines\' slots', async () => {
    const slots = (await getJSON(gpu, '/slots')).json;
    assert.deepEqual([...new Set(slots.map((s) => s.engine))].sort(), [0, 1]);
    assert.equal(slots.length, 4);
  });

  test('an engine whose device is missing fails to load, naming it; the other one serves', async () => {
    const srv = await startServer(['--backend', 'cuda', '--gpus', '0,5', '-m', model, '-a', 'tiny',
      '-c', '256'], { timeoutMs: 120000 });
    try {
      const r = await chat(srv, prompts[0]);
      assert.equal(r.status, 200, r.text);
      assert.match(srv.log(), /engine 1: cuda: device 5 requested, 2 present/);
    } finally {
      await srv.stop();
    }
  });

  test('no GPU at all: a clear error and exit status 2', () => {
    const r = spawnSync(STRATA_BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--backend',
      'cuda', '-m', model], { encoding: 'utf8', timeout: 60000,
      env: { ...process.env, CUEMU_DEVICES: '0' } });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /no usable GPU/);
  });
});

// llama_seed.test.mjs -- llama-server's --temp and --seed as the defaults of a
// request that sends none (docs/CLI.md), on a real model (make-model tiny, CPU,
// random weights: noise, but fixed): with a server seed the same prompt gives
// the same text streamed or not, as text or as its token ids, and
// generation_settings shows what ran; ignore_eos lists the model's
// end-of-generation tokens at -inf (null), as llama-server does; a prompt may
// mix token ids and texts (llama-server's).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { postJSON, parseSSE, startTinyModel } from './lib/server.mjs';

const PROMPT = 'I believe the meaning of life is';

async function streamed(srv, body) {
  const r = await postJSON(srv, '/completion', { ...body, stream: true });
  assert.equal(r.status, 200, r.text);
  return parseSSE(r.text).filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data).content).join('');
}

describe('--seed and --temp', () => {
  let seeded, random, dir, dir2;
  before(async () => {
    ({ srv: seeded, dir } = await startTinyModel('strata-e2e-seed-', 5, 512, ['--seed', '42', '--temp', '1.5', '-n', '12']));
    ({ srv: random, dir: dir2 } = await startTinyModel('strata-e2e-noseed-', 5, 512, ['-n', '12']));
  });
  after(async () => {
    await seeded?.stop();
    await random?.stop();
    for (const d of [dir, dir2]) if (d) rmSync(d, { recursive: true, force: true });
  });

  test('the same text streamed and not, as text and as token ids; the settings show the seed', async () => {
    const a = await postJSON(seeded, '/completion', { prompt: PROMPT, cache_prompt: false });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.json.generation_settings.seed, 42);
    assert.ok(Math.abs(a.json.generation_settings.temperature - 1.5) < 1e-6);
    assert.ok(a.json.tokens_predicted > 0 && a.json.tokens_predicted <= 12);   // -n 12
    assert.equal(await streamed(seeded, { prompt: PROMPT }), a.json.content);
    const tok = await postJSON(seeded, '/tokenize', { content: PROMPT, add_special: true });
    const b = await postJSON(seeded, '/completion', { prompt: [tok.json.tokens, PROMPT] });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.json.map((x) => x.content), [a.json.content, a.json.content]);
    // a request's own seed and temperature win; "seed": -1 is random again
    const own = await postJSON(seeded, '/completion', { prompt: PROMPT, seed: 42, temperature: 1.5 });
    assert.equal(own.json.content, a.json.content);
    const r = await postJSON(seeded, '/completion', { prompt: PROMPT, seed: -1 });
    assert.equal(r.json.generation_settings.seed, 4294967295);
    const g = await postJSON(seeded, '/completion', { prompt: PROMPT, temperature: 0 });
    assert.equal(g.json.generation_settings.temperature, 0);
  });

  test('a mixed prompt: ids and texts in one sequence, each text tokenized in its place', async () => {
    const head = (await postJSON(seeded, '/tokenize', { content: 'I believe' })).json.tokens;
    const tail = (await postJSON(seeded, '/tokenize', { content: ' the meaning' })).json.tokens;
    const mixed = await postJSON(seeded, '/completion', { prompt: [...head, ' the meaning'], return_tokens: true });
    assert.equal(mixed.status, 200, mixed.text);
    assert.equal(mixed.json.tokens_evaluated, head.length + tail.length);
    const ids = await postJSON(seeded, '/completion', { prompt: [...head, ...tail], return_tokens: true });
    assert.deepEqual(mixed.json.tokens, ids.json.tokens);
    // also as one prompt of several, and a string first; a bad item is a 400 naming prompt
    const two = await postJSON(seeded, '/completion', { prompt: [['I believe', ...tail], PROMPT] });
    assert.equal(two.status, 200, two.text);
    assert.equal(two.json.length, 2);
    const bad = await postJSON(seeded, '/completion', { prompt: [1, 'a', { x: 1 }] });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.param, 'prompt');
  });

  test('/props shows the defaults; without --seed every request draws its own', async () => {
    const p = await (await fetch(`${seeded.url}/props`)).json();
    assert.equal(p.default_generation_settings.params.seed, 42);
    assert.equal(p.default_generation_settings.params.n_predict, 12);
    const q = await (await fetch(`${random.url}/props`)).json();
    assert.equal(q.default_generation_settings.params.seed, 4294967295);
    assert.ok(Math.abs(q.default_generation_settings.params.temperature - 0.8) < 1e-6);
    const r = await postJSON(random, '/completion', { prompt: PROMPT });
    assert.equal(r.json.generation_settings.seed, 4294967295);
  });

  test('ignore_eos: the model\'s end-of-generation tokens at -inf in generation_settings', async () => {
    const on = await postJSON(seeded, '/completion', { prompt: PROMPT, n_predict: 2, ignore_eos: true, logit_bias: [[5, -2]] });
    assert.equal(on.status, 200, on.text);
    const lb = on.json.generation_settings.logit_bias;
    assert.deepEqual(lb[0], { token: 5, bias: -2 });
    assert.ok(lb.length > 1, JSON.stringify(lb));
    for (const x of lb.slice(1)) assert.equal(x.bias, null);
    const det = await postJSON(seeded, '/detokenize', { tokens: lb.slice(1).map((x) => x.token) });
    assert.match(det.json.content, /<\|im_end\|>|<\|endoftext\|>/);
    const off = await postJSON(seeded, '/completion', { prompt: PROMPT, n_predict: 2 });
    assert.deepEqual(off.json.generation_settings.logit_bias, []);
  });
});

// mixed.test.mjs -- every kind of request at once on a real (tiny, CPU)
// model with n-gram drafts on: structured outputs, JSON mode, enforced tool
// calls, prompt scoring (echo, prompt_logprobs), seeded sampling with n > 1,
// penalties, /infill, greedy text that repeats itself, streams and streams
// cut by their clients, across the three priority bands. Each kind is
// checked for its own shape; then nothing is left running, no slot is held,
// and the server still answers. The suites of each feature test it alone;
// this one is for how they share the engine's steps (masks next to backend
// draws next to scored reads next to drafts).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, postJSON, metricsText, metric, until, STRATA_BIN } from './lib/server.mjs';

let srv, dir;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strata-mixed-'));
  const model = join(dir, 'tiny.gguf');
  const mk = spawnSync(STRATA_BIN, ['make-model', model, '--preset', 'tiny', '--seed', '11'], { encoding: 'utf8' });
  assert.equal(mk.status, 0, `make-model: ${mk.stderr}`);
  srv = await startServer(['--backend', 'cpu', '-m', model, '-a', 'tiny', '--threads', '1', '-c', '1024',
    '--batch', '--parallel', '4', '--spec', 'ngram']);
});
after(async () => {
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const schema = {
  type: 'object', additionalProperties: false, required: ['name', 'n'],
  properties: { name: { type: 'string' }, n: { type: 'integer' }, tag: { enum: ['a', 'b'] } },
};
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: {
  type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const user = (content) => [{ role: 'user', content }];

// [name, path, body, check(json)] -- checks of non-streamed answers
const kinds = [
  ['json_schema', '/v1/chat/completions', { messages: user('json please'), max_tokens: 48,
    response_format: { type: 'json_schema', json_schema: { name: 'p', schema } } }, (r) => {
    const c = r.choices[0];
    if (c.finish_reason === 'stop') {
      const o = JSON.parse(c.message.content);
      assert.equal(typeof o.name, 'string');
      assert.ok(Number.isInteger(o.n));
    } else assert.equal(c.finish_reason, 'length');
  }],
  ['json_object sampled', '/v1/chat/completions', { messages: user('json'), max_tokens: 32, temperature: 0.9,
    seed: 3, response_format: { type: 'json_object' } }, (r) => {
    const c = r.choices[0];
    if (c.finish_reason === 'stop') assert.equal(typeof JSON.parse(c.message.content), 'object');
  }],
  ['tool_choice required', '/v1/chat/completions', { messages: user('weather in Paris?'), tools,
    tool_choice: 'required', max_tokens: 64 }, (r) => {
    const c = r.choices[0];
    assert.ok(['tool_calls', 'length'].includes(c.finish_reason), c.finish_reason);
    if (c.finish_reason === 'tool_calls') {
      assert.equal(c.message.tool_calls[0].function.name, 'get_weather');
      assert.equal(typeof JSON.parse(c.message.tool_calls[0].function.arguments).city, 'string');
    }
  }],
  ['echo logprobs', '/v1/completions', { prompt: 'the cat sat on the mat', echo: true, logprobs: 2, max_tokens: 1 }, (r) => {
    const lp = r.choices[0].logprobs;
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.tokens.length, lp.token_logprobs.length);
    assert.ok(lp.token_logprobs.slice(1).every((x) => x <= 0));
  }],
  ['echo token prompt, max_tokens 0', '/v1/completions', { prompt: [[5, 6, 7, 8, 9, 10]], echo: true, logprobs: 1, max_tokens: 0 }, (r) => {
    assert.equal(r.choices[0].logprobs.tokens.length, 6);
    assert.equal(r.choices[0].finish_reason, 'length');
  }],
  ['prompt_logprobs', '/v1/chat/completions', { messages: user('hi there'), max_tokens: 4, prompt_logprobs: 2 }, (r) => {
    assert.ok(Array.isArray(r.prompt_logprobs) && r.prompt_logprobs[0] === null && r.prompt_logprobs.length > 1);
  }],
  ['seeded n=2', '/v1/chat/completions', { messages: user('a story'), max_tokens: 24, temperature: 0.8,
    top_p: 0.9, min_p: 0.02, seed: 5, n: 2 }, (r) => {
    assert.equal(r.choices.length, 2);
  }],
  ['penalties + bias', '/v1/completions', { prompt: 'a a a a a', max_tokens: 24, presence_penalty: 1,
    frequency_penalty: 0.5, logit_bias: { 15: -100 } }, (r) => {
    assert.ok(r.usage.completion_tokens > 0);
  }],
  ['infill', '/infill', { input_prefix: 'def add(a, b):\n    ', input_suffix: '\n\nprint(add(1, 2))\n', n_predict: 16 }, (r) => {
    assert.equal(typeof r.content, 'string');
    assert.equal(r.stop, true);
  }],
  ['repetitive greedy', '/v1/completions', { prompt: 'one two three one two three one two three one two', max_tokens: 32, temperature: 0 }, (r) => {
    assert.ok(r.usage.completion_tokens > 0);
  }],
];

const BANDS = ['interactive', 'normal', 'batch'];

async function one(i) {
  const [name, path, body0, check] = kinds[i % kinds.length];
  const streamable = path !== '/infill' && !body0.prompt_logprobs;
  const stream = streamable && i % 3 === 1;
  const leave = stream && i % 4 === 0;     // this client hangs up after its first chunk
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}${path}`, {
    method: 'POST', signal: ctl.signal,
    headers: { 'content-type': 'application/json', 'x-llamaswap-priority': BANDS[i % 3] },
    body: JSON.stringify({ ...body0, stream }),
  });
  assert.equal(res.status, 200, `${name}: ${res.status}`);
  if (!stream) {
    check(await res.json());
    return 'done';
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
    if (leave) {
      ctl.abort();
      return 'left';
    }
  }
  assert.ok(text.includes('data: [DONE]'), `${name}: stream without [DONE]`);
  assert.ok(!text.includes('"error"'), `${name}: ${text.slice(-300)}`);
  return 'done';
}

test('every kind of request at once: each answers in its shape, and nothing is left held', async () => {
  const N = 40;
  const results = await Promise.all(Array.from({ length: N }, (_, i) => one(i).catch((e) => {
    if (e.name === 'AbortError') return 'left';
    throw e;
  })));
  assert.ok(results.filter((r) => r === 'done').length >= N - 4);
  // the clients that left are cancelled, and every slot comes back
  await until(async () => {
    const m = await metricsText(srv);
    return BANDS.every((b) => metric(m, 'strata_requests_running', { band: b }) === 0);
  }, 30000, 'no request running');
  const r = await postJSON(srv, '/v1/completions', { prompt: 'still here', max_tokens: 4 });
  assert.equal(r.status, 200);
});

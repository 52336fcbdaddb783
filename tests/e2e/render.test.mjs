// render.test.mjs -- POST /v1/chat/completions/render and
// /v1/completions/render return exactly the token ids Strata feeds its
// engine and its slot's cache for the same body (docs/SCALE-OUT.md
// "Render"; a router's precise prefix scorer hashes them).
//
// On the tiny synthetic model (real byte-level BPE tokenizer, ChatML
// template, FIM tokens), for several bodies -- plain chat, system + tools,
// chat_template_kwargs, a multi-turn chat, a string prompt, token ids,
// several prompts, a FIM "suffix" -- the render's length must equal the
// usage.prompt_tokens of the real completion. Two stronger checks: a
// completion whose prompt is the rendered ids finds all but the last of
// them in the slot's cache the chat left (the ids are the cache's), and
// greedy text from the rendered ids equals the text from the string.
// The answer shapes follow vLLM's (the EPP reads token_ids).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { postJSON, startTinyModel } from './lib/server.mjs';

let srv;
let dir;

before(async () => {
  ({ srv, dir } = await startTinyModel('strata-render-', 5, 1024, ['--parallel', '1']));
});

after(async () => {
  if (srv) await srv.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

const CHATS = {
  plain: { messages: [{ role: 'user', content: 'hello there general kenobi' }] },
  'system and tools': {
    messages: [{ role: 'system', content: 'You answer briefly.' }, { role: 'user', content: 'weather in Oslo?' }],
    tools,
  },
  'chat_template_kwargs': {
    messages: [{ role: 'user', content: 'think about it' }],
    chat_template_kwargs: { enable_thinking: false },
  },
  'multi-turn': {
    messages: [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three, four' }],
  },
};

const COMPLETIONS = {
  'string prompt': { prompt: 'The quick brown fox jumps over' },
  'token ids': { prompt: [72, 101, 108, 108, 111, 32, 119, 111] },
  'fim suffix': { prompt: 'def add(a, b):\n    return', suffix: '\n\nprint(add(1, 2))\n' },
};

async function renderChat(body) {
  const r = await postJSON(srv, '/v1/chat/completions/render', { model: 'tiny', ...body });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json.request_id.startsWith('chatcmpl-'), r.text);
  assert.equal(r.json.model, 'tiny');
  assert.ok(Array.isArray(r.json.token_ids) && r.json.token_ids.length > 0, r.text);
  for (const id of r.json.token_ids) assert.ok(Number.isInteger(id) && id >= 0);
  return r.json.token_ids;
}

async function renderCompletion(body) {
  const r = await postJSON(srv, '/v1/completions/render', { model: 'tiny', ...body });
  assert.equal(r.status, 200, r.text);
  assert.ok(Array.isArray(r.json), `completions render answers an array: ${r.text}`);
  for (const [i, e] of r.json.entries()) {
    assert.ok(e.request_id.startsWith('cmpl-') && e.request_id.endsWith(`-${i}`), e.request_id);
    assert.equal(e.model, 'tiny');
    assert.ok(e.token_ids.length > 0);
  }
  return r.json.map((e) => e.token_ids);
}

const generate = async (path, body) => {
  const r = await postJSON(srv, path, { model: 'tiny', max_tokens: 1, temperature: 0, ...body });
  assert.equal(r.status, 200, r.text);
  return r.json;
};

for (const [name, body] of Object.entries(CHATS)) {
  test(`chat render, ${name}: as many ids as the completion's prompt_tokens, and they are the cache's`, async () => {
    const ids = await renderChat(body);
    assert.deepEqual(await renderChat(body), ids, 'the same body renders the same ids');
    const chat = await generate('/v1/chat/completions', body);
    assert.equal(chat.usage.prompt_tokens, ids.length);
    // one slot: the chat's prompt is its cache now; the rendered ids as a
    // prompt find all of it but the last (read again for its logits)
    const again = await generate('/v1/completions', { prompt: ids });
    assert.equal(again.usage.prompt_tokens, ids.length);
    assert.equal(again.usage.prompt_tokens_details.cached_tokens, ids.length - 1,
      'the rendered ids are the ones in the slot\'s cache');
  });
}

for (const [name, body] of Object.entries(COMPLETIONS)) {
  test(`completions render, ${name}: as many ids as the completion's prompt_tokens`, async () => {
    const [ids] = await renderCompletion(body);
    const done = await generate('/v1/completions', body);
    assert.equal(done.usage.prompt_tokens, ids.length);
    if (Array.isArray(body.prompt)) assert.deepEqual(ids, body.prompt, 'token ids come back as given');
  });
}

test('completions render: one entry per prompt, each as its own render', async () => {
  const prompts = ['first prompt here', 'and a second, longer prompt over there'];
  const both = await renderCompletion({ prompt: prompts });
  assert.equal(both.length, 2);
  for (const [i, p] of prompts.entries()) assert.deepEqual(both[i], (await renderCompletion({ prompt: p }))[0]);
  const done = await generate('/v1/completions', { prompt: prompts });
  assert.equal(done.usage.prompt_tokens, both[0].length + both[1].length);
});

test('greedy text from the rendered ids equals the text from the string', async () => {
  const prompt = 'Once upon a time, in a land far away';
  const [ids] = await renderCompletion({ prompt });
  const a = await generate('/v1/completions', { prompt, max_tokens: 6 });
  const b = await generate('/v1/completions', { prompt: ids, max_tokens: 6 });
  assert.equal(b.choices[0].text, a.choices[0].text);
});

test('render errors are the generation endpoint\'s: 400 naming the field, 405; any name with one model', async () => {
  let r = await postJSON(srv, '/v1/chat/completions/render', { model: 'tiny' });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'messages');
  // one model served: any name reaches it, as for generation (docs/API.md)
  r = await postJSON(srv, '/v1/completions/render', { model: 'nope', prompt: 'x' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json[0].model, 'tiny');
  r = await postJSON(srv, '/v1/completions/render', { model: 'tiny', prompt: 'x '.repeat(2000) });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'context_length_exceeded');
  const g = await fetch(`${srv.url}/v1/completions/render`);
  assert.equal(g.status, 405);
});

test("input_tokens (llama-server's route) counts the rendered prompt", async () => {
  for (const [name, body] of Object.entries(CHATS)) {
    const ids = await renderChat(body);
    for (const path of ['/v1/chat/completions/input_tokens', '/chat/completions/input_tokens']) {
      const r = await postJSON(srv, path, { model: 'tiny', ...body });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, { input_tokens: ids.length }, `${name} ${path}`);
    }
  }
  const bad = await postJSON(srv, '/chat/completions/input_tokens', { messages: 'x' });
  assert.equal(bad.status, 400, bad.text);
});

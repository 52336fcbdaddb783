// cache_prompt.test.mjs -- the request field "cache_prompt" (llama-server's;
// docs/API.md): default true, a repeated prompt reuses the slot's cached
// prefix (usage.prompt_tokens_details.cached_tokens > 0); false reads the
// whole prompt again (cached_tokens 0) and, greedy, answers the same. On a
// real model: make-model's tiny preset (random weights, fixed text) on the
// CPU backend, one slot.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { postJSON, startTinyModel } from './lib/server.mjs';

const body = (extra = {}) => ({
  model: 'tiny', temperature: 0, max_tokens: 8,
  messages: [{ role: 'user', content: 'the quick brown fox jumps over the lazy dog and keeps running' }],
  ...extra,
});

describe('cache_prompt on a real model', () => {
  let srv, dir;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-cache-prompt-', 3, 512));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const ask = async (extra) => {
    const r = await postJSON(srv, '/v1/chat/completions', body(extra));
    assert.equal(r.status, 200, r.text);
    return { content: r.json.choices[0].message.content, usage: r.json.usage };
  };

  test('false: no cached tokens, the same greedy answer', async () => {
    const cold = await ask();
    assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
    assert.ok(cold.content.length > 0);
    const warm = await ask();                            // default true: reuses the prefix
    assert.ok(warm.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(warm.usage));
    assert.equal(warm.content, cold.content);
    const off = await ask({ cache_prompt: false });
    assert.equal(off.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(off.usage.prompt_tokens, cold.usage.prompt_tokens);
    assert.equal(off.content, cold.content);
    const on = await ask({ cache_prompt: true });        // the slot still caches for later
    assert.ok(on.usage.prompt_tokens_details.cached_tokens > 0);
    assert.equal(on.content, cold.content);
  });

  test('a non-boolean cache_prompt is a 400 naming it', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', body({ cache_prompt: 'no' }));
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'cache_prompt');
  });
});

// score_cache.test.mjs -- prompt scores kept with a slot's cached prefix
// (docs/API.md "Scoring prompts", docs/ENGINE.md "Prompt logprobs"): an
// evaluation battery's requests that share a context read it once, and
// score exactly what cold requests score.
//
// On a real model (make-model tiny, CPU, one request at a time): one
// lm-evaluation-harness multiple-choice batch -- four token-id prompts,
// one context and four answers, echo, logprobs 1, max_tokens 1 -- in one
// request; usage.prompt_tokens_details.cached_tokens shows three of them
// reusing the context; every choice's token_logprobs and top_logprobs
// equal those of the same prompt sent alone with cache_prompt false (the
// same numbers, to the last digit), and so do lm-eval's sums and greedy
// flags. Then vLLM's prompt_logprobs with n = 2 and a larger K than kept.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { postJSON, startTinyModel } from './lib/server.mjs';

// lm-eval's parse_logprobs for one choice (openai_completions.py).
function lmEvalParse(choice, ctxlen) {
  const lps = choice.logprobs.token_logprobs.slice(ctxlen, -1);
  const tops = choice.logprobs.top_logprobs.slice(ctxlen, -1);
  let greedy = true;
  for (let i = 0; i < lps.length; i++) {
    if (lps[i] !== Math.max(...Object.values(tops[i]))) { greedy = false; break; }
  }
  return { sum: lps.reduce((a, b) => a + b, 0), greedy };
}

// The prompt's part of a choice's legacy logprobs (the last entry is the
// generated token, which depends on nothing cached but is compared too).
const scores = (ch) => ({
  tokens: ch.logprobs.tokens,
  token_logprobs: ch.logprobs.token_logprobs,
  top_logprobs: ch.logprobs.top_logprobs,
});

describe('prompt scores reused on a real model (CPU)', () => {
  let srv, dir;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-score-cache-', 5, 512, ['--ubatch', '16']));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const ids = async (text) => {
    const r = await postJSON(srv, '/tokenize', { content: text, model: 'tiny' });
    assert.equal(r.status, 200, r.text);
    return r.json.tokens;
  };

  test("lm-eval's multiple choice: the context is read once, the scores are a cold read's", async () => {
    const ctx = await ids('Question: which of these animals can fly over the mountains and the sea? Answer:');
    const answers = [' penguins', ' eagles', ' small grey rabbits', ' goldfish'];
    const cont = [];
    for (const a of answers) cont.push(await ids(a));
    assert.ok(ctx.length > 12);
    assert.equal(new Set(cont.map((c) => c[0])).size, 4, 'answers differ at their first token');
    const prompt = cont.map((c) => [...ctx, ...c]);
    const body = { model: 'tiny', temperature: 0, max_tokens: 1, logprobs: 1, seed: 1234, echo: true };
    const batch = await postJSON(srv, '/v1/completions', { ...body, prompt });
    assert.equal(batch.status, 200, batch.text);
    assert.equal(batch.json.choices.length, 4);
    // one request at a time: the first reads all, each other keeps ctx - 1
    // tokens (its read starts at the context's last token, whose row scores
    // the answer's first)
    assert.equal(batch.json.usage.prompt_tokens_details.cached_tokens, 3 * (ctx.length - 1));
    for (let i = 0; i < 4; i++) {
      const alone = await postJSON(srv, '/v1/completions', { ...body, prompt: prompt[i], cache_prompt: false });
      assert.equal(alone.status, 200, alone.text);
      assert.equal(alone.json.usage.prompt_tokens_details.cached_tokens, 0);
      const ch = batch.json.choices[i];
      assert.equal(ch.index, i);
      assert.equal(ch.logprobs.token_logprobs.length, prompt[i].length + 1);
      assert.deepEqual(scores(ch), scores(alone.json.choices[0]), `choice ${i}`);
      assert.deepEqual(lmEvalParse(ch, ctx.length), lmEvalParse(alone.json.choices[0], ctx.length));
    }
    // the batch again: every answer was scored before, in the same slot,
    // but only the last one's ids are still there beyond the context
    const again = await postJSON(srv, '/v1/completions', { ...body, prompt });
    assert.equal(again.status, 200, again.text);
    assert.ok(again.json.usage.prompt_tokens_details.cached_tokens >= 4 * (ctx.length - 1));
    for (let i = 0; i < 4; i++)
      assert.deepEqual(scores(again.json.choices[i]), scores(batch.json.choices[i]), `again ${i}`);
  });

  test("vLLM's prompt_logprobs: n = 2 and a larger K than kept", async () => {
    const prompt = await ids('Once upon a time there lived a king who had three daughters, and the youngest');
    const body = { model: 'tiny', prompt, temperature: 0, max_tokens: 1 };
    const cold = await postJSON(srv, '/v1/completions', { ...body, prompt_logprobs: 3, cache_prompt: false });
    assert.equal(cold.status, 200, cold.text);
    const two = await postJSON(srv, '/v1/completions', { ...body, prompt_logprobs: 3, n: 2 });
    assert.equal(two.status, 200, two.text);
    assert.equal(two.json.usage.prompt_tokens_details.cached_tokens, prompt.length - 1);
    for (const ch of two.json.choices)
      assert.deepEqual(ch.prompt_logprobs, cold.json.choices[0].prompt_logprobs);
    // K 5 > the kept 3: read cold, the same numbers as a cold K 5
    const k5 = await postJSON(srv, '/v1/completions', { ...body, prompt_logprobs: 5 });
    assert.equal(k5.json.usage.prompt_tokens_details.cached_tokens, 0);
    const k5cold = await postJSON(srv, '/v1/completions', { ...body, prompt_logprobs: 5, cache_prompt: false });
    assert.deepEqual(k5.json.choices[0].prompt_logprobs, k5cold.json.choices[0].prompt_logprobs);
    // K 2 < the kept 5: from the cache, the cold K 2 numbers
    const k2 = await postJSON(srv, '/v1/completions', { ...body, prompt_logprobs: 2 });
    assert.equal(k2.json.usage.prompt_tokens_details.cached_tokens, prompt.length - 1);
    const k2cold = await postJSON(srv, '/v1/completions', { ...body, prompt_logprobs: 2, cache_prompt: false });
    assert.deepEqual(k2.json.choices[0].prompt_logprobs, k2cold.json.choices[0].prompt_logprobs);
  });
});

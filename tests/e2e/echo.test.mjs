// echo.test.mjs -- scoring prompts (docs/API.md "Scoring prompts"): echo,
// legacy logprobs over the prompt, vLLM's prompt_logprobs, as evaluation
// harnesses send them.
//
//   - lm-evaluation-harness's local-completions payload (plain fetch, token
//     id prompts batched, echo, logprobs 1, max_tokens 1) and its parse:
//     token_logprobs[ctxlen:-1], top_logprobs for greediness;
//   - the legacy shape: null first entry, the token among its top_logprobs,
//     text_offset consistent with the echoed text; max_tokens 0; n > 1;
//     streamed (the prompt is its own first chunk);
//   - prompt_logprobs on completions (per choice) and chat (top level);
//   - bad combinations are 400s naming the param;
//   - the OpenAI SDK's completions.create with echo;
//   - on a real model (make-model tiny, CPU): a prompt token's echoed
//     logprob equals the logprob of the same token generated there.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import OpenAI, { BadRequestError } from 'openai';
import { startServer, postJSON, parseSSE, startTinyModel } from './lib/server.mjs';

const bytes = (s) => Buffer.byteLength(s, 'utf8');

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

// The legacy logprobs object of an echoed choice: every invariant.
function checkLegacy(choice, nPrompt, nGen) {
  const lp = choice.logprobs;
  const n = nPrompt + nGen;
  assert.equal(lp.tokens.length, n);
  assert.equal(lp.token_logprobs.length, n);
  assert.equal(lp.top_logprobs.length, n);
  assert.equal(lp.text_offset.length, n);
  assert.equal(lp.token_logprobs[0], null);
  assert.equal(lp.top_logprobs[0], null);
  let off = 0;
  for (let i = 0; i < n; i++) {
    assert.equal(lp.text_offset[i], off, `text_offset[${i}]`);
    off += bytes(lp.tokens[i]);
    if (i === 0) continue;
    assert.equal(typeof lp.token_logprobs[i], 'number');
    assert.ok(lp.token_logprobs[i] <= 0);
    if (i < nPrompt) // the prompt's tokens are among their own alternatives (N + 1)
      assert.equal(lp.top_logprobs[i][lp.tokens[i]], lp.token_logprobs[i], `top_logprobs[${i}]`);
  }
  assert.equal(lp.tokens.join(''), choice.text);
  assert.equal(off, bytes(choice.text));
}

describe('echo on the sim', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '4', '--sim-decode-tps', '2000', '--sim-tokens', '6', '--ubatch', '5']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test("lm-eval's local-completions payload: batched token prompts, echo, logprobs 1, max_tokens 1", async () => {
    const ctx = [[11, 12, 13, 14, 15, 16, 17], [11, 12, 13, 14, 15, 16, 17]];
    const cont = [[21, 22, 23], [31, 32]];
    const prompt = ctx.map((c, i) => [...c, ...cont[i]]);
    const r = await postJSON(srv, '/v1/completions', {
      model: 'default', prompt, temperature: 0, max_tokens: 1, logprobs: 1, seed: 1234, echo: true,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices.length, 2);
    for (let i = 0; i < 2; i++) {
      const ch = r.json.choices[i];
      assert.equal(ch.index, i);
      assert.equal(ch.finish_reason, 'length');
      checkLegacy(ch, prompt[i].length, 1);
      // the sim's numbers (docs/SIM.md): token x scores -0.75 - 0.5 (x mod 8)
      for (let j = 1; j < prompt[i].length; j++)
        assert.equal(ch.logprobs.token_logprobs[j], -0.75 - 0.5 * (prompt[i][j] % 8));
      const { sum, greedy } = lmEvalParse(ch, ctx[i].length);
      const want = cont[i].reduce((a, x) => a - 0.75 - 0.5 * (x % 8), 0);
      assert.ok(Math.abs(sum - want) < 1e-9, `${sum} vs ${want}`);
      assert.equal(greedy, false);   // the sim ranks its tok1.. words first
    }
    assert.equal(r.json.usage.prompt_tokens, 19);
    assert.equal(r.json.usage.completion_tokens, 2);
  });

  test('max_tokens 0 with echo: the prompt alone, finish_reason length', async () => {
    const r = await postJSON(srv, '/v1/completions', {
      prompt: 'one two three four five six seven', max_tokens: 0, echo: true, logprobs: 2,
    });
    assert.equal(r.status, 200, r.text);
    const ch = r.json.choices[0];
    assert.equal(ch.finish_reason, 'length');
    assert.equal(r.json.usage.completion_tokens, 0);
    checkLegacy(ch, 7, 0);
    // 2 alternatives + the token itself (none of the prompt words is tok1/tok2)
    assert.equal(Object.keys(ch.logprobs.top_logprobs[3]).length, 3);
  });

  test('echo without logprobs: the prompt leads the text; n > 1 each echo', async () => {
    const plain = await postJSON(srv, '/v1/completions', { prompt: 'a b c', max_tokens: 2 });
    const r = await postJSON(srv, '/v1/completions', { prompt: 'a b c', max_tokens: 2, echo: true, n: 2, logprobs: 0 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices.length, 2);
    for (const ch of r.json.choices) {
      assert.ok(ch.text.endsWith(plain.json.choices[0].text), ch.text);
      assert.ok(ch.text.length > plain.json.choices[0].text.length);
      checkLegacy(ch, 3, 2);
    }
    assert.equal(r.json.choices[0].text, r.json.choices[1].text);
    assert.equal(r.json.usage.prompt_tokens, 3);
    const noLp = await postJSON(srv, '/v1/completions', { prompt: 'a b c', max_tokens: 2, echo: true });
    assert.equal(noLp.json.choices[0].text, r.json.choices[0].text);
    assert.equal(noLp.json.choices[0].logprobs, null);
  });

  test('streamed echo: the prompt is its own first chunk, with its logprobs', async () => {
    const body = { prompt: 'one two three four five six', max_tokens: 3, echo: true, logprobs: 1 };
    const whole = await postJSON(srv, '/v1/completions', body);
    const res = await fetch(`${srv.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    assert.equal(res.status, 200);
    const ev = parseSSE(await res.text());
    assert.equal(ev.at(-1).data, '[DONE]');
    const chunks = ev.slice(0, -1).map((e) => JSON.parse(e.data));
    const first = chunks[0].choices[0];
    assert.equal(first.logprobs.tokens.length, 6);
    assert.equal(first.logprobs.token_logprobs[0], null);
    assert.equal(first.text, first.logprobs.tokens.join(''));
    assert.equal(chunks.map((c) => c.choices[0].text).join(''), whole.json.choices[0].text);
    const lp = chunks.filter((c) => c.choices[0].logprobs).flatMap((c) => c.choices[0].logprobs.token_logprobs);
    assert.deepEqual(lp, whole.json.choices[0].logprobs.token_logprobs);
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  });

  test("vLLM's prompt_logprobs: per choice on completions, top level on chat", async () => {
    const ids = (await postJSON(srv, '/tokenize', { content: 'a b c d' })).json.tokens;
    let r = await postJSON(srv, '/v1/completions', { prompt: 'a b c d', max_tokens: 1, prompt_logprobs: 2 });
    assert.equal(r.status, 200, r.text);
    const pl = r.json.choices[0].prompt_logprobs;
    assert.equal(pl.length, 4);
    assert.equal(pl[0], null);
    const base = 1 << 24;   // the sim's tok1 (docs/SIM.md)
    for (let j = 1; j < 4; j++) {
      const e = pl[j];
      assert.equal(Object.keys(e).length, 3);   // the token, then 2 alternatives
      const self = e[String(ids[j])];
      assert.equal(self.rank, (ids[j] % 8) + 2);
      assert.equal(self.logprob, -0.75 - 0.5 * (ids[j] % 8));
      assert.equal(typeof self.decoded_token, 'string');
      assert.deepEqual(e[String(base + 1)], { logprob: -0.5, rank: 1, decoded_token: 'tok1' });
      assert.equal(e[String(base + 2)].rank, 2);
    }
    assert.equal(r.json.choices[0].logprobs, null);   // not asked: prompt_logprobs is apart
    r = await postJSON(srv, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'x y z' }], max_tokens: 1, prompt_logprobs: 0, n: 2,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.prompt_logprobs.length, 3);
    assert.equal(Object.keys(r.json.prompt_logprobs[1]).length, 1);
    assert.equal('prompt_logprobs' in r.json.choices[0], false);
  });

  test('bad combinations are 400s naming the param', async () => {
    const chat = { messages: [{ role: 'user', content: 'x' }] };
    for (const [path, body, param] of [
      ['/v1/chat/completions', { ...chat, echo: true }, 'echo'],
      ['/v1/chat/completions', { ...chat, prompt_logprobs: 21 }, 'prompt_logprobs'],
      ['/v1/completions', { prompt: 'x', echo: true, logprobs: 21 }, 'logprobs'],
      ['/v1/completions', { prompt: 'x', prompt_logprobs: -1 }, 'prompt_logprobs'],
      ['/v1/completions', { prompt: 'x', prompt_logprobs: 2, stream: true }, 'prompt_logprobs'],
    ]) {
      const r = await postJSON(srv, path, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, param);
    }
  });

  test('the OpenAI SDK: completions.create with echo', async () => {
    const r = await client.completions.create({
      model: 'default', prompt: 'the cat sat', echo: true, logprobs: 1, max_tokens: 1, temperature: 0,
    });
    checkLegacy(r.choices[0], 3, 1);
    await assert.rejects(
      client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'x' }], echo: true }),
      (e) => e instanceof BadRequestError && e.param === 'echo');
  });
});

describe('echo on a real model (CPU)', () => {
  let srv, dir;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-echo-', 3, 512, ['--ubatch', '8']));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a prompt token scores what generating it there reports; echoed text is the prompt', async () => {
    const text = 'The quick brown fox jumps over the lazy dog and then some more words follow';
    const tok = await postJSON(srv, '/tokenize', { content: text, model: 'tiny' });
    const ids = tok.json.tokens;
    assert.ok(ids.length > 10);
    const r = await postJSON(srv, '/v1/completions', {
      model: 'tiny', prompt: ids, temperature: 0, max_tokens: 1, logprobs: 1, echo: true, seed: 1,
    });
    assert.equal(r.status, 200, r.text);
    const ch = r.json.choices[0];
    checkLegacy(ch, ids.length, 1);
    assert.ok(ch.text.startsWith(text), ch.text);
    for (const i of [1, 5, ids.length - 1]) {
      const g = await postJSON(srv, '/v1/completions', {
        model: 'tiny', prompt: ids.slice(0, i), temperature: 0, max_tokens: 1, logprobs: 1,
        logit_bias: { [ids[i]]: 100 },
      });
      assert.equal(g.status, 200, g.text);
      const lp = g.json.choices[0].logprobs;
      assert.equal(lp.tokens[0], ch.logprobs.tokens[i]);
      assert.ok(Math.abs(lp.token_logprobs[0] - ch.logprobs.token_logprobs[i]) < 1e-4,
        `token ${i}: generated ${lp.token_logprobs[0]}, echoed ${ch.logprobs.token_logprobs[i]}`);
    }
    // the last entry is the generated token (lm-eval's [:-1] drops it)
    const { sum } = lmEvalParse(ch, 1);
    assert.ok(Number.isFinite(sum) && sum < 0);
  });
});

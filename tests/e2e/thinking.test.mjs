// thinking.test.mjs -- the thinking budget (docs/API.md "Thinking budget")
// through the official OpenAI Node SDK on a real model: make-model's tiny
// preset (random weights; a Qwen-style vocabulary with <think> and
// </think> as tokens, a ChatML template) on the CPU backend. A logit_bias
// of +100 on "<think>" makes every sampled token "<think>": the first
// opens the block, the next N are its reasoning (the text "<think>"), then
// the engine forces "\n</think>\n\n" and the answer (more "<think>" text)
// runs to max_tokens. So reasoning_content and content are known exactly.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startServer, postJSON, STRATA_BIN } from './lib/server.mjs';

const T = '<think>';
const messages = [{ role: 'user', content: 'think about it' }];

describe('thinking budget on a real model', () => {
  let srv, srv2, dir, client, bias;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strata-e2e-thinking-'));
    const model = join(dir, 'tiny.gguf');
    const mk = spawnSync(STRATA_BIN, ['make-model', model, '--preset', 'tiny', '--seed', '3'], { encoding: 'utf8' });
    assert.equal(mk.status, 0, `make-model: ${mk.stderr}`);
    const args = ['--backend', 'cpu', '-m', model, '-a', 'tiny', '--threads', '1', '-c', '512', '--parallel', '2'];
    srv = await startServer(args);
    srv2 = await startServer([...args, '--reasoning-budget', '2']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const tok = await postJSON(srv, '/tokenize', { content: T, with_pieces: true });
    assert.equal(tok.json.tokens.length, 1, tok.text);
    bias = { [tok.json.tokens[0].id]: 100 };
  });
  after(async () => {
    await srv?.stop();
    await srv2?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const body = (extra = {}) => ({ model: 'tiny', messages, max_tokens: 12, temperature: 0, logit_bias: bias, ...extra });

  test('non-stream: the block is cut at exactly N tokens, forced tokens count', async () => {
    const r = await client.chat.completions.create(body({ thinking_budget: 3 }));
    const m = r.choices[0].message;
    assert.equal(m.reasoning_content, T.repeat(3));
    // 1 opening + 3 reasoning + 3 forced ("\n", "</think>", "\n\n") + 5 answer tokens
    assert.equal(m.content, T.repeat(5));
    assert.equal(r.usage.completion_tokens, 12);
    // the 3 reasoning tokens (the tags and the forced blanks are not counted: docs/API.md)
    assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 3);
    assert.equal(r.choices[0].finish_reason, 'length');
  });

  test('stream and n = 2: every choice cut the same way', async () => {
    const stream = await client.chat.completions.create(body({ thinking_token_budget: 4, stream: true, n: 2 }));
    const reasoning = ['', ''], content = ['', ''];
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        reasoning[c.index] += c.delta?.reasoning_content ?? '';
        content[c.index] += c.delta?.content ?? '';
      }
    }
    for (const i of [0, 1]) {
      assert.equal(reasoning[i], T.repeat(4));
      assert.equal(content[i], T.repeat(4));
    }
  });

  test('budget 0: an empty block; no budget: reasoning to max_tokens', async () => {
    let r = await client.chat.completions.create(body({ thinking_budget: 0 }));
    assert.equal(r.choices[0].message.reasoning_content, undefined);
    assert.equal(r.choices[0].message.content, T.repeat(8));
    r = await client.chat.completions.create(body({ thinking_budget: -1 }));
    assert.equal(r.choices[0].message.reasoning_content, T.repeat(11));
    assert.equal(r.choices[0].message.content, '');
  });

  test('with a JSON answer after the block', async () => {
    const r = await client.chat.completions.create(body({
      thinking_budget_tokens: 2, max_tokens: 40, response_format: { type: 'json_object' },
    }));
    const m = r.choices[0].message;
    assert.equal(m.reasoning_content, T.repeat(2));
    assert.ok(m.content.startsWith('{'), m.content);
    if (r.choices[0].finish_reason === 'stop') JSON.parse(m.content);
  });

  test('a template that never thinks: no block before the JSON without a budget', async () => {
    // the tiny ChatML template renders no think tags (Qwen2.5's kind): the
    // "<think>" bias cannot open a block, the document starts at once (llama-server too)
    for (const rf of [{ type: 'json_object' },
      { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'string' } } }]) {
      const r = await client.chat.completions.create(body({ max_tokens: 20, response_format: rf }));
      const m = r.choices[0].message;
      assert.equal(m.reasoning_content, undefined, JSON.stringify(m));
      assert.ok(/^[{"]/.test(m.content), m.content);   // "<think>" only inside a string
    }
  });

  test('--reasoning-budget is the default; the body overrides it', async () => {
    let r = await postJSON(srv2, '/v1/chat/completions', body());
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices[0].message.reasoning_content, T.repeat(2));
    r = await postJSON(srv2, '/v1/chat/completions', body({ thinking_budget: 5 }));
    assert.equal(r.json.choices[0].message.reasoning_content, T.repeat(5));
    r = await postJSON(srv2, '/v1/chat/completions', body({ thinking_budget: -1 }));
    assert.equal(r.json.choices[0].message.reasoning_content, T.repeat(11));
  });

  test('invalid values are 400s naming the field', async () => {
    for (const [extra, param] of [
      [{ thinking_budget: -2 }, 'thinking_budget'],
      [{ thinking_budget: 'lots' }, 'thinking_budget'],
      [{ thinking_token_budget: 1.5 }, 'thinking_token_budget'],
      [{ thinking_budget: 3, thinking_budget_tokens: 4 }, 'thinking_budget_tokens'],
    ]) {
      const r = await postJSON(srv, '/v1/chat/completions', body(extra));
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, param);
    }
    const ok = await postJSON(srv, '/v1/chat/completions', body({ thinking_budget: 3, thinking_budget_tokens: 3 }));
    assert.equal(ok.status, 200, ok.text);
  });
});

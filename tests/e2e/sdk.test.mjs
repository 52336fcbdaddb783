// sdk.test.mjs -- the official OpenAI Node SDK against strata: chat and
// completions, streamed and not, include_usage, and the SDK's own error
// classes for each error status.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { BadRequestError, AuthenticationError, NotFoundError, RateLimitError, APIError } from 'openai';
import { startServer, until } from './lib/server.mjs';

const messages = [{ role: 'user', content: 'say something nice' }];

describe('SDK happy paths', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '2', '--sim-decode-tps', '2000', '--sim-tokens', '5']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('chat.completions.create', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages, max_tokens: 3 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.content, 'tok1 tok2 tok3');
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.usage.completion_tokens, 3);
  });

  test('chat.completions.create with withResponse: x-request-id', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'default', messages, max_tokens: 1 }).withResponse();
    assert.match(response.headers.get('x-request-id'), /^req-/);
    assert.equal(data.id, `chatcmpl-${response.headers.get('x-request-id')}`);
  });

  test('chat stream with include_usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'default', messages, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    let finish = null;
    const ids = new Set();
    for await (const chunk of stream) {
      ids.add(chunk.id);
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.delta?.content ?? '';
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(text, 'tok1 tok2 tok3 tok4 tok5');
    assert.equal(finish, 'stop');
    assert.equal(ids.size, 1);
    assert.equal(usage.completion_tokens, 5);
    assert.equal(usage.total_tokens, usage.prompt_tokens + 5);
  });

  test('chat stream helper (runner) collects the final message', async () => {
    const runner = client.chat.completions.stream({ model: 'default', messages, max_tokens: 2 });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].message.content, 'tok1 tok2');
    assert.equal(final.choices[0].message.role, 'assistant');
  });

  test('completions.create, streamed and not', async () => {
    const r = await client.completions.create({ model: 'default', prompt: 'once upon a time', max_tokens: 2 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices[0].text, 'tok1 tok2');
    assert.equal(r.usage.prompt_tokens, 4);
    const s = await client.completions.create({ model: 'default', prompt: 'x', max_tokens: 3, stream: true });
    let t = '';
    for await (const chunk of s) t += chunk.choices[0]?.text ?? '';
    assert.equal(t, 'tok1 tok2 tok3');
  });

  test('models.list and models.retrieve', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), ['default']);
    const m = await client.models.retrieve('default');
    assert.equal(m.owned_by, 'strata');
  });

  test('n = 2 and logprobs through the SDK', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages, max_tokens: 2, n: 2, logprobs: true, top_logprobs: 1 });
    assert.equal(r.choices.length, 2);
    assert.equal(r.choices[1].logprobs.content.length, 2);
  });

  test('priority through the SDK: extra body field and header', async () => {
    await client.chat.completions.create({ model: 'default', messages, max_tokens: 1, priority: 120 },
      { headers: { 'x-request-id': 'sdk-prio-body' } });
    await client.chat.completions.create({ model: 'default', messages, max_tokens: 1 },
      { headers: { 'x-request-id': 'sdk-prio-hdr', 'X-LlamaSwap-Priority': 'batch' } });
    const act = await (await fetch(`${srv.url}/api/activity`)).json();
    const body = act.find((a) => a.request_id === 'sdk-prio-body');
    const hdr = act.find((a) => a.request_id === 'sdk-prio-hdr');
    assert.equal(body.serial_priority, 120);
    assert.equal(body.serial_band, 'interactive');
    assert.equal(hdr.serial_priority, -100);
    assert.equal(hdr.serial_band, 'batch');
  });
});

describe('SDK error classes', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--api-key', 'k1', '--parallel', '1', '--max-queue', '1', '--sim-decode-tps', '10', '--sim-tokens', '1000']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'k1', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('BadRequestError (400) names the param', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'default', messages: [], max_tokens: 1 }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.status, 400);
      assert.equal(e.param, 'messages');
      assert.equal(e.type, 'invalid_request_error');
      assert.match(e.requestID ?? e.headers?.get?.('x-request-id') ?? '', /^req-/);
      return true;
    });
  });

  test('AuthenticationError (401)', async () => {
    const bad = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: 'default', messages, max_tokens: 1 }), (e) => {
      assert.ok(e instanceof AuthenticationError);
      assert.equal(e.code, 'invalid_api_key');
      return true;
    });
  });

  test('NotFoundError (404) for an unknown model id', async () => {
    // one model served: chat with any "model" runs on it (model_names.test.mjs)
    await assert.rejects(client.models.retrieve('gpt-4o'), (e) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.code, 'model_not_found');
      return true;
    });
  });

  test('RateLimitError (429) when the queue is full', async () => {
    const ctl = new AbortController();
    const hog = () => client.chat.completions.create({ model: 'default', messages, stream: true }, { signal: ctl.signal });
    try {
      const first = await hog();           // holds the only slot
      const second = hog().catch(() => {}); // waits in the only queue place
      await until(async () => /llamaswap_scheduler_queue_depth\{band="normal"\} 1/.test(await (await fetch(`${srv.url}/metrics`, { headers: { authorization: 'Bearer k1' } })).text()), 5000, 'queued');
      await assert.rejects(client.chat.completions.create({ model: 'default', messages, max_tokens: 1 }), (e) => {
        assert.ok(e instanceof RateLimitError);
        assert.equal(e.status, 429);
        assert.equal(e.headers.get('retry-after'), '1');
        return true;
      });
      ctl.abort();
      await second;
      await first.controller?.abort?.();
    } finally {
      ctl.abort();
    }
  });

  test('errors are APIError instances with the OpenAI fields', async () => {
    await assert.rejects(client.completions.create({ model: 'default', prompt: 'x', n: 0 }), (e) => {
      assert.ok(e instanceof APIError);
      assert.equal(e.param, 'n');
      return true;
    });
  });
});

// messages.test.mjs -- POST /v1/messages (Anthropic's Messages API, as
// coding agents such as Claude Code speak it) through the official
// Anthropic TypeScript SDK: non-streamed and streamed answers
// (messages.stream(...).finalMessage()), thinking, text and tool_use blocks,
// a tool_use -> tool_result round trip, count_tokens, the thinking budget
// on a real (tiny, CPU) model, thinking blocks sent back in a tool loop
// (GLM-4.5's template renders them), the priority header, errors the SDK raises
// as its typed errors (Anthropic's error shape), and a client that leaves
// mid-stream, and SSE keep-alives (docs/API.md "/v1/messages").
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import {
  startServer, postJSON, getJSON, until, parseSSE, startTinyModel, startPresetModel,
} from './lib/server.mjs';
import { checkPriority, describeLeaveMidStream } from './lib/translated.mjs';

const postStream = (srv, body) => fetch(`${srv.url}/v1/messages`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

const REPLY = '<think>\nThe user wants the weather.\n</think>\n\n'
  + 'Let me check.\n'
  + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const tools = [{ name: 'get_weather', description: 'weather of a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
const TOOLU = /^toolu_[A-Za-z0-9]{24}$/;
// A request's whole input, as Anthropic counts it (input_tokens leaves out cache reads).
const inputOf = (u) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;

function checkMessage(m) {
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.model, 'default');
  assert.equal(m.stop_reason, 'tool_use');
  assert.equal(m.stop_sequence, null);
  assert.equal(m.content.length, 3);
  const [th, text, use] = m.content;
  assert.equal(th.type, 'thinking');
  assert.equal(th.thinking, 'The user wants the weather.');
  assert.equal(text.type, 'text');
  assert.equal(text.text, 'Let me check.');
  assert.equal(use.type, 'tool_use');
  assert.match(use.id, TOOLU);
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, { city: 'Paris' });
  assert.ok(m.usage.input_tokens > 0);
  assert.ok(m.usage.output_tokens > 0);
  assert.equal(typeof m.usage.cache_read_input_tokens, 'number');
  assert.equal(m.usage.cache_creation_input_tokens, 0);
}

describe('the sim writes thinking, text and a tool call', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '4', '--sim-decode-tps', '2000', '--sim-reply', REPLY]);
    client = new Anthropic({ baseURL: srv.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('non-stream: thinking, text and tool_use blocks, usage', async () => {
    const m = await client.messages.create({ model: 'default', max_tokens: 200, tools,
      system: 'You are terse.', metadata: { user_id: 'u1' },
      messages: [{ role: 'user', content: 'weather in Paris?' }] });
    checkMessage(m);
  });

  test('stream: the event sequence, and the SDK helper accumulates the same message', async () => {
    const s = client.messages.stream({ model: 'default', max_tokens: 200, tools,
      messages: [{ role: 'user', content: 'weather?' }] });
    const types = [];
    let text = '';
    s.on('streamEvent', (ev) => { types.push(ev.type); });
    s.on('text', (t) => { text += t; });
    const m = await s.finalMessage();
    checkMessage(m);
    assert.equal(text, 'Let me check.');
    assert.equal(types[0], 'message_start');
    assert.equal(types.at(-2), 'message_delta');
    assert.equal(types.at(-1), 'message_stop');
    assert.equal(types.filter((t) => t === 'content_block_start').length, 3);
    assert.equal(types.filter((t) => t === 'content_block_stop').length, 3);
    // raw wire: event lines, no [DONE]
    const res = await fetch(`${srv.url}/v1/messages`, { method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'default', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'x' }] }) });
    const raw = await res.text();
    assert.ok(raw.startsWith('event: message_start\ndata: {'), raw.slice(0, 80));
    assert.ok(!raw.includes('[DONE]'));
    assert.ok(raw.trimEnd().endsWith('data: {"type":"message_stop"}'));
  });

  test('tool round trip: tool_use goes back with a tool_result; count_tokens agrees', async () => {
    const first = await client.messages.create({ model: 'default', max_tokens: 200, tools,
      messages: [{ role: 'user', content: 'weather in Paris?' }] });
    const use = first.content.find((b) => b.type === 'tool_use');
    const messages = [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: first.content },   // thinking, text, tool_use as a client sends them back
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: use.id, content: JSON.stringify({ temp_c: 21, sky: 'clear and sunny' }) },
        { type: 'text', text: 'and tomorrow?' },
      ] },
    ];
    const second = await client.messages.create({ model: 'default', max_tokens: 200, tools, messages });
    assert.equal(second.type, 'message');
    assert.ok(inputOf(second.usage) > inputOf(first.usage),
      `${inputOf(second.usage)} <= ${inputOf(first.usage)}`);
    const counted = await client.messages.countTokens({ model: 'default', tools, messages });
    assert.equal(counted.input_tokens, inputOf(second.usage));
    // tool_choice none: the reply is not parsed for calls
    const none = await client.messages.create({ model: 'default', max_tokens: 200, tools, messages,
      tool_choice: { type: 'none' } });
    assert.ok(none.content.every((b) => b.type !== 'tool_use'));
    assert.equal(none.stop_reason, 'end_turn');
  });

  test('max_tokens: stop_reason max_tokens (stream and not)', async () => {
    const m = await client.messages.create({ model: 'default', max_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(m.stop_reason, 'max_tokens');
    assert.equal(m.usage.output_tokens, 3);
    const f = await client.messages.stream({ model: 'default', max_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.equal(f.stop_reason, 'max_tokens');
    assert.equal(f.usage.output_tokens, 3);
  });

  test('errors: Anthropic\'s shape; the SDK raises its typed errors naming the Messages field', async () => {
    const msgs = [{ role: 'user', content: 'x' }];
    const bad = [
      [{ messages: msgs }, /max_tokens/],
      [{ max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }, /text only/],
      [{ max_tokens: 5, messages: msgs, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, /web_search_20250305/],
      [{ max_tokens: 5, messages: msgs, stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, /stop_sequences/],
      [{ max_tokens: 5, messages: msgs, thinking: { type: 'enabled' } }, /thinking\.budget_tokens/],
    ];
    for (const [body, re] of bad) {
      await assert.rejects(client.messages.create({ model: 'default', ...body }), (err) => {
        assert.ok(err instanceof Anthropic.BadRequestError, `${JSON.stringify(body)}: ${err}`);
        assert.equal(err.status, 400);
        assert.equal(err.error.type, 'error');
        assert.equal(err.error.error.type, 'invalid_request_error');
        assert.match(err.error.error.message, re);
        return true;
      });
    }
    await assert.rejects(client.models.retrieve('nope'), (err) => {
      assert.ok(err instanceof Anthropic.NotFoundError, String(err));
      assert.equal(err.error.error.type, 'not_found_error');
      return true;
    });
    // bad JSON, and count_tokens' errors, in the same shape
    const res = await fetch(`${srv.url}/v1/messages`, { method: 'POST',
      headers: { 'content-type': 'application/json' }, body: '{nope' });
    assert.equal(res.status, 400);
    const j = await res.json();
    assert.equal(j.type, 'error');
    assert.equal(j.error.type, 'invalid_request_error');
    const ct = await postJSON(srv, '/v1/messages/count_tokens', { messages: {} });
    assert.equal(ct.status, 400);
    assert.equal(ct.json.error.type, 'invalid_request_error');
    // other endpoints keep OpenAI's shape
    const chat = await postJSON(srv, '/v1/chat/completions', { messages: [] });
    assert.equal(chat.json.error.type, 'invalid_request_error');
    assert.equal(chat.json.type, undefined);
  });

  test('priority: the header and the body field as for chat', async () => {
    await checkPriority(srv, async (headers, extra) => {
      if (!extra.priority) {   // the header, through the SDK
        const m = await client.messages.create({ model: 'default', max_tokens: 1,
          messages: [{ role: 'user', content: 'x' }] }, { headers });
        assert.equal(m.id, `msg_${headers['x-request-id']}`);
        return;
      }
      const r = await postJSON(srv, '/v1/messages', { max_tokens: 1, ...extra,
        messages: [{ role: 'user', content: 'x' }] }, headers);
      assert.equal(r.status, 200);
    }, ['msg-prio-h', 'msg-prio-b']);
  });
});

describeLeaveMidStream({
  path: '/v1/messages', firstEvent: 'message_start',
  body: { max_tokens: 100000, stream: true, messages: [{ role: 'user', content: 'hello' }] },
  again: { max_tokens: 2, messages: [{ role: 'user', content: 'again' }] },
  text: (j) => j.content[0].text,
});

// The thinking budget on a real model (as thinking.test.mjs): make-model's
// tiny preset has <think> and </think> as tokens and a ChatML template; a
// logit_bias (strata's chat extension, passed on) of +100 on "<think>"
// makes every sampled token "<think>", so the blocks are known exactly.
describe('thinking budget on a real (tiny) model', () => {
  const T = '<think>';
  let srv, dir, client, bias;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-msg-', 3, 512));
    client = new Anthropic({ baseURL: srv.url, apiKey: 'unused', maxRetries: 0 });
    const tok = await postJSON(srv, '/tokenize', { content: T, with_pieces: true });
    assert.equal(tok.json.tokens.length, 1, tok.text);
    bias = { [tok.json.tokens[0].id]: 100 };
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('thinking.budget_tokens cuts the thinking block at exactly N tokens', async () => {
    const body = { model: 'tiny', max_tokens: 12, temperature: 0, logit_bias: bias,
      thinking: { type: 'enabled', budget_tokens: 3 }, messages: [{ role: 'user', content: 'think about it' }] };
    const m = await client.messages.create(body);
    assert.equal(m.content[0].type, 'thinking');
    assert.equal(m.content[0].thinking, T.repeat(3));
    // 1 opening + 3 reasoning + 3 forced ("\n", "</think>", "\n\n") + 5 answer tokens
    assert.equal(m.content[1].type, 'text');
    assert.equal(m.content[1].text, T.repeat(5));
    assert.equal(m.usage.output_tokens, 12);
    assert.equal(m.stop_reason, 'max_tokens');
    const f = await client.messages.stream(body).finalMessage();
    assert.deepEqual(f.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(f.content[0].thinking, T.repeat(3));
    assert.equal(f.content[1].text, T.repeat(5));
    // count_tokens on the real template
    const c = await client.messages.countTokens({ model: 'tiny', messages: body.messages });
    assert.equal(c.input_tokens, inputOf(m.usage));
  });

  // Prefill: the reply continues the last assistant turn, so it equals a
  // plain completion of the rendered prompt followed by that text (greedy,
  // "<think>" banned so no block is split out of either).
  test('a last assistant turn is continued (and chat\'s continue_final_message)', async () => {
    const ban = { [Object.keys(bias)[0]]: -100 };
    const user = { role: 'user', content: 'name a color' };
    const body = { model: 'tiny', max_tokens: 6, temperature: 0, logit_bias: ban,
      messages: [user, { role: 'assistant', content: 'The color is' }] };
    const m = await client.messages.create(body);
    const text = m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const gen = await postJSON(srv, '/apply-template', { messages: [user] });
    assert.equal(gen.status, 200, gen.text);
    const plain = await postJSON(srv, '/v1/completions', { model: 'tiny', max_tokens: 6,
      temperature: 0, logit_bias: ban, prompt: gen.json.prompt + 'The color is' });
    assert.equal(plain.status, 200, plain.text);
    assert.equal(text, plain.json.choices[0].text);
    assert.equal(inputOf(m.usage), plain.json.usage.prompt_tokens);
    const c = await client.messages.countTokens({ model: 'tiny', messages: body.messages });
    assert.equal(c.input_tokens, inputOf(m.usage));
    const chat = await postJSON(srv, '/v1/chat/completions', { model: 'tiny', max_tokens: 6,
      temperature: 0, logit_bias: ban, messages: body.messages, continue_final_message: true });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.json.choices[0].message.content, text);
    // without the flag as well: llama-server's assistant prefill (--prefill-assistant)
    const dflt = await postJSON(srv, '/v1/chat/completions', { model: 'tiny', max_tokens: 6,
      temperature: 0, logit_bias: ban, messages: body.messages });
    assert.equal(dflt.status, 200, dflt.text);
    assert.equal(dflt.json.choices[0].message.content, text);
    // continue_final_message false: the assistant turn is history and a new turn follows
    const fresh = await postJSON(srv, '/v1/chat/completions', { model: 'tiny', max_tokens: 6,
      temperature: 0, logit_bias: ban, messages: body.messages, continue_final_message: false });
    assert.ok(fresh.json.usage.prompt_tokens > plain.json.usage.prompt_tokens, fresh.text);
  });
});

// A coding agent sends the assistant's thinking blocks back in a tool loop.
// GLM-4.5's template (like Qwen3's) renders the reasoning of the turns after
// the last user query, so the block must reach the template as that turn's
// reasoning_content: the prompt then is what the model generated and the
// prefix cache holds across the loop. glm-tiny: GLM-4.5's template on a
// toy model; max_tokens 1, only the prompt counts.
describe('thinking blocks go back as the turn\'s reasoning (glm-tiny)', () => {
  let srv, dir, client;
  const THOUGHT = 'The user wants the weather in Paris.';
  before(async () => {
    ({ srv, dir } = await startPresetModel('strata-msg-glm-', 'glm-tiny', 3, 2048));
    client = new Anthropic({ baseURL: srv.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const loop = (assistant) => [
    { role: 'user', content: 'weather in Paris?' },
    { role: 'assistant', content: assistant },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
  ];
  const use = { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } };
  const chatTurn = (reasoning, key = 'reasoning_content') => [
    { role: 'user', content: 'weather in Paris?' },
    { role: 'assistant', content: '', ...(reasoning === undefined ? {} : { [key]: reasoning }),
      tool_calls: [{ id: 'toolu_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
  ];
  const chatTools = tools.map((t) => ({ type: 'function',
    function: { name: t.name, description: t.description, parameters: t.input_schema } }));

  test('the thinking block is rendered as chat\'s reasoning_content; a redacted one is not', async () => {
    const tpl = await postJSON(srv, '/apply-template', { messages: chatTurn(THOUGHT), tools: chatTools });
    assert.equal(tpl.status, 200, tpl.text);
    assert.ok(tpl.json.prompt.includes(THOUGHT), tpl.json.prompt);
    const prompt = async (msgs) => inputOf((await client.messages.create({ model: 'glm-tiny',
      max_tokens: 1, temperature: 0, tools, messages: msgs })).usage);
    const chat = async (msgs) => (await postJSON(srv, '/v1/chat/completions', { model: 'glm-tiny',
      max_tokens: 1, temperature: 0, tools: chatTools, messages: msgs })).json.usage.prompt_tokens;
    const withThought = await prompt(loop([{ type: 'thinking', thinking: THOUGHT, signature: '' }, use]));
    assert.equal(withThought, await chat(chatTurn(THOUGHT)));
    assert.equal(withThought, await chat(chatTurn(THOUGHT, 'reasoning')));   // vLLM's name
    const redacted = await prompt(loop([{ type: 'redacted_thinking', data: 'opaque' }, use]));
    assert.equal(redacted, await chat(chatTurn(undefined)));
    assert.ok(withThought > redacted, `${withThought} <= ${redacted}`);
    const counted = await client.messages.countTokens({ model: 'glm-tiny', tools,
      messages: loop([{ type: 'thinking', thinking: THOUGHT, signature: 'sig' }, use]) });
    assert.equal(counted.input_tokens, withThought);
  });
});

// SSE keep-alive comments (--sse-keepalive) while a stream waits behind
// another request (one engine, no --batch): Anthropic's SDK skips them; a
// failure after the headers (a model load that fails) is an in-stream
// `error` event in Anthropic's shape, which the SDK raises.
describe('keep-alives and a failure after the headers', () => {
  let srv, dir, client;
  const CONFIG = 'models:\n  - name: alpha\n    preload: true\n  - name: broken\n    path: "fail:disk on fire"\n';
  const blocker = async () => {
    const res = await postStream(srv, { model: 'alpha', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'x' }] });
    const done = res.text();
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'decoding'), 5000, 'decoding');
    return { done };   // (not the promise itself: awaiting blocker() would wait for its end)
  };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strata-msg-ka-'));
    writeFileSync(join(dir, 'models.yaml'), CONFIG);
    srv = await startServer(['--config', join(dir, 'models.yaml'), '--sim-decode-tps', '20',
      '--sim-tokens', '100000', '--sse-keepalive', '1']);
    client = new Anthropic({ baseURL: srv.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('keep-alive comments before the first event; the SDK streams normally', async () => {
    let { done } = await blocker();
    const res = await postStream(srv, { model: 'alpha', max_tokens: 3, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 200);
    const blocks = parseSSE(await res.text()).map((e) => e.block);
    await done;
    assert.equal(blocks[0], ': keep-alive');
    const first = blocks.findIndex((b) => !b.startsWith(':'));
    assert.ok(blocks[first].startsWith('event: message_start\n'), blocks[first]);
    ({ done } = await blocker());
    const m = await client.messages.stream({ model: 'alpha', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.equal(m.content[0].text, 'tok1 tok2 tok3 tok4');
    assert.equal(m.stop_reason, 'max_tokens');
    await done;
  });

  test('a model load that fails after the headers: an error event the SDK raises', async () => {
    const { done } = await blocker();
    await assert.rejects(client.messages.stream({ model: 'broken', max_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }] }).finalMessage(), (err) => {
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.equal(err.status, undefined);   // in the stream, not an HTTP status
      assert.equal(err.error.type, 'error');
      assert.equal(err.error.error.type, 'overloaded_error');
      assert.match(err.error.error.message, /disk on fire/);
      return true;
    });
    await done;
    // before the headers (nothing queued ahead): a plain 503 in Anthropic's shape
    const r = await postJSON(srv, '/v1/messages', { model: 'broken', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.status, 503);
    assert.equal(r.json.error.type, 'overloaded_error');
  });
});

describe('API keys as the Anthropic SDK sends them (x-api-key)', () => {
  let srv;
  before(async () => { srv = await startServer(['--api-key', 'k-anthropic', '--sim-decode-tps', '2000']); });
  after(async () => { await srv.stop(); });

  test('the right key in x-api-key is enough; a wrong one is a 401 the SDK raises', async () => {
    const ask = { model: 'default', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] };
    const good = new Anthropic({ baseURL: srv.url, apiKey: 'k-anthropic', maxRetries: 0 });
    const m = await good.messages.create(ask);
    assert.equal(m.type, 'message');
    const bad = new Anthropic({ baseURL: srv.url, apiKey: 'k-wrong', maxRetries: 0 });
    await assert.rejects(bad.messages.create(ask), (err) => {
      assert.ok(err instanceof Anthropic.AuthenticationError, String(err));
      assert.equal(err.error.error.type, 'authentication_error');
      return true;
    });
  });
});

describe('a stop sequence ends the reply', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--sim-decode-tps', '2000', '--sim-tokens', '8']);
    client = new Anthropic({ baseURL: srv.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  const ask = { model: 'default', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }],
    stop_sequences: ['tok9', ' tok3'] };

  test('stop_reason stop_sequence names the string, streamed and not', async () => {
    const m = await client.messages.create(ask);
    assert.equal(m.content[0].text, 'tok1 tok2');
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, ' tok3');
    const s = await client.messages.stream(ask).finalMessage();
    assert.equal(s.stop_reason, 'stop_sequence');
    assert.equal(s.stop_sequence, ' tok3');
    // no stop string met: end_turn (eos) or max_tokens, stop_sequence null
    const n = await client.messages.create({ ...ask, stop_sequences: ['tok99'] });
    assert.notEqual(n.stop_reason, 'stop_sequence');
    assert.equal(n.stop_sequence, null);
  });
});

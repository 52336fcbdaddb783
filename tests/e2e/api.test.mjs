// api.test.mjs -- the OpenAI-compatible API over raw HTTP (fetch): bodies,
// the SSE bytes line by line, include_usage, n > 1, logprobs shapes, token
// prompts, x-request-id, and the llama-server style endpoints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJSON, getJSON, parseSSE, chatBody } from './lib/server.mjs';

let srv;
before(async () => { srv = await startServer(['--batch', '--parallel', '4', '--sim-decode-tps', '2000', '--sim-tokens', '6']); });
after(async () => { await srv.stop(); });

test('chat completion, not streamed: OpenAI shape', async () => {
  const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 4 }));
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^application\/json/);
  const b = r.json;
  assert.equal(b.object, 'chat.completion');
  assert.match(b.id, /^chatcmpl-/);
  assert.equal(typeof b.created, 'number');
  assert.equal(b.model, 'default');
  assert.equal(b.choices.length, 1);
  assert.equal(b.choices[0].index, 0);
  assert.equal(b.choices[0].message.role, 'assistant');
  assert.equal(b.choices[0].message.content, 'tok1 tok2 tok3 tok4');
  assert.equal(b.choices[0].finish_reason, 'length');
  assert.equal(b.usage.prompt_tokens, 4);
  assert.equal(b.usage.completion_tokens, 4);
  assert.equal(b.usage.total_tokens, 8);
});

test('max_completion_tokens wins over max_tokens; default length ends with stop', async () => {
  let r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 5, max_completion_tokens: 2 }));
  assert.equal(r.json.choices[0].message.content, 'tok1 tok2');
  r = await postJSON(srv, '/v1/chat/completions', chatBody());
  assert.equal(r.json.choices[0].finish_reason, 'stop');
  assert.equal(r.json.usage.completion_tokens, 6);
});

test('stop strings are honoured', async () => {
  const r = await postJSON(srv, '/v1/chat/completions', chatBody({ stop: [' tok3'] }));
  assert.equal(r.status, 200);
  assert.equal(r.json.choices[0].message.content, 'tok1 tok2');
  assert.equal(r.json.choices[0].finish_reason, 'stop');
});

test('chat stream: SSE bytes line by line, role first, one id, finish last, [DONE]', async () => {
  const res = await fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ max_tokens: 3, stream: true })),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  assert.ok(res.headers.get('x-request-id'));
  const text = await res.text();
  // every event is exactly one "data: " line and a blank line
  const lines = text.split('\n');
  assert.equal(lines.at(-1), '');
  for (let i = 0; i < lines.length - 1; i += 2) {
    assert.match(lines[i], /^data: /, `line ${i}: ${lines[i]}`);
    assert.equal(lines[i + 1], '', `line ${i + 1} must be blank`);
  }
  const ev = parseSSE(text);
  assert.equal(ev.at(-1).data, '[DONE]');
  const chunks = ev.slice(0, -1).map((e) => JSON.parse(e.data));
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: null });
  const ids = new Set(chunks.map((c) => c.id));
  assert.equal(ids.size, 1);
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.model, 'default');
    assert.equal('usage' in c, false, 'no usage key without include_usage');
  }
  const content = chunks.map((c) => c.choices[0].delta.content ?? '').join('');
  assert.equal(content, 'tok1 tok2 tok3');
  const finishes = chunks.map((c) => c.choices[0].finish_reason);
  assert.deepEqual(finishes.slice(0, -1).filter((f) => f !== null), []);
  assert.equal(finishes.at(-1), 'length');
});

test('stream_options.include_usage: usage null on chunks, then one usage chunk with choices []', async () => {
  const res = await fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({
      messages: [{ role: 'user', content: 'usage counts these words' }],
      max_tokens: 2, stream: true, stream_options: { include_usage: true },
    })),
  });
  const ev = parseSSE(await res.text());
  assert.equal(ev.at(-1).data, '[DONE]');
  const chunks = ev.slice(0, -1).map((e) => JSON.parse(e.data));
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } });
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'length');
});

test('legacy completions: string prompt, streamed and not', async () => {
  let r = await postJSON(srv, '/v1/completions', { model: 'default', prompt: 'one two three', max_tokens: 3 });
  assert.equal(r.status, 200);
  assert.equal(r.json.object, 'text_completion');
  assert.match(r.json.id, /^cmpl-/);
  assert.equal(r.json.choices[0].text, 'tok1 tok2 tok3');
  assert.equal(r.json.choices[0].logprobs, null);
  assert.equal(r.json.usage.prompt_tokens, 3);
  const res = await fetch(`${srv.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'one two', max_tokens: 2, stream: true }),
  });
  const ev = parseSSE(await res.text());
  assert.equal(ev.at(-1).data, '[DONE]');
  const chunks = ev.slice(0, -1).map((e) => JSON.parse(e.data));
  for (const c of chunks) assert.equal(c.object, 'text_completion');
  assert.equal(chunks.map((c) => c.choices[0].text).join(''), 'tok1 tok2');
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
});

test('completions: array of prompts and token prompts', async () => {
  const r = await postJSON(srv, '/v1/completions', { prompt: ['a b', 'c d e'], max_tokens: 1 });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.choices.map((c) => c.index), [0, 1]);
  assert.equal(r.json.usage.prompt_tokens, 5);
  const t = await postJSON(srv, '/v1/completions', { prompt: [5, 6, 7], max_tokens: 1 });
  assert.equal(t.status, 200);
  assert.equal(t.json.usage.prompt_tokens, 3);
  const tt = await postJSON(srv, '/v1/completions', { prompt: [[5, 6], [7]], max_tokens: 1 });
  assert.equal(tt.json.choices.length, 2);
});

test('n > 1: choices merged (and indexed chunks when streamed)', async () => {
  const r = await postJSON(srv, '/v1/chat/completions', chatBody({ n: 3, max_tokens: 2 }));
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.choices.map((c) => c.index), [0, 1, 2]);
  assert.equal(r.json.usage.prompt_tokens, 4, 'the prompt counts once');
  assert.equal(r.json.usage.completion_tokens, 6);
  const res = await fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chatBody({ n: 2, max_tokens: 2, stream: true })),
  });
  const ev = parseSSE(await res.text());
  const chunks = ev.slice(0, -1).map((e) => JSON.parse(e.data));
  for (const idx of [0, 1]) {
    const mine = chunks.filter((c) => c.choices[0].index === idx);
    assert.equal(mine[0].choices[0].delta.role, 'assistant');
    assert.equal(mine.at(-1).choices[0].finish_reason, 'length');
    assert.equal(mine.map((c) => c.choices[0].delta.content ?? '').join(''), 'tok1 tok2');
  }
});

test('logprobs: chat shape and legacy shape', async () => {
  const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 2, logprobs: true, top_logprobs: 2 }));
  assert.equal(r.status, 200);
  const content = r.json.choices[0].logprobs.content;
  assert.equal(content.length, 2);
  for (const e of content) {
    assert.equal(typeof e.token, 'string');
    assert.equal(typeof e.logprob, 'number');
    assert.ok(Array.isArray(e.bytes));
    assert.ok(Array.isArray(e.top_logprobs));
  }
  const l = await postJSON(srv, '/v1/completions', { prompt: 'x y', max_tokens: 2, logprobs: 1 });
  const lp = l.json.choices[0].logprobs;
  assert.equal(lp.tokens.length, 2);
  assert.equal(lp.token_logprobs.length, 2);
  assert.equal(lp.top_logprobs.length, 2);
  assert.deepEqual(lp.text_offset.length, 2);
});

test('x-request-id: echoed when sane, generated otherwise, used as the completion id', async () => {
  let r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), { 'x-request-id': 'my-req.42' });
  assert.equal(r.headers.get('x-request-id'), 'my-req.42');
  assert.equal(r.json.id, 'chatcmpl-my-req.42');
  r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), { 'x-request-id': 'bad id with spaces' });
  assert.match(r.headers.get('x-request-id'), /^req-[0-9a-f]{24}$/);
  const h = await getJSON(srv, '/health');
  assert.match(h.headers.get('x-request-id'), /^req-/);
  const e = await getJSON(srv, '/nowhere');
  assert.match(e.headers.get('x-request-id'), /^req-/);
});

test('unknown fields are ignored, null counts as absent', async () => {
  const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1, frobnicate: { x: 1 }, stop: null, seed: null, user: 'u1', tools: [], chat_template_kwargs: { enable_thinking: false } }));
  assert.equal(r.status, 200);
});

test('GET /v1/models and /v1/models/{id}', async () => {
  const r = await getJSON(srv, '/v1/models');
  assert.equal(r.status, 200);
  assert.equal(r.json.object, 'list');
  const m = r.json.data[0];
  assert.equal(m.id, 'default');
  assert.equal(m.object, 'model');
  assert.equal(m.owned_by, 'strata');
  assert.equal(typeof m.created, 'number');
  assert.equal(m.strata.backend, 'sim');
  assert.equal(m.strata.state, 'loaded');
  assert.deepEqual(m.strata.aliases, []);
  assert.deepEqual(m.strata.engines, [0]);
  assert.equal(m.strata.reason, undefined);
  const one = await getJSON(srv, '/v1/models/default');
  assert.equal(one.json.id, 'default');
  const none = await getJSON(srv, '/v1/models/nope');
  assert.equal(none.status, 404);
  assert.equal(none.json.error.code, 'model_not_found');
});

test('GET /health when ready', async () => {
  const r = await getJSON(srv, '/health');
  assert.equal(r.status, 200);
  assert.deepEqual(r.json, { status: 'ok' });
});

test('GET /slots lists every slot', async () => {
  const r = await getJSON(srv, '/slots');
  assert.equal(r.status, 200);
  assert.equal(r.json.length, 4);
  for (const s of r.json) {
    assert.equal(s.engine, 0);
    assert.ok(['idle', 'admitted', 'reading', 'parked', 'decoding'].includes(s.state));
    assert.equal(s.n_ctx, 4096);
    assert.equal(s.model, 'default');
  }
});

test('GET /api/activity: records newest last, limit', async () => {
  await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), { 'x-request-id': 'act-1' });
  await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), { 'x-request-id': 'act-2' });
  const r = await getJSON(srv, '/api/activity?limit=2');
  assert.equal(r.status, 200);
  assert.equal(r.json.length, 2);
  assert.deepEqual(r.json.map((a) => a.request_id), ['act-1', 'act-2']);
  const a = r.json[1];
  for (const k of ['serial_priority', 'serial_band', 'serial_score', 'serial_queue_wait_ms', 'request_id', 'model', 'engine', 'slot', 'prompt_tokens', 'give_ways', 'ttft_ms', 'total_ms', 'outcome', 'swapped', 'swap_from', 'load_ms', 'mtp_drafted', 'mtp_accepted'])
    assert.ok(k in a, `activity record has ${k}`);
  assert.equal(a.model, 'default');
  assert.equal(a.serial_band, 'normal');
  assert.equal(a.outcome, 'completed');
  assert.equal(a.prompt_tokens, 4);
  // the one model was loaded at start: no swap for this request
  assert.equal(a.swapped, false);
  assert.equal(a.swap_from, null);
  assert.equal(a.load_ms, 0);
  assert.equal(a.mtp_drafted, 0);
  const bad = await getJSON(srv, '/api/activity?limit=abc');
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'limit');
});

test('POST /tokenize, /detokenize, /apply-template (llama-server shapes)', async () => {
  let r = await postJSON(srv, '/tokenize', { content: 'hello world' });
  assert.equal(r.status, 200);
  assert.equal(r.json.tokens.length, 2);
  assert.ok(r.json.tokens.every(Number.isInteger));
  const ids = r.json.tokens;
  r = await postJSON(srv, '/tokenize', { content: 'hello world', with_pieces: true });
  assert.deepEqual(r.json.tokens.map((t) => t.id), ids);
  assert.ok(r.json.tokens.every((t) => typeof t.piece === 'string'));
  r = await postJSON(srv, '/detokenize', { tokens: [16777217, 16777218] });
  assert.equal(r.status, 200);
  assert.equal(r.json.content, 'tok1 tok2');
  r = await postJSON(srv, '/apply-template', { messages: [{ role: 'user', content: 'hi there' }] });
  assert.equal(r.status, 200);
  assert.equal(typeof r.json.prompt, 'string');
  assert.match(r.json.prompt, /hi there/);
  r = await postJSON(srv, '/tokenize', { content: 5 });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'content');
  r = await postJSON(srv, '/detokenize', { tokens: ['a'] });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'tokens');
});

test('HEAD on a GET route answers without a body', async () => {
  const r = await fetch(`${srv.url}/health`, { method: 'HEAD' });
  assert.equal(r.status, 200);
  assert.equal(await r.text(), '');
});

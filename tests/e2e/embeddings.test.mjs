// embeddings.test.mjs -- POST /v1/embeddings (docs/API.md "/v1/embeddings")
// on the sim, whose made-up vector is a function of the last prompt token
// and its position (docs/SIM.md), through the official OpenAI Node SDK and
// raw fetch:
//   - a string and an array through the SDK, which asks for base64 by
//     default and decodes it: the same numbers as encoding_format "float";
//   - unit length, input order, usage; dimensions (Matryoshka) truncates
//     and renormalizes;
//   - token-id inputs; /embeddings without /v1; the priority header;
//   - 400s in OpenAI's error shape naming the field (empty string,
//     dimensions out of range, too long a prompt);
//   - a client that leaves a call of 300 items mid-way: every item still
//     queued leaves the queue at once, the slots come back, nothing runs on
//     (more items than the 64 the cancel once handled).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { BadRequestError } from 'openai';
import { startServer, postJSON, getJSON, metric, metricsText, until } from './lib/server.mjs';

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('/v1/embeddings on the sim', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '2', '--ctx-size', '64']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('a string through the SDK (base64 by default, decoded): unit length', async () => {
    const r = await client.embeddings.create({ model: 'default', input: 'hello embedding world' });
    assert.equal(r.object, 'list');
    assert.equal(r.model, 'default');
    assert.equal(r.data.length, 1);
    assert.equal(r.data[0].object, 'embedding');
    assert.equal(r.data[0].index, 0);
    const v = r.data[0].embedding;
    assert.ok(Array.isArray(v));
    assert.equal(v.length, 64);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5, `norm ${norm(v)}`);
    assert.ok(r.usage.prompt_tokens >= 3);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
    // the same input as floats: exactly the same numbers (float32 both ways)
    const f = await client.embeddings.create({ model: 'default', input: 'hello embedding world', encoding_format: 'float' });
    assert.deepEqual(f.data[0].embedding.map((x) => Math.fround(x)), v);
  });

  test('an array: one vector per item, in input order', async () => {
    const input = ['alpha beta', 'gamma delta epsilon', 'zeta beta', 'alpha beta'];
    const r = await client.embeddings.create({ model: 'default', input });
    assert.equal(r.data.length, 4);
    r.data.forEach((d, i) => assert.equal(d.index, i));
    // the sim's vector depends on the last word and its position only
    assert.deepEqual(r.data[0].embedding, r.data[3].embedding);
    assert.deepEqual(r.data[0].embedding, r.data[2].embedding);
    assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
    const one = await client.embeddings.create({ model: 'default', input: 'gamma delta epsilon' });
    assert.deepEqual(one.data[0].embedding, r.data[1].embedding);
  });

  test('more items than a completion has choices (100): all of them, in order', async () => {
    const input = Array.from({ length: 100 }, (_, i) => `item number w${i}`);
    const r = await client.embeddings.create({ model: 'default', input, encoding_format: 'float' });
    assert.equal(r.data.length, 100);
    r.data.forEach((d, i) => assert.equal(d.index, i));
    const last = await client.embeddings.create({ model: 'default', input: input[99], encoding_format: 'float' });
    assert.deepEqual(last.data[0].embedding, r.data[99].embedding);
    assert.notDeepEqual(r.data[98].embedding, r.data[99].embedding);
  });

  test('dimensions: the first N, renormalized', async () => {
    const full = (await client.embeddings.create({ model: 'default', input: 'matryoshka doll', encoding_format: 'float' })).data[0].embedding;
    const r = await client.embeddings.create({ model: 'default', input: 'matryoshka doll', dimensions: 16 });
    const v = r.data[0].embedding;
    assert.equal(v.length, 16);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5);
    const head = full.slice(0, 16), n = norm(head);
    v.forEach((x, i) => assert.ok(Math.abs(x - head[i] / n) < 1e-6, `entry ${i}`));
  });

  test('token ids, raw fetch, /embeddings, priority header', async () => {
    const r = await postJSON(srv, '/v1/embeddings', { input: [[5, 6, 7], [8, 9]], encoding_format: 'float' },
      { 'X-LlamaSwap-Priority': '10' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.length, 2);
    assert.equal(r.json.usage.prompt_tokens, 5);
    const s = await postJSON(srv, '/embeddings', { input: [8, 9], encoding_format: 'float' });
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.json.data[0].embedding, r.json.data[1].embedding);
    assert.equal(s.json.usage.prompt_tokens, 2);
  });

  test('400s name the field', async () => {
    await assert.rejects(client.embeddings.create({ model: 'default', input: '' }), (e) => {
      assert.ok(e instanceof BadRequestError);
      assert.equal(e.status, 400);
      assert.equal(e.param, 'input');
      return true;
    });
    const d = await postJSON(srv, '/v1/embeddings', { input: 'x', dimensions: 65 });
    assert.equal(d.status, 400);
    assert.equal(d.json.error.param, 'dimensions');
    assert.equal(d.json.error.type, 'invalid_request_error');
    const long = await postJSON(srv, '/v1/embeddings', { input: 'w '.repeat(100) });
    assert.equal(long.status, 400);
    assert.equal(long.json.error.param, 'input');
    assert.equal(long.json.error.code, 'context_length_exceeded');
    // one model served: any "model" runs on it, and the reply names it
    const m = await postJSON(srv, '/v1/embeddings', { input: 'x', model: 'nope' });
    assert.equal(m.status, 200, m.text);
    assert.equal(m.json.model, 'default');
  });
});

describe('/v1/embeddings: the client leaves', () => {
  let srv;
  // slow reads: 300 items of ~20 tokens take ~15 s on two slots
  before(async () => { srv = await startServer(['--batch', '--parallel', '2', '--ctx-size', '64', '--sim-prompt-tps', '200']); });
  after(async () => { await srv.stop(); });

  test('300 items, aborted mid-way: the queue empties at once and the slots come back', async () => {
    const queued = async () => metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'normal' });
    const input = Array.from({ length: 300 }, (_, i) => `${'w '.repeat(18)}item${i}`);
    const ctl = new AbortController();
    const p = fetch(`${srv.url}/v1/embeddings`, {
      method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input, encoding_format: 'float' }),
    }).catch((e) => e);
    await until(async () => (await queued()) > 200, 5000, 'the items queued');
    ctl.abort();
    assert.ok((await p) instanceof Error);
    await until(async () => (await queued()) === 0, 3000, 'the queue to empty');
    await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'), 3000, 'idle slots');
    await until(async () => metric(await metricsText(srv), 'vllm:num_requests_running') === 0, 3000, 'nothing running');
    const r = await postJSON(srv, '/v1/embeddings', { input: ['after', 'the abort'], encoding_format: 'float' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.length, 2);
  });
});

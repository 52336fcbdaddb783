// errors.test.mjs -- every error status in the OpenAI shape
// {"error":{"message","type","param","code"}}: 400 (param named), 401, 404,
// 405 (Allow), 413 (Content-Length and chunked uploads), 429 (Retry-After,
// queue full and shed), 503 while loading.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import { startServer, postJSON, getJSON, chatBody, until, startTinyModel } from './lib/server.mjs';

function assertErrorShape(r, status, type, extra = []) {
  assert.equal(r.status, status, r.text);
  assert.ok(r.json && r.json.error, `error body: ${r.text}`);
  const e = r.json.error;
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type', ...extra].sort());
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  if (type) assert.equal(e.type, type);
  assert.ok(r.headers.get('x-request-id'));
}

describe('400, 404, 405 and 413', () => {
  let srv;
  before(async () => { srv = await startServer(['--body-limit', '4096', '--sim-decode-tps', '1000']); });
  after(async () => { await srv.stop(); });

  const cases = [
    ['bad JSON', '{"messages": [', null],
    ['trailing garbage', '{"messages":[{"role":"user","content":"x"}]} x', null],
    ['not an object', '[1,2]', null],
    ['missing messages', {}, 'messages'],
    ['empty messages', { messages: [] }, 'messages'],
    ['messages not an array', { messages: 'hi' }, 'messages'],
    ['message without role', { messages: [{ content: 'x' }] }, 'messages'],
    ['unknown role', { messages: [{ role: 'wizard', content: 'x' }] }, 'messages'],
    ['content a number', { messages: [{ role: 'user', content: 5 }] }, 'messages'],
    ['image part', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages'],
    ['n = 0', chatBody({ n: 0 }), 'n'],
    ['n a string', chatBody({ n: '2' }), 'n'],
    ['n fractional', chatBody({ n: 1.5 }), 'n'],
    ['max_tokens < 0', chatBody({ max_tokens: -1 }), 'max_tokens'],
    ['max_tokens a string', chatBody({ max_tokens: '10' }), 'max_tokens'],
    ['max_completion_tokens < 0', chatBody({ max_completion_tokens: -5 }), 'max_completion_tokens'],
    ['temperature a string', chatBody({ temperature: 'hot' }), 'temperature'],
    ['temperature < 0', chatBody({ temperature: -1 }), 'temperature'],
    ['top_p 0', chatBody({ top_p: 0 }), 'top_p'],
    ['top_p > 1', chatBody({ top_p: 1.5 }), 'top_p'],
    ['top_k fractional', chatBody({ top_k: 2.5 }), 'top_k'],
    ['min_p > 1', chatBody({ min_p: 2 }), 'min_p'],
    ['stop a number', chatBody({ stop: 7 }), 'stop'],
    ['stop of 5', chatBody({ stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop'],
    ['stop item not a string', chatBody({ stop: ['a', 1] }), 'stop'],
    ['seed a string', chatBody({ seed: 'x' }), 'seed'],
    ['logprobs a number (chat)', chatBody({ logprobs: 3 }), 'logprobs'],
    ['top_logprobs without logprobs', chatBody({ top_logprobs: 3 }), 'top_logprobs'],
    ['top_logprobs > 20', chatBody({ logprobs: true, top_logprobs: 21 }), 'top_logprobs'],
    ['stream a string', chatBody({ stream: 'yes' }), 'stream'],
    ['include_usage a string', chatBody({ stream: true, stream_options: { include_usage: 'y' } }), 'stream_options.include_usage'],
    ['ignore_eos a number', chatBody({ ignore_eos: 1 }), 'ignore_eos'],
    ['user a number', chatBody({ user: 5 }), 'user'],
    ['model a number', chatBody({ model: 5 }), 'model'],
    ['tools an object', chatBody({ tools: {} }), 'tools'],
    ['chat_template_kwargs an array', chatBody({ chat_template_kwargs: [] }), 'chat_template_kwargs'],
  ];
  for (const [name, body, param] of cases) {
    test(`400: ${name}`, async () => {
      const r = await postJSON(srv, '/v1/chat/completions', body);
      assertErrorShape(r, 400, 'invalid_request_error');
      assert.equal(r.json.error.param, param);
    });
  }

  test('400: completions prompt errors', async () => {
    for (const [body, param] of [[{}, 'prompt'], [{ prompt: 5 }, 'prompt'], [{ prompt: [] }, 'prompt'],
      // [1, 'a'] is llama-server's mixed prompt (valid); an item neither an id nor a string is not
      [{ prompt: [1, 'a', true] }, 'prompt'], [{ prompt: [-1] }, 'prompt'], [{ prompt: 'x', logprobs: true }, 'logprobs'],
      [{ prompt: 'x', echo: 'y' }, 'echo'],
      [{ prompt: [[1, 2, 999999999]], echo: true, logprobs: 1 }, 'prompt']]) {   // not a token
      const r = await postJSON(srv, '/v1/completions', body);
      assertErrorShape(r, 400, 'invalid_request_error');
      assert.equal(r.json.error.param, param, JSON.stringify(body));
    }
  });

  test('400: a prompt longer than the context (context_length_exceeded)', async () => {
    const big = await startServer(['--ctx-size', '64']);
    try {
      const r = await postJSON(big, '/v1/completions', { prompt: 'a '.repeat(100) });
      // llama-server's n_prompt_tokens and n_ctx beside OpenAI's fields
      assertErrorShape(r, 400, 'invalid_request_error', ['n_ctx', 'n_prompt_tokens']);
      assert.equal(r.json.error.code, 'context_length_exceeded');
      assert.equal(r.json.error.n_ctx, 64);
      assert.ok(r.json.error.n_prompt_tokens >= 64, r.text);
      const t = await postJSON(big, '/v1/completions', { prompt: Array(70).fill(1) });
      assertErrorShape(t, 400, 'invalid_request_error', ['n_ctx', 'n_prompt_tokens']);
      assert.equal(t.json.error.n_prompt_tokens, 70);
      // logged as the refusal it is, not as an engine failure (the soak matches the two)
      await until(() => (big.log().match(/outcome=refused status=400 param=prompt /g) || []).length === 2,
        5000, 'both refusals logged');
      assert.doesNotMatch(big.log(), /outcome=failed/);
    } finally { await big.stop(); }
  });

  test('400 from the bytes alone: a prompt that cannot fit is refused before it is tokenized', async () => {
    // a real tokenizer (the sim's one word is one token, whatever its length, so it has no bound)
    const { srv: tiny, dir } = await startTinyModel('strata-e2e-too-long-', 1, 64);
    try {
      // 2 MB: far more tokens than 64 even at the longest token's bytes each
      const r = await postJSON(tiny, '/v1/completions', { prompt: 'a'.repeat(2 << 20), max_tokens: 1 });
      assertErrorShape(r, 400, 'invalid_request_error', ['n_ctx', 'n_prompt_tokens']);
      assert.equal(r.json.error.code, 'context_length_exceeded');
      assert.equal(r.json.error.param, 'prompt');
      assert.match(r.json.error.message, /has at least \d+ tokens \(2097152 bytes/);
      assert.equal(r.json.error.n_ctx, 64);
      assert.ok(r.json.error.n_prompt_tokens >= 64, r.text);
      const c = await postJSON(tiny, '/v1/chat/completions', chatBody({ messages: [{ role: 'user', content: 'b'.repeat(2 << 20) }] }));
      assert.equal(c.status, 400, c.text);
      assert.equal(c.json.error.param, 'messages');
      assert.match(c.json.error.message, /has at least \d+ tokens/);
      // a short one whose bytes prove nothing is tokenized and counted exactly
      const s = await postJSON(tiny, '/v1/completions', { prompt: 'a b '.repeat(60), max_tokens: 1 });
      assertErrorShape(s, 400, 'invalid_request_error', ['n_ctx', 'n_prompt_tokens']);
      assert.match(s.json.error.message, /^the prompt has \d+ tokens, which exceeds the available context size: a slot holds 64/);
      assert.ok(s.json.error.n_prompt_tokens >= 64, s.text);
      const ok = await postJSON(tiny, '/v1/completions', { prompt: 'a b', max_tokens: 1 });
      assert.equal(ok.status, 200, ok.text);
    } finally {
      await tiny.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('404: unknown model id (model_not_found) and unknown route', async () => {
    // one model served: any "model" runs on it (model_names.test.mjs); its id is still exact
    let r = await getJSON(srv, '/v1/models/gpt-nope');
    assertErrorShape(r, 404, 'invalid_request_error');
    assert.equal(r.json.error.code, 'model_not_found');
    assert.equal(r.json.error.param, 'model');
    r = await getJSON(srv, '/v2/whatever');
    assertErrorShape(r, 404);
    r = await postJSON(srv, '/v1/completions/extra', {});
    assertErrorShape(r, 404);
  });

  test('405: known path, wrong method, with Allow', async () => {
    let r = await getJSON(srv, '/v1/chat/completions');
    assertErrorShape(r, 405);
    assert.equal(r.headers.get('allow'), 'POST, OPTIONS');   // OPTIONS: CORS preflight
    r = await postJSON(srv, '/v1/models', {});
    assertErrorShape(r, 405);
    assert.equal(r.headers.get('allow'), 'GET, HEAD, OPTIONS');
    const d = await fetch(`${srv.url}/health`, { method: 'DELETE' });
    assert.equal(d.status, 405);
  });

  test('413: Content-Length over the limit is refused before the body', async () => {
    // Expect: 100-continue lets the server answer before the client sends the body.
    const status = await new Promise((resolve, reject) => {
      const u = new URL(`${srv.url}/v1/chat/completions`);
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': 100000, expect: '100-continue' } });
      req.on('response', (res) => { res.resume(); res.on('end', () => resolve([res.statusCode, res.headers])); });
      req.on('continue', () => reject(new Error('server asked for the body')));
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(status[0], 413);
    assert.ok(status[1]['x-request-id']);
  });

  test('413: a chunked upload that passes the limit', async () => {
    const body = JSON.stringify(chatBody({ user: 'x'.repeat(10000) }));
    const res = await new Promise((resolve, reject) => {
      const u = new URL(`${srv.url}/v1/chat/completions`);
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } });
      req.on('response', (r) => { let t = ''; r.on('data', (d) => { t += d; }); r.on('end', () => resolve({ status: r.statusCode, text: t })); });
      req.on('error', reject);
      for (let i = 0; i < body.length; i += 1000) req.write(body.slice(i, i + 1000));
      req.end();
    });
    assert.equal(res.status, 413);
    assert.equal(JSON.parse(res.text).error.code, 'body_too_large');
  });

  test('413: a plain fetch with a body over the limit gets 413 (not a reset)', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', JSON.stringify(chatBody({ user: 'y'.repeat(6000) })));
    assertErrorShape(r, 413);
  });

  test('the server is still fine after all that', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 2 }));
    assert.equal(r.status, 200);
  });
});

describe('401 with API keys', () => {
  let srv;
  before(async () => { srv = await startServer(['--api-key', 'sekrit-1', '--api-key', 'other-2']); });
  after(async () => { await srv.stop(); });

  test('401 without a key, with a wrong key, with a malformed header', async () => {
    for (const h of [{}, { authorization: 'Bearer nope' }, { authorization: 'sekrit-1' }, { authorization: 'Basic sekrit-1' }]) {
      const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), h);
      assertErrorShape(r, 401, 'authentication_error');
      assert.equal(r.json.error.code, 'invalid_api_key');
    }
    const m = await getJSON(srv, '/v1/models');
    assert.equal(m.status, 401);
  });

  test('either key works; /health needs none, /metrics a key (docs/SECURITY.md)', async () => {
    for (const k of ['sekrit-1', 'other-2']) {
      const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), { authorization: `Bearer ${k}` });
      assert.equal(r.status, 200);
    }
    assert.equal((await getJSON(srv, '/health')).status, 200);
    assert.equal((await fetch(`${srv.url}/metrics`)).status, 401);
    assert.equal((await fetch(`${srv.url}/metrics`, { headers: { authorization: 'Bearer other-2' } })).status, 200);
  });
});

describe('429 with Retry-After', () => {
  let srv;
  // one slot, one waiting place, a slow engine: the third request finds the queue full
  before(async () => { srv = await startServer(['--parallel', '1', '--max-queue', '1', '--sim-decode-tps', '20', '--sim-tokens', '400']); });
  after(async () => { await srv.stop(); });

  test('queue full -> 429; a higher priority sheds the lowest waiting one, which learns why', async () => {
    const ctl = new AbortController();
    let a, dP;
    const long = (extra = {}, headers = {}) => fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(chatBody({ stream: true, ...extra })),
    });
    try {
      a = await long();             // takes the slot (headers come with its first token)
      assert.equal(a.status, 200);
      const bP = long();                  // waits in the queue
      await until(async () => {
        const t = await (await fetch(`${srv.url}/metrics`)).text();
        return /llamaswap_scheduler_queue_depth\{band="normal"\} 1/.test(t);
      }, 5000, 'B queued');
      const c = await postJSON(srv, '/v1/chat/completions', chatBody());
      assertErrorShape(c, 429, 'rate_limit_error');
      assert.equal(c.headers.get('retry-after'), '1');
      assert.equal(c.json.error.code, 'queue_full');
      assert.match(c.json.error.message, /queue is full/);
      // the queue is decided before the prompt is tokenized: a prompt far
      // over the context gets the 429, not the 400 tokenizing would find
      const huge = await postJSON(srv, '/v1/completions', { prompt: 'w '.repeat(200000) });
      assertErrorShape(huge, 429, 'rate_limit_error');
      assert.equal(huge.json.error.code, 'queue_full');
      assert.equal(huge.headers.get('retry-after'), '1');
      // D outranks B: B is shed (429 at once), D takes its place
      dP = long({}, { 'x-llamaswap-priority': 'interactive' });
      const b = await bP;
      assert.equal(b.status, 429);
      assert.equal(b.headers.get('retry-after'), '1');
      const bj = await b.json();
      assert.equal(bj.error.type, 'rate_limit_error');
      assert.match(bj.error.message, /higher priority/);
      const m = await (await fetch(`${srv.url}/metrics`)).text();
      assert.match(m, /llamaswap_scheduler_queue_depth\{band="interactive"\} 1/);
      assert.match(m, /strata_queue_full_total 3/);
    } finally {
      ctl.abort();
    }
    await dP.catch(() => {});
    await a.body?.cancel().catch(() => {});
  });
});

describe('503 while loading', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-load-seconds', '2'], { waitReady: false }); });
  after(async () => { await srv.stop(); });

  test('/health and completions answer 503 until the model is loaded, then 200', async () => {
    const h = await getJSON(srv, '/health');
    assertErrorShape(h, 503, 'unavailable_error');
    const c = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }));
    assertErrorShape(c, 503, 'unavailable_error');
    const m = await getJSON(srv, '/v1/models');
    assert.equal(m.json.data[0].strata.state, 'loading');
    await until(async () => (await getJSON(srv, '/health')).status === 200, 10000, 'ready');
    const ok = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }));
    assert.equal(ok.status, 200);
  });
});

// llama_compat.test.mjs -- llama-server behaviours its own test suite checks
// (issue 24; docs/API.md "llama.cpp's server test suite"): --host with several
// addresses, --alias lists and --tags in /v1/models, the assistant prefill and
// its 400s on /v1/chat/completions, an empty Anthropic messages list, and
// Vertex AI's routes (AIP_MODE=PREDICTION, POST /predict).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { rmSync } from 'node:fs';
import { startServer, startTinyModel, postJSON, getJSON, parseSSE, until } from './lib/server.mjs';

// Can this machine bind the IPv6 loopback? (Some CI containers have no IPv6.)
async function haveIPv6Loopback() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(0, '::1', () => s.close(() => resolve(true)));
  });
}

describe('--host with several addresses', () => {
  test('listens on each, one port, the same API key and streams', async (t) => {
    if (!(await haveIPv6Loopback())) { t.skip('no IPv6 loopback here'); return; }
    const srv = await startServer(['--host', '127.0.0.1, ::1', '--api-key', 'k2',
      '--sim-tokens', '4', '--sim-decode-tps', '2000']);   // ready: /health is 503 while it loads
    try {
      const port = new URL(srv.url).port;
      // one log line per address: the helper returns at the first; the next
      // may still be on its way through the pipe
      await until(() => new RegExp(`listening on http://\\[::1\\]:${port}`).test(srv.log()), 10000,
        'the [::1] address logged');
      for (const host of ['127.0.0.1', '[::1]']) {
        const base = `http://${host}:${port}`;
        const h = await fetch(`${base}/health`);
        assert.equal(h.status, 200, host);
        const denied = await fetch(`${base}/v1/completions`, { method: 'POST',
          headers: { 'content-type': 'application/json' }, body: '{}' });
        assert.equal(denied.status, 401, host);
        const r = await fetch(`${base}/v1/completions`, { method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer k2' },
          body: JSON.stringify({ prompt: 'x', max_tokens: 4, stream: true }) });
        assert.equal(r.status, 200, host);
        const ev = parseSSE(await r.text()).filter((e) => e.data !== '[DONE]');
        assert.ok(ev.length > 1, host);
      }
    } finally {
      await srv.stop();
    }
  });

  test('an address that does not resolve stops the start with its name', async () => {
    await assert.rejects(startServer(['--host', '127.0.0.1,no-such-host.invalid']),
      /no-such-host\.invalid/);
  });
});

describe('--alias list and --tags', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--alias', 'tinyllama-2, fim,code', '--tags', 'chat,fim,small',
      '--sim-tokens', '2', '--sim-decode-tps', '2000']);
  });
  after(async () => { await srv.stop(); });

  test('/v1/models: the id is the first alias in byte order; aliases and tags listed', async () => {
    const r = await getJSON(srv, '/v1/models');
    assert.equal(r.json.data.length, 1);
    const m = r.json.data[0];
    assert.equal(m.id, 'code');
    assert.equal(m.object, 'model');
    assert.deepEqual(m.aliases, ['code', 'fim', 'tinyllama-2']);
    assert.deepEqual(m.tags, ['chat', 'fim', 'small']);
    assert.deepEqual(m.strata.aliases, ['fim', 'tinyllama-2']);
    const one = await getJSON(srv, '/v1/models/fim');
    assert.equal(one.status, 200);
    assert.equal(one.json.id, 'code');
  });
});

describe('assistant prefill (llama3 template)', () => {
  let srv, dir, srvOff, dirOff;
  const head = (role) => `<|start_header_id|>${role}<|end_header_id|>\n\n`;
  const chat = (s, body) => postJSON(s, '/v1/chat/completions',
    { model: 'tiny', max_tokens: 1, verbose: true, ...body });
  const turns = [{ role: 'system', content: 'Book' }, { role: 'user', content: 'What is the best book' },
    { role: 'assistant', content: 'Whill' }];
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-prefill-', 7, 512, ['--chat-template', 'llama3']));
    ({ srv: srvOff, dir: dirOff } = await startTinyModel('strata-prefill-off-', 7, 512,
      ['--chat-template', 'llama3', '--no-prefill-assistant']));
  });
  after(async () => {
    await srv.stop();
    await srvOff.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(dirOff, { recursive: true, force: true });
  });

  test('a last assistant message is continued: the prompt ends inside it', async () => {
    const r = await chat(srv, { messages: turns });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.__verbose.prompt.endsWith(
      `${head('user')}What is the best book<|eot_id|>${head('assistant')}Whill`), r.json.__verbose.prompt);
  });

  test('continue_final_message false, add_generation_prompt true, --no-prefill-assistant: history', async () => {
    const newTurn = `Whill<|eot_id|>${head('assistant')}`;
    for (const [s, extra] of [[srv, { continue_final_message: false }],
      [srv, { add_generation_prompt: true }], [srvOff, {}]]) {
      const r = await chat(s, { messages: turns, ...extra });
      assert.equal(r.status, 200, r.text);
      assert.ok(r.json.__verbose.prompt.endsWith(newTurn), JSON.stringify(extra));
    }
  });

  test('add_generation_prompt false: the prompt ends after the last turn', async () => {
    const r = await chat(srv, { add_generation_prompt: false, messages: turns.slice(0, 2) });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.__verbose.prompt.endsWith('What is the best book<|eot_id|>'), r.json.__verbose.prompt);
  });

  test('400s: both continue_final_message and add_generation_prompt; two assistant messages at the end', async () => {
    const both = await chat(srv, { add_generation_prompt: true, continue_final_message: true,
      messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] });
    assert.equal(both.status, 400, both.text);
    assert.equal(both.json.error.param, 'add_generation_prompt');
    const two = await chat(srv, { messages: [{ role: 'user', content: 'test' },
      { role: 'assistant', content: 'test' }, { role: 'assistant', content: 'test' }] });
    assert.equal(two.status, 400, two.text);
    assert.equal(two.json.error.param, 'messages');
    // without the prefill two assistant messages are plain history
    const off = await chat(srvOff, { messages: [{ role: 'user', content: 'test' },
      { role: 'assistant', content: 'test' }, { role: 'assistant', content: 'test' }] });
    assert.equal(off.status, 200, off.text);
  });

  test('Anthropic: an empty messages list is answered (one empty user turn), as llama-server', async () => {
    const r = await postJSON(srv, '/v1/messages', { model: 'tiny', max_tokens: 2, messages: [] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.type, 'message');
    const c = await postJSON(srv, '/v1/messages/count_tokens', { model: 'tiny', messages: [] });
    assert.equal(c.status, 200, c.text);
    assert.ok(c.json.input_tokens > 0);
  });
});

// Vertex AI's custom-container contract (AIP_MODE=PREDICTION): each instance
// of POST /predict runs through the route its @requestFormat names.
describe('Vertex AI routes (AIP_MODE=PREDICTION)', () => {
  let srv;
  const predict = (body, headers = {}) => postJSON(srv, '/predict', body,
    { authorization: 'Bearer kv', ...headers });
  before(async () => {
    process.env.AIP_MODE = 'PREDICTION';
    process.env.AIP_HEALTH_ROUTE = 'vertex-health';
    try {
      srv = await startServer(['-np', '2', '--batch', '--api-key', 'kv', '--sim-tokens', '3',
        '--sim-decode-tps', '2000']);
    } finally {
      delete process.env.AIP_MODE;
      delete process.env.AIP_HEALTH_ROUTE;
    }
  });
  after(async () => { await srv.stop(); });

  test('instances answer in order, each as its route answers; errors stay per instance', async () => {
    const chat = (content) => ({ '@requestFormat': 'chatCompletions', max_tokens: 3,
      messages: [{ role: 'user', content }] });
    const r = await predict({ instances: [chat('Say hello'),
      { '@requestFormat': 'completions', prompt: 'x', max_tokens: 2, stream: true },
      { '@requestFormat': '/tokenize', content: 'hello' },
      { '@requestFormat': 'nope' }, { max_tokens: 1 }, 7, { '@requestFormat': 'chatCompletions' },
      chat('Say world')] });
    assert.equal(r.status, 200, r.text);
    const p = r.json.predictions;
    assert.equal(p.length, 8);
    for (const i of [0, 7]) {
      assert.equal(p[i].object, 'chat.completion');
      assert.equal(p[i].choices[0].message.role, 'assistant');
      assert.ok(p[i].choices[0].message.content.length > 0);
    }
    assert.equal(p[1].object, 'text_completion');   // "completions" is OpenAI's; no stream
    assert.ok(Array.isArray(p[2].tokens));
    assert.match(p[3].error.message, /no handler registered for @requestFormat: nope/);
    assert.match(p[4].error.message, /@requestFormat/);
    assert.match(p[5].error.message, /JSON object/);
    assert.equal(p[6].error.param, 'messages');
  });

  test('the body, the key and the health route', async () => {
    assert.equal((await predict({ instances: {} })).status, 400);
    assert.equal((await predict({ instances: Array(129).fill({}) })).status, 400);
    assert.equal((await predict({ instances: [] }, { authorization: 'Bearer no' })).status, 401);
    const empty = await predict({ instances: [] });
    assert.deepEqual(empty.json, { predictions: [] });
    const h = await getJSON(srv, '/vertex-health');
    assert.equal(h.status, 200);
    assert.equal(h.json.status, 'ok');
  });

  test('a client that leaves mid-predict: its instances are cancelled', async () => {
    process.env.AIP_MODE = 'PREDICTION';
    let slow;
    try {
      slow = await startServer(['--sim-tokens', '100000', '--sim-decode-tps', '50']);
    } finally {
      delete process.env.AIP_MODE;
    }
    try {
      const ac = new AbortController();
      const pending = fetch(`${slow.url}/predict`, { method: 'POST', signal: ac.signal,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ instances: [{ '@requestFormat': 'completions', prompt: 'x' }] }) });
      await until(() => /dispatch /.test(slow.log()), 10000, 'the instance to start');
      ac.abort();
      await assert.rejects(pending);
      await until(() => /outcome=cancelled/.test(slow.log()), 10000, 'the instance cancelled');
      const r = await postJSON(slow, '/predict', { instances: [{ '@requestFormat': 'completions',
        prompt: 'y', max_tokens: 1 }] });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.predictions[0].object, 'text_completion');
    } finally {
      await slow.stop();
    }
  });

  test('without AIP_MODE there is no /predict', async () => {
    const plain = await startServer(['--sim-tokens', '1']);
    try {
      const r = await postJSON(plain, '/predict', { instances: [] });
      assert.equal(r.status, 404);
    } finally {
      await plain.stop();
    }
  });
});

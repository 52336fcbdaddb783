// llama_compat.test.mjs -- llama-server behaviours its own test suite checks
// (issue 24; docs/API.md "llama.cpp's server test suite"): --host with several
// addresses, --alias lists and --tags in /v1/models, the assistant prefill and
// its 400s on /v1/chat/completions, an empty Anthropic messages list.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { rmSync } from 'node:fs';
import { startServer, startTinyModel, postJSON, getJSON, parseSSE } from './lib/server.mjs';

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
      '--sim-tokens', '4', '--sim-decode-tps', '2000'], { waitReady: false });
    try {
      const port = new URL(srv.url).port;
      assert.match(srv.log(), new RegExp(`listening on http://\\[::1\\]:${port}`));
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

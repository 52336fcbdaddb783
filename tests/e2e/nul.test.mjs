// nul.test.mjs -- U+0000 in request text is never cut (issue 25): "A\u0000B"
// reaches the tokenizer whole (its NUL byte is a token of its own) through
// /tokenize, /apply-template and /v1/chat/completions on a synthetic tiny
// model (CPU backend), comes back as \u0000 from /detokenize and the
// pieces, and a body with the raw bytes C0 80 (the server's own inner form
// of U+0000, not UTF-8) is a 400.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { postJSON, startTinyModel } from './lib/server.mjs';

describe('U+0000 in request text', () => {
  let srv, dir;
  before(async () => { ({ srv, dir } = await startTinyModel('strata-e2e-nul-', 1, 512)); });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const tokenize = async (content, extra = {}) => {
    const r = await postJSON(srv, '/tokenize', { content, model: 'tiny', ...extra });
    assert.equal(r.status, 200, r.text);
    return r.json.tokens;
  };

  test('/tokenize keeps the NUL byte as a token, /detokenize gives it back', async () => {
    const ab = await tokenize('AB');
    const anb = await tokenize('A\u0000B', { with_pieces: true });
    assert.equal(anb.length, ab.length + 1, JSON.stringify(anb));
    assert.deepEqual(anb.map((t) => t.piece).join(''), 'A\u0000B');
    const nul = anb.find((t) => t.piece === '\u0000');
    assert.ok(nul, JSON.stringify(anb));
    const d = await postJSON(srv, '/detokenize', { tokens: anb.map((t) => t.id), model: 'tiny' });
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json.content, 'A\u0000B');
    assert.match(d.text, /A\\u0000B/);
  });

  test('chat: the prompt holds the NUL byte token', async () => {
    const messages = (content) => [{ role: 'user', content }];
    const tpl = await postJSON(srv, '/apply-template', { model: 'tiny', messages: messages('A\u0000B') });
    assert.equal(tpl.status, 200, tpl.text);
    assert.ok(tpl.json.prompt.includes('A\u0000B'), tpl.text);
    const ids = await tokenize(tpl.json.prompt);
    const [nul] = (await tokenize('\u0000'));
    assert.ok(ids.includes(nul), `${ids} lacks ${nul}`);
    const chat = async (content) => {
      const r = await postJSON(srv, '/v1/chat/completions',
        { model: 'tiny', messages: messages(content), max_tokens: 1, temperature: 0 });
      assert.equal(r.status, 200, r.text);
      return r.json.usage.prompt_tokens;
    };
    assert.equal(await chat('A\u0000B'), ids.length);
    assert.equal(await chat('A\u0000B'), (await chat('AB')) + 1);
  });

  test('an escaped backslash before "u0000" is text, not U+0000', async () => {
    const lit = await tokenize('A\\u0000B');
    const d = await postJSON(srv, '/detokenize', { tokens: lit, model: 'tiny' });
    assert.equal(d.json.content, 'A\\u0000B');
  });

  test('/v1/responses echoes U+0000 as \\u0000, its stored input too', async () => {
    const r = await postJSON(srv, '/v1/responses', {
      model: 'tiny', input: 'A\u0000B', instructions: 'x\u0000y', max_output_tokens: 1, store: true,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.instructions, 'x\u0000y');
    const items = await fetch(`${srv.url}/v1/responses/${r.json.id}/input_items`);
    const text = await items.text();
    assert.equal(items.status, 200, text);
    assert.ok(!text.includes('\ufffd'), text);
    assert.match(text, /A\\u0000B/);
  });

  test('raw bytes C0 80 in the body are a 400, not U+0000', async () => {
    const body = Buffer.concat([Buffer.from('{"content":"A'), Buffer.from([0xc0, 0x80]), Buffer.from('B"}')]);
    const r = await fetch(`${srv.url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(r.status, 400);
    const j = await r.json();
    assert.equal(j.error.type, 'invalid_request_error');
    assert.match(j.error.message, /UTF-8/);
  });
});

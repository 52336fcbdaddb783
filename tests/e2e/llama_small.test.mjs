// llama_small.test.mjs -- llama-server's smaller answer fields on the sim
// (docs/API.md "llama.cpp's server test suite"): "__verbose" in chat and
// completions answers (the body's "verbose", or the server's --verbose).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJSON } from './lib/server.mjs';

const chat = (extra = {}) => ({
  model: 'default', max_tokens: 2,
  messages: [{ role: 'system', content: 'Book' }, { role: 'user', content: 'What is the best book' }],
  ...extra,
});

describe('"__verbose"', () => {
  let srv, loud;
  before(async () => {
    srv = await startServer(['--sim-decode-tps', '2000']);
    loud = await startServer(['--sim-decode-tps', '2000', '--verbose']);
  });
  after(async () => { await srv?.stop(); await loud?.stop(); });

  test('"verbose": true adds the rendered prompt and the native result; false or absent none', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chat({ verbose: true }));
    assert.equal(r.status, 200, r.text);
    const v = r.json.__verbose;
    assert.ok(v, r.text);
    assert.match(v.prompt, /Book/);
    assert.equal(v.content, r.json.choices[0].message.content);
    assert.equal(v.tokens_predicted, r.json.usage.completion_tokens);
    assert.equal(v.tokens_evaluated, r.json.usage.prompt_tokens);
    assert.equal(v.stop, true);
    assert.equal(v.stop_type, 'limit');
    assert.equal(typeof v.timings.prompt_n, 'number');
    for (const extra of [{ verbose: false }, {}]) {
      const q = await postJSON(srv, '/v1/chat/completions', chat(extra));
      assert.equal(q.json.__verbose, undefined, JSON.stringify(extra));
    }
    const c = await postJSON(srv, '/v1/completions', { model: 'default', prompt: 'one two', max_tokens: 2, verbose: true });
    assert.equal(c.json.__verbose.prompt, 'one two');
    assert.equal(c.json.__verbose.content, c.json.choices[0].text);
  });

  test('--verbose: on unless the body says false', async () => {
    const r = await postJSON(loud, '/v1/chat/completions', chat());
    assert.match(r.json.__verbose?.prompt ?? '', /What is the best book/, r.text);
    const q = await postJSON(loud, '/v1/chat/completions', chat({ verbose: false }));
    assert.equal(q.json.__verbose, undefined);
  });

  test('"verbose" must be a boolean', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chat({ verbose: 'yes' }));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, 'verbose');
  });
});

// model_names.test.mjs -- which model a request's "model" picks, and the
// model list as each SDK expects it.
//
// One model served: any name runs on it (clients configured for
// llama-server, or with a cloud model name, just work) and the reply names
// the model actually used. Several models (a config file): names and
// aliases route, an unknown one is 404 model_not_found. The Anthropic SDK
// (it sends anthropic-version) gets GET /v1/models in Anthropic's shape and
// its request id from the request-id header.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startServer, postJSON, getJSON } from './lib/server.mjs';

const user = [{ role: 'user', content: 'hi' }];

describe('one model served', () => {
  let srv, openai, anthropic;
  before(async () => {
    srv = await startServer(['--sim-decode-tps', '2000', '--sim-tokens', '2']);
    openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'none', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('any model name runs on it; the reply names the model used', async () => {
    for (const model of ['gpt-4o', 'qwen3', 'default', '']) {
      const c = await openai.chat.completions.create({ model, messages: user, max_tokens: 2 });
      assert.equal(c.model, 'default', model);
    }
    const t = await postJSON(srv, '/v1/completions', { model: 'llama', prompt: 'x', max_tokens: 1 });
    assert.equal(t.status, 200, t.text);
    assert.equal(t.json.model, 'default');
    const r = await openai.responses.create({ model: 'gpt-5-codex', input: 'x', max_output_tokens: 2 });
    assert.equal(r.model, 'default');
    const m = await anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2, messages: user });
    assert.equal(m.model, 'default');
    const n = await anthropic.messages.countTokens({ model: 'claude-haiku-4-5', messages: user });
    assert.ok(n.input_tokens > 0);
    const tok = await postJSON(srv, '/tokenize', { model: 'whatever', content: 'hello' });
    assert.equal(tok.status, 200, tok.text);
  });

  test('Anthropic SDK: request ids, and models.list / retrieve in Anthropic\'s shape', async () => {
    const m = await anthropic.messages.create({ model: 'x', max_tokens: 1, messages: user });
    assert.match(m._request_id ?? '', /^req-/);
    const seen = [];
    for await (const info of anthropic.models.list()) seen.push(info);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].type, 'model');
    assert.equal(seen[0].id, 'default');
    assert.equal(seen[0].display_name, 'default');
    assert.match(seen[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const raw = await getJSON(srv, '/v1/models', { 'anthropic-version': '2023-06-01' });
    assert.deepEqual(Object.keys(raw.json).sort(), ['data', 'first_id', 'has_more', 'last_id']);
    assert.equal(raw.json.has_more, false);
    assert.equal(raw.headers.get('request-id'), raw.headers.get('x-request-id'));
    const one = await anthropic.models.retrieve('default');
    assert.equal(one.type, 'model');
    await assert.rejects(anthropic.models.retrieve('nope'), (err) => {
      assert.ok(err instanceof Anthropic.NotFoundError, String(err));
      assert.equal(err.error.error.type, 'not_found_error');
      assert.match(err.requestID ?? '', /^req-/);
      return true;
    });
    // without the header: OpenAI's shape, and no request-id
    const oai = await getJSON(srv, '/v1/models');
    assert.equal(oai.json.object, 'list');
    assert.equal(oai.json.data[0].object, 'model');
    assert.equal(oai.headers.get('request-id'), null);
  });
});

describe('several models (a config file)', () => {
  let srv, dir, anthropic;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-names-'));
    const cfg = path.join(dir, 'two.yaml');
    fs.writeFileSync(cfg, 'models:\n  - name: alpha\n    aliases: [a]\n  - name: beta\n');
    srv = await startServer(['--config', cfg, '--sim-decode-tps', '2000', '--sim-tokens', '1']);
    anthropic = new Anthropic({ baseURL: srv.url, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => {
    await srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('names and aliases route; an unknown name is 404 model_not_found', async () => {
    for (const [name, want] of [['a', 'alpha'], ['beta', 'beta']]) {
      const r = await postJSON(srv, '/v1/chat/completions', { model: name, messages: user, max_tokens: 1 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.model, want);
    }
    const bodies = { '/v1/chat/completions': { messages: user }, '/v1/completions': { prompt: 'x' },
      '/v1/responses': { input: 'x' } };
    for (const [p, body] of Object.entries(bodies)) {
      const r = await postJSON(srv, p, { model: 'gpt-4o', ...body });
      assert.equal(r.status, 404, `${p}: ${r.text}`);
      assert.equal(r.json.error.code, 'model_not_found');
    }
    await assert.rejects(anthropic.messages.create({ model: 'nope', max_tokens: 1, messages: user }),
      (err) => err instanceof Anthropic.NotFoundError);
    const list = await anthropic.models.list();
    assert.deepEqual(list.data.map((m) => m.id), ['alpha', 'beta']);
    assert.equal(list.first_id, 'alpha');
    assert.equal(list.last_id, 'beta');
  });
});

// responses_store.test.mjs -- stored /v1/responses (docs/API.md "Stored
// responses") through the official OpenAI Node SDK: previous_response_id
// chains a second turn whose prompt holds the first (its token count equals
// the chat request with the whole history spelled out; the first turn's
// instructions are not carried over), streamed responses are kept too,
// retrieve / delete / inputItems.list (order, limit, the SDK's paging),
// 404s in OpenAI's shape, store: false, --responses-store-mb 0, a tiny
// budget that evicts (and /metrics counting it), the API key on the
// new routes, a response seen only by its own key (another key gets the
// 404 of an unknown id), and a tool call answered in a chained turn (the
// agent loop).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  startServer, postJSON, getJSON, metricsText, metric,
} from './lib/server.mjs';

const REPLY = '<think>\nhm\n</think>\n\nParis is sunny today.';

async function del(srv, path, headers = {}) {
  const r = await fetch(`${srv.url}${path}`, { method: 'DELETE', headers });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, text, json };
}

// The prompt tokens of a chat request with these messages.
async function chatPromptTokens(srv, messages) {
  const r = await postJSON(srv, '/v1/chat/completions', { model: 'default', messages, max_tokens: 1 });
  assert.equal(r.status, 200, r.text);
  return r.json.usage.prompt_tokens;
}

describe('stored responses (default budget)', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '4', '--sim-decode-tps', '2000', '--sim-reply', REPLY]);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('previous_response_id: the second turn is rendered after the first', async () => {
    const r1 = await client.responses.create({ model: 'default', input: 'weather in Paris?',
      instructions: 'Answer in French.' });
    assert.equal(r1.status, 'completed');
    assert.equal(r1.store, true);
    assert.equal(r1.previous_response_id, null);
    const r2 = await client.responses.create({ model: 'default', input: 'and tomorrow?',
      previous_response_id: r1.id });
    assert.equal(r2.status, 'completed');
    assert.equal(r2.previous_response_id, r1.id);
    assert.equal(r2.instructions, null);
    // the prompt: turn 1 (without its instructions and reasoning), then turn 2
    const chained = await chatPromptTokens(srv, [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: 'Paris is sunny today.' },
      { role: 'user', content: 'and tomorrow?' }]);
    assert.equal(r2.usage.input_tokens, chained);
    const alone = await chatPromptTokens(srv, [{ role: 'user', content: 'and tomorrow?' }]);
    assert.ok(r2.usage.input_tokens > alone, `${r2.usage.input_tokens} vs ${alone}`);
    // a third turn chains both (the stored input holds its predecessors)
    const r3 = await client.responses.create({ model: 'default', input: 'thanks',
      previous_response_id: r2.id, instructions: 'Be brief.' });
    const all = await chatPromptTokens(srv, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: 'Paris is sunny today.' },
      { role: 'user', content: 'and tomorrow?' },
      { role: 'assistant', content: 'Paris is sunny today.' },
      { role: 'user', content: 'thanks' }]);
    assert.equal(r3.usage.input_tokens, all);
    // input_items: every item of the conversation so far, newest first by default
    // (user, then r1's reasoning and message, user, r2's reasoning and message, user)
    const page = await client.responses.inputItems.list(r3.id);
    const items = page.data;
    assert.deepEqual(items.map((i) => i.type), ['message', 'message', 'reasoning', 'message',
      'message', 'reasoning', 'message']);
    assert.deepEqual(items[0].content, [{ type: 'input_text', text: 'thanks' }]);
    assert.equal(items[1].id, r2.output[1].id);
    assert.equal(items[4].id, r1.output[1].id);
    assert.deepEqual(items[6].content, [{ type: 'input_text', text: 'weather in Paris?' }]);
  });

  test('retrieve returns the response as answered; delete, then 404', async () => {
    const r = await client.responses.create({ model: 'default', input: 'hello' });
    const got = await client.responses.retrieve(r.id);
    assert.equal(got.id, r.id);
    assert.equal(got.status, 'completed');
    assert.deepEqual(got.output, r.output);
    assert.deepEqual(got.usage, r.usage);
    const raw = await getJSON(srv, `/v1/responses/${r.id}`);
    assert.equal(raw.status, 200);
    assert.equal(raw.json.object, 'response');
    const d = await del(srv, `/v1/responses/${r.id}`);
    assert.equal(d.status, 200, d.text);
    assert.deepEqual(d.json, { id: r.id, object: 'response', deleted: true });
    await assert.rejects(client.responses.retrieve(r.id), (e) => {
      assert.equal(e.status, 404);
      assert.equal(e.error.type, 'invalid_request_error');
      assert.ok(e.error.message.includes(r.id), e.error.message);
      return true;
    });
    assert.equal((await del(srv, `/v1/responses/${r.id}`)).status, 404);
    await assert.rejects(client.responses.create({ model: 'default', input: 'x',
      previous_response_id: r.id }), (e) => {
      assert.equal(e.status, 404);
      assert.equal(e.error.type, 'invalid_request_error');
      assert.equal(e.error.param, 'previous_response_id');
      assert.ok(e.error.message.includes(r.id), e.error.message);
      return true;
    });
    // the SDK's delete (no body expected) and the path without /v1
    const r2 = await client.responses.create({ model: 'default', input: 'hello again' });
    assert.equal((await getJSON(srv, `/responses/${r2.id}`)).status, 200);
    await client.responses.delete(r2.id);
    assert.equal((await getJSON(srv, `/v1/responses/${r2.id}`)).status, 404);
  });

  test('input_items: order, limit, after, and the SDK pages through them', async () => {
    const r1 = await client.responses.create({ model: 'default', input: [
      { role: 'user', content: 'one' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'two' }] },
      { role: 'user', content: 'three' }] });
    const asc = await getJSON(srv, `/v1/responses/${r1.id}/input_items?order=asc`);
    assert.equal(asc.status, 200, asc.text);
    assert.equal(asc.json.object, 'list');
    assert.equal(asc.json.has_more, false);
    assert.equal(asc.json.data.length, 3);
    // in OpenAI's item shape, whatever shape was sent: type message, a content list
    assert.deepEqual(asc.json.data[0].content, [{ type: 'input_text', text: 'one' }]);
    assert.deepEqual(asc.json.data[2].content, [{ type: 'input_text', text: 'three' }]);
    for (const it of asc.json.data) {
      assert.match(it.id, /^msg_/);
      assert.equal(it.type, 'message');
    }
    assert.equal(asc.json.first_id, asc.json.data[0].id);
    assert.equal(asc.json.last_id, asc.json.data[2].id);
    const desc = await getJSON(srv, `/v1/responses/${r1.id}/input_items?limit=2`);
    assert.deepEqual(desc.json.data.map((i) => i.id), [asc.json.data[2].id, asc.json.data[1].id]);
    assert.equal(desc.json.has_more, true);
    const rest = await getJSON(srv, `/v1/responses/${r1.id}/input_items?limit=2&after=${desc.json.last_id}`);
    assert.deepEqual(rest.json.data.map((i) => i.id), [asc.json.data[0].id]);
    assert.equal(rest.json.has_more, false);
    // the SDK follows has_more / after
    const seen = [];
    for await (const it of client.responses.inputItems.list(r1.id, { limit: 1, order: 'asc' })) seen.push(it.id);
    assert.deepEqual(seen, asc.json.data.map((i) => i.id));
    // a string input is one user message with input_text content
    const r2 = await client.responses.create({ model: 'default', input: 'just text' });
    const one = await getJSON(srv, `/v1/responses/${r2.id}/input_items`);
    assert.equal(one.json.data.length, 1);
    assert.equal(one.json.data[0].type, 'message');
    assert.equal(one.json.data[0].role, 'user');
    assert.deepEqual(one.json.data[0].content, [{ type: 'input_text', text: 'just text' }]);
    assert.equal((await getJSON(srv, `/v1/responses/${r2.id}/input_items?order=up`)).status, 400);
    assert.equal((await getJSON(srv, `/v1/responses/${r2.id}/input_items?limit=0`)).status, 400);
    assert.equal((await getJSON(srv, '/v1/responses/resp_nope/input_items')).status, 404);
    assert.equal((await getJSON(srv, `/v1/responses/${r2.id}/other`)).status, 404);
  });

  test('a streamed response is stored; store: false is not', async () => {
    const stream = await client.responses.create({ model: 'default', input: 'stream it', stream: true });
    let done = null;
    for await (const ev of stream) if (ev.type === 'response.completed') done = ev.response;
    assert.ok(done);
    assert.equal(done.store, true);
    const got = await client.responses.retrieve(done.id);
    assert.deepEqual(got.output, done.output);
    const next = await client.responses.create({ model: 'default', input: 'more',
      previous_response_id: done.id });
    assert.equal(next.status, 'completed');
    const off = await client.responses.create({ model: 'default', input: 'forget me', store: false });
    assert.equal(off.store, false);
    assert.equal((await getJSON(srv, `/v1/responses/${off.id}`)).status, 404);
    // a chain still works from a store: false request; it is just not kept
    const chained = await client.responses.create({ model: 'default', input: 'x', store: false,
      previous_response_id: done.id });
    assert.equal(chained.previous_response_id, done.id);
    assert.equal((await getJSON(srv, `/v1/responses/${chained.id}`)).status, 404);
  });

  test('two requests with one X-Request-Id keep two responses; the id is not the request id', async () => {
    const h = { 'x-request-id': 'same-client-id' };
    const a = await postJSON(srv, '/v1/responses', { model: 'default', input: 'first' }, h);
    const b = await postJSON(srv, '/v1/responses', { model: 'default', input: 'second' }, h);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.equal(a.headers.get('x-request-id'), 'same-client-id');
    assert.notEqual(a.json.id, b.json.id);
    // another client that learns a request id (logs, /api/activity) cannot name the response
    assert.notEqual(a.json.id, 'resp_same-client-id');
    assert.match(a.json.id, /^resp_[0-9a-f]{16}_same-client-id$/);
    const items = await getJSON(srv, `/v1/responses/${a.json.id}/input_items`);
    assert.equal(items.status, 200, items.text);
    assert.deepEqual(items.json.data[0].content, [{ type: 'input_text', text: 'first' }]);
  });

  test('/metrics counts the stored responses', async () => {
    const text = await metricsText(srv);
    assert.ok(metric(text, 'strata_responses_stored') > 0);
    assert.ok(metric(text, 'strata_responses_stored_bytes') > 0);
    assert.equal(metric(text, 'strata_responses_evicted_total'), 0);
  });
});

describe('a tiny budget evicts; 0 stores nothing; the API key applies and owns', () => {
  let tiny, none, keyed;
  before(async () => {
    [tiny, none, keyed] = await Promise.all([
      startServer(['--sim-decode-tps', '2000', '--sim-reply', 'ok', '--responses-store-mb', '1']),
      startServer(['--sim-decode-tps', '2000', '--sim-reply', 'ok', '--responses-store-mb', '0']),
      startServer(['--sim-decode-tps', '2000', '--sim-reply', 'ok', '--api-key', 'sekrit',
        '--api-key', 'other']),
    ]);
  });
  after(async () => { await Promise.all([tiny.stop(), none.stop(), keyed.stop()]); });

  test('1 MiB: big inputs push the oldest out', async () => {
    const big = 'x'.repeat(300000);   // ~300 KB per stored input, one sim token
    const ids = [];
    for (let i = 0; i < 5; i++) {
      const r = await postJSON(tiny, '/v1/responses', { model: 'default', input: `${i} ${big}` });
      assert.equal(r.status, 200, r.text.slice(0, 300));
      ids.push(r.json.id);
    }
    assert.equal((await getJSON(tiny, `/v1/responses/${ids[0]}`)).status, 404);
    assert.equal((await getJSON(tiny, `/v1/responses/${ids[4]}`)).status, 200);
    const text = await metricsText(tiny);
    assert.ok(metric(text, 'strata_responses_evicted_total') >= 2);
    assert.ok(metric(text, 'strata_responses_stored_bytes') <= 1 << 20);
    const gone = await postJSON(tiny, '/v1/responses', { model: 'default', input: 'x',
      previous_response_id: ids[0] });
    assert.equal(gone.status, 404);
    assert.equal(gone.json.error.param, 'previous_response_id');
  });

  test('0: responses say store false and cannot be read back', async () => {
    const r = await postJSON(none, '/v1/responses', { model: 'default', input: 'hi' });
    assert.equal(r.status, 200);
    assert.equal(r.json.store, false);
    assert.equal((await getJSON(none, `/v1/responses/${r.json.id}`)).status, 404);
    const text = await metricsText(none);
    assert.equal(metric(text, 'strata_responses_stored'), 0);
  });

  test('GET and DELETE need the key like the other routes', async () => {
    const auth = { authorization: 'Bearer sekrit' };
    const r = await postJSON(keyed, '/v1/responses', { model: 'default', input: 'hi' }, auth);
    assert.equal(r.status, 200);
    assert.equal((await getJSON(keyed, `/v1/responses/${r.json.id}`)).status, 401);
    assert.equal((await del(keyed, `/v1/responses/${r.json.id}`)).status, 401);
    assert.equal((await getJSON(keyed, `/v1/responses/${r.json.id}`, auth)).status, 200);
    assert.equal((await del(keyed, `/v1/responses/${r.json.id}`, auth)).status, 200);
  });

  test("another key's response is answered as an unknown id, and stays its owner's", async () => {
    const mine = { authorization: 'Bearer sekrit' };
    const theirs = { 'x-api-key': 'other' };
    const r = await postJSON(keyed, '/v1/responses', { model: 'default', input: 'private' }, mine);
    assert.equal(r.status, 200, r.text);
    const id = r.json.id;
    // GET, input_items, DELETE and a chain from it, as the key in h
    const every = async (h) => [
      await getJSON(keyed, `/v1/responses/${id}`, h),
      await getJSON(keyed, `/v1/responses/${id}/input_items`, h),
      await del(keyed, `/v1/responses/${id}`, h),
      await postJSON(keyed, '/v1/responses', { model: 'default', input: 'x',
        previous_response_id: id }, h),
    ];
    const foreign = await every(theirs);
    for (const a of foreign) assert.equal(a.status, 404, a.text);
    // the owner still has it all: the other key's DELETE removed nothing
    assert.equal((await getJSON(keyed, `/v1/responses/${id}/input_items`, mine)).status, 200);
    const next = await postJSON(keyed, '/v1/responses', { model: 'default', input: 'more',
      previous_response_id: id }, mine);
    assert.equal(next.status, 200, next.text);
    assert.equal((await del(keyed, `/v1/responses/${id}`, mine)).status, 200);
    // word for word what the owner now gets for the id it deleted
    assert.deepEqual(foreign.map((a) => a.json), (await every(mine)).map((a) => a.json));
  });
});

// The agent loop (OpenAI Agents SDK): a call in turn 1, its output alone in
// turn 2 with previous_response_id.
describe('a tool round trip chained with previous_response_id', () => {
  const TOOL_REPLY = 'Let me check.\n'
    + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
  const tools = [{ type: 'function', name: 'get_weather', strict: false,
    parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
  let srv, client;
  before(async () => {
    srv = await startServer(['--sim-decode-tps', '2000', '--sim-reply', TOOL_REPLY]);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('function_call_output answers the stored call', async () => {
    const r1 = await client.responses.create({ model: 'default', input: 'weather in Paris?', tools });
    const fc = r1.output.find((i) => i.type === 'function_call');
    assert.ok(fc, JSON.stringify(r1.output));
    const r2 = await client.responses.create({ model: 'default', tools, previous_response_id: r1.id,
      input: [{ type: 'function_call_output', call_id: fc.call_id, output: 'sunny, 24C' }] });
    assert.equal(r2.status, 'completed');
    const want = await postJSON(srv, '/v1/chat/completions', { model: 'default', max_tokens: 1,
      tools: tools.map(({ type, ...f }) => ({ type, function: f })),
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: fc.call_id, type: 'function',
          function: { name: 'get_weather', arguments: fc.arguments } }] },
        { role: 'tool', tool_call_id: fc.call_id, content: 'sunny, 24C' }] });
    assert.equal(want.status, 200, want.text);
    assert.equal(r2.usage.input_tokens, want.json.usage.prompt_tokens);
    const items = await getJSON(srv, `/v1/responses/${r2.id}/input_items?order=asc`);
    assert.deepEqual(items.json.data.map((i) => i.type),
      ['message', 'message', 'function_call', 'function_call_output']);
    assert.match(items.json.data[3].id, /^fco_/);
  });
});

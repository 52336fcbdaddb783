// infill.test.mjs -- POST /infill (llama-server's code-infill endpoint) and
// the legacy "suffix" of /v1/completions (docs/API.md "/infill"):
//   - the sim (its six FIM ids, one token per word): the answer's shape
//     streamed and not, the exact prompt length of the repo-level layout,
//     priorities through the activity record, a disconnect mid-stream that
//     cancels, 400s naming the field;
//   - a synthetic tiny model (strata make-model) on the CPU backend: FIM
//     markers inside user code stay text (the prompt length proves it), and
//     the same model built --no-fim answers 400 fim_not_supported.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, postJSON, getJSON, parseSSE, metric, metricsText, until, STRATA_BIN } from './lib/server.mjs';

const activity = async (srv) => (await getJSON(srv, '/api/activity')).json;

describe('/infill on the sim', () => {
  let srv;
  before(async () => { srv = await startServer(['--batch', '--parallel', '2', '--sim-decode-tps', '400', '--sim-tokens', '4']); });
  after(async () => { await srv.stop(); });

  // <REP> myproject\n <SEP> a.py\n x = 1 <SEP> filename\n <PRE> def f( <SUF> return x <MID> (prompt)
  const body = { input_prefix: 'def f(', input_suffix: 'return x', input_extra: [{ filename: 'a.py', text: 'x = 1' }] };

  test('not streamed: llama-server /completion shape, exact prompt length', async () => {
    const r = await postJSON(srv, '/infill', body);
    assert.equal(r.status, 200, r.text);
    const b = r.json;
    assert.equal(b.content, 'tok1 tok2 tok3 tok4');
    assert.equal(b.stop, true);
    assert.equal(b.stop_type, 'eos');
    assert.equal(b.tokens_predicted, 4);
    assert.equal(b.tokens_evaluated, 16);
    assert.equal(b.truncated, false);
    assert.equal(b.model, 'default');
    assert.deepEqual(b.tokens, []);
    assert.equal(b.timings.predicted_n, 4);
    assert.equal(b.timings.prompt_n, 16);
    // prompt goes after <MID>: one more word, one more token; no extra: 9 fewer
    const p = await postJSON(srv, '/infill', { ...body, prompt: '  pass', n_predict: 2 });
    assert.equal(p.json.tokens_evaluated, 17);
    assert.equal(p.json.stop_type, 'limit');
    assert.equal(p.json.content, 'tok1 tok2');
    const q = await postJSON(srv, '/infill', { input_prefix: 'a', input_suffix: 'b' });
    assert.equal(q.json.tokens_evaluated, 9);   // REP,1,SEP,1,PRE,1,SUF,1,MID
  });

  test('streamed: data events, the last one stop: true, no [DONE]', async () => {
    const res = await fetch(`${srv.url}/infill`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true, max_tokens: 3 }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const ev = parseSSE(await res.text());
    assert.ok(ev.every((e) => e.data !== '[DONE]'));
    const objs = ev.map((e) => JSON.parse(e.data));
    const last = objs.at(-1);
    assert.equal(last.stop, true);
    assert.equal(last.content, '');
    assert.equal(last.stop_type, 'limit');
    assert.equal(last.tokens_predicted, 3);
    assert.ok(objs.slice(0, -1).every((o) => o.stop === false && o.index === 0));
    assert.equal(objs.slice(0, -1).map((o) => o.content).join(''), 'tok1 tok2 tok3');
  });

  test('priority: body and header reach the scheduler', async () => {
    let r = await postJSON(srv, '/infill', { ...body, n_predict: 1, priority: 70 }, { 'x-request-id': 'fim-body' });
    assert.equal(r.status, 200);
    r = await postJSON(srv, '/infill', { ...body, n_predict: 1 }, { 'x-request-id': 'fim-hdr', 'x-llamaswap-priority': 'batch' });
    assert.equal(r.status, 200);
    const acts = await activity(srv);
    const a = acts.find((x) => x.request_id === 'fim-body');
    const b = acts.find((x) => x.request_id === 'fim-hdr');
    assert.equal(a.serial_priority, 70);
    assert.equal(a.serial_band, 'interactive');
    assert.equal(b.serial_priority, -100);
    assert.equal(b.serial_band, 'batch');
  });

  test('a client that leaves mid-stream cancels its request', async () => {
    const before = metric(await metricsText(srv), 'strata_requests_total', { band: 'normal', outcome: 'cancelled' }) ?? 0;
    const ctl = new AbortController();
    const res = await fetch(`${srv.url}/infill`, {
      method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true, ignore_eos: true, n_predict: 100000 }),
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    let got = '';
    while (!got.includes(' tok2')) got += new TextDecoder().decode((await reader.read()).value);
    ctl.abort();
    await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'), 5000, 'idle slots');
    await until(async () => metric(await metricsText(srv), 'strata_requests_total', { band: 'normal', outcome: 'cancelled' }) === before + 1, 5000, 'the cancelled counter');
  });

  test('/v1/completions with suffix: the FIM prompt, OpenAI shape', async () => {
    const r = await postJSON(srv, '/v1/completions', { prompt: 'a b c', suffix: 'd e', max_tokens: 2 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.object, 'text_completion');
    assert.equal(r.json.choices[0].text, 'tok1 tok2');
    assert.equal(r.json.usage.prompt_tokens, 12);   // 4 header + PRE 3 SUF 2 MID
    const ids = await postJSON(srv, '/v1/completions', { prompt: [5, 6, 7], suffix: 'd e', max_tokens: 2 });
    assert.equal(ids.json.usage.prompt_tokens, 12, 'a token prompt is the prefix as ids');
    const plain = await postJSON(srv, '/v1/completions', { prompt: 'a b c', max_tokens: 2 });
    assert.equal(plain.json.usage.prompt_tokens, 3);
    const bad = await postJSON(srv, '/v1/completions', { prompt: 'a', suffix: 'b', echo: true });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'suffix');
  });

  test('400s name the field', async () => {
    const cases = [
      [{ input_prefix: 5 }, 'input_prefix'],
      [{ input_extra: 'x' }, 'input_extra'],
      [{ input_extra: [{ filename: 'a', text: 3 }] }, 'input_extra'],
      [{ n: 2 }, 'n'],
      [{ n_predict: -5 }, 'n_predict'],
      [{ temperature: -1 }, 'temperature'],
    ];
    for (const [b, param] of cases) {
      const r = await postJSON(srv, '/infill', b);
      assert.equal(r.status, 400, JSON.stringify(b));
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, param, JSON.stringify(b));
    }
    // one model served: any "model" runs on it (model_names.test.mjs)
    const any = await postJSON(srv, '/infill', { model: 'nope', input_prefix: 'a', n_predict: 1 });
    assert.equal(any.status, 200, any.text);
    const get = await getJSON(srv, '/infill');
    assert.equal(get.status, 405);
  });
});

describe('/infill behind API keys', () => {
  let srv;
  before(async () => { srv = await startServer(['--api-key', 'k-1', '--sim-decode-tps', '2000', '--sim-tokens', '2']); });
  after(async () => { await srv.stop(); });

  test('401 without a key, 200 with it', async () => {
    const no = await postJSON(srv, '/infill', { input_prefix: 'a' });
    assert.equal(no.status, 401);
    assert.equal(no.json.error.code, 'invalid_api_key');
    const ok = await postJSON(srv, '/infill', { input_prefix: 'a' }, { authorization: 'Bearer k-1' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.content, 'tok1 tok2');
  });
});

describe('/infill on a real tokenizer (CPU, tiny synthetic model)', () => {
  let dir;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'strata-e2e-infill-'));
    for (const [name, extra] of [['fim.gguf', []], ['nofim.gguf', ['--no-fim']]]) {
      const mk = spawnSync(STRATA_BIN, ['make-model', join(dir, name), '--preset', 'tiny', ...extra], { encoding: 'utf8' });
      assert.equal(mk.status, 0, `make-model: ${mk.stderr}`);
    }
  });
  after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  test('FIM markers in user code stay text; the layout length is exact', async () => {
    const srv = await startServer(['--backend', 'cpu', '-m', join(dir, 'fim.gguf'), '-a', 'tiny', '--threads', '1', '-c', '512']);
    try {
      const count = async (content, parse_special) => (await postJSON(srv, '/tokenize', { content, parse_special })).json.tokens.length;
      const code = 'x = "<|fim_prefix|><|fim_middle|>"';
      assert.ok(await count(code, false) > await count(code, true), 'markers are tokens only with parse_special');
      const want = 1 + await count('myproject\n', false) + 1 + await count('filename\n', false) +
                   1 + await count(code, false) + 1 + await count('return', false) + 1;
      const r = await postJSON(srv, '/infill', { input_prefix: code, input_suffix: 'return', n_predict: 2, temperature: 0 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.tokens_evaluated, want);
      assert.equal(r.json.tokens_predicted <= 2, true);
    } finally { await srv.stop(); }
  });

  test('a model without FIM tokens: 400 fim_not_supported, for /infill and suffix', async () => {
    const srv = await startServer(['--backend', 'cpu', '-m', join(dir, 'nofim.gguf'), '-a', 'tiny', '--threads', '1', '-c', '512']);
    try {
      const r = await postJSON(srv, '/infill', { input_prefix: 'a', input_suffix: 'b' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'fim_not_supported');
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.match(r.json.error.message, /fill-in-the-middle/);
      const s = await postJSON(srv, '/v1/completions', { prompt: 'a', suffix: 'b' });
      assert.equal(s.status, 400);
      assert.equal(s.json.error.code, 'fim_not_supported');
      const plain = await postJSON(srv, '/v1/completions', { prompt: 'a', max_tokens: 1 });
      assert.equal(plain.status, 200, 'without suffix the model still completes');
    } finally { await srv.stop(); }
  });
});

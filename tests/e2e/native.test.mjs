// native.test.mjs -- llama-server's native API (docs/API.md "/completion",
// "/props"):
//   - the sim (one token per word "tokN"): /completion and its /completions
//     alias, streamed and not, n_predict, stop_type eos/limit/word with the
//     stopping word, several prompts (an array of results; streamed objects
//     told apart by index), return_tokens, generation_settings, 400s naming
//     the field; GET /props;
//   - a synthetic tiny model on the CPU: completion_probabilities against
//     /v1/completions' logprobs for the same greedy request, and
//     post_sampling_probs as exp(logprob);
//   - timings_per_token and return_progress on /completion, chat,
//     completions and Responses streams.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startServer, postJSON, getJSON, parseSSE, startTinyModel } from './lib/server.mjs';

describe('/completion on the sim', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '2', '--sim-decode-tps', '2000', '--sim-tokens', '5']);
  });
  after(async () => { await srv.stop(); });

  test('not streamed: content, stop_type, counts, settings', async () => {
    const r = await postJSON(srv, '/completion', { prompt: 'one two three', n_predict: 3 });
    assert.equal(r.status, 200, r.text);
    const b = r.json;
    assert.equal(b.content, 'tok1 tok2 tok3');
    assert.equal(b.stop, true);
    assert.equal(b.stop_type, 'limit');
    assert.equal(b.stopping_word, '');
    assert.equal(b.tokens_predicted, 3);
    assert.ok(b.tokens_evaluated >= 3);
    assert.deepEqual(b.tokens, []);                 // return_tokens not asked
    assert.equal(b.generation_settings.n_predict, 3);
    assert.equal(b.generation_settings.stream, false);
    assert.deepEqual(b.generation_settings.logit_bias, []);
    const lb = await postJSON(srv, '/completion', { prompt: 'one', n_predict: 1, logit_bias: { 5: -2 } });
    assert.equal(lb.status, 200, lb.text);
    assert.deepEqual(lb.json.generation_settings.logit_bias, [{ token: 5, bias: -2 }]);
    // llama-server's array form: [id, bias], false = never (text: the real model below)
    const la = await postJSON(srv, '/completion', { prompt: 'one', n_predict: 1, logit_bias: [[5, -2], [7, false]] });
    assert.equal(la.status, 200, la.text);
    assert.deepEqual(la.json.generation_settings.logit_bias, [{ token: 5, bias: -2 }, { token: 7, bias: -100 }]);
    const lt = await postJSON(srv, '/completion', { prompt: 'one', n_predict: 1, logit_bias: [[' the', -2], ['', 1]] });
    assert.equal(lt.status, 400, lt.text);   // an empty text is neither
    assert.equal(lt.json.error.param, 'logit_bias');
    assert.equal(b.timings.predicted_n, 3);
    // the rate is over the tokens after the first (it comes with the read), as llama-server's,
    // written in full so that it is exactly the rate of the predicted_ms a client reads
    assert.equal(b.timings.predicted_per_second, 1e3 / b.timings.predicted_ms * 2);
    assert.equal(b.timings.predicted_per_token_ms, b.timings.predicted_ms / 2);
    const one = await postJSON(srv, '/completion', { prompt: 'one', n_predict: 1 });
    assert.equal(one.json.timings.predicted_n, 1);
    assert.equal(one.json.timings.predicted_per_second, 0);
    assert.equal(one.json.timings.predicted_per_token_ms, 0);
    // prompt_n the tokens read, cache_n those reused (llama-server's split)
    assert.equal(b.timings.prompt_n + b.timings.cache_n, b.tokens_evaluated);
    const again = await postJSON(srv, '/completion', { prompt: 'one two three', n_predict: 3 });
    assert.ok(again.json.timings.cache_n > 0, again.text);
    assert.equal(again.json.timings.cache_n, again.json.tokens_cached);
    assert.equal(again.json.timings.prompt_n + again.json.timings.cache_n, again.json.tokens_evaluated);
    assert.equal(b.model, 'default');
    assert.equal(b.completion_probabilities, undefined);

    const e = await postJSON(srv, '/completions', { prompt: 'one two three' });
    assert.equal(e.status, 200, e.text);
    assert.equal(e.json.content, 'tok1 tok2 tok3 tok4 tok5');
    assert.equal(e.json.stop_type, 'eos');
  });

  test('a stop string: stop_type word, the word named, left out of content', async () => {
    const r = await postJSON(srv, '/completion', { prompt: 'x', stop: [' tok3'] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.content, 'tok1 tok2');
    assert.equal(r.json.stop_type, 'word');
    assert.equal(r.json.stopping_word, ' tok3');
  });

  test('return_tokens: one id per generated token', async () => {
    const r = await postJSON(srv, '/completion', { prompt: 'x', n_predict: 4, return_tokens: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.tokens.length, 4);
    assert.ok(r.json.tokens.every(Number.isInteger));
  });

  test('several prompts: an array of results in order', async () => {
    const r = await postJSON(srv, '/completion', { prompt: ['a', 'b c d e f'], n_predict: 2 });
    assert.equal(r.status, 200, r.text);
    assert.ok(Array.isArray(r.json));
    assert.equal(r.json.length, 2);
    assert.deepEqual(r.json.map((x) => x.index), [0, 1]);
    assert.ok(r.json[1].tokens_evaluated > r.json[0].tokens_evaluated);
  });

  test('streamed: one object per token, then stop: true; no [DONE]', async () => {
    const res = await fetch(`${srv.url}/completion`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: ['a', 'b'], n_predict: 3, stream: true }),
    });
    assert.equal(res.status, 200);
    const ev = parseSSE(await res.text());
    assert.ok(ev.every((x) => x.data !== '[DONE]'));
    const objs = ev.map((x) => JSON.parse(x.data));
    for (const idx of [0, 1]) {
      const mine = objs.filter((o) => o.index === idx);
      const last = mine.at(-1);
      assert.equal(last.stop, true);
      assert.equal(last.content, '');
      assert.equal(last.stop_type, 'limit');
      const toks = mine.slice(0, -1);
      assert.equal(toks.length, 3);
      assert.ok(toks.every((o) => o.stop === false && o.tokens.length === 1));
      assert.equal(toks.map((o) => o.content).join(''), 'tok1 tok2 tok3');
    }
  });

  test('bad fields: 400 naming them', async () => {
    for (const [body, param] of [
      [{ prompt: 'x', n_predict: -2 }, 'n_predict'],
      [{ prompt: 'x', n_probs: 21 }, 'n_probs'],
      [{ prompt: 'x', id_slot: 1 }, 'id_slot'],
      [{ prompt: 'x', return_tokens: 'yes' }, 'return_tokens'],
      [{ prompt: 'x', echo: true }, 'echo'],
      [{ n_predict: 1 }, 'prompt'],
    ]) {
      const r = await postJSON(srv, '/completion', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.param, param, r.text);
    }
  });

  test('GET /props: the default settings, slots, model', async () => {
    const r = await getJSON(srv, '/props');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.total_slots, 2);
    assert.equal(r.json.model_alias, 'default');
    const p = r.json.default_generation_settings.params;
    assert.equal(p.n_predict, -1);
    assert.equal(p.top_k, 40);
    assert.ok(r.json.default_generation_settings.n_ctx > 0);
    assert.equal(r.json.modalities.vision, false);
  });
});

describe('/completion probabilities on a real model (CPU)', () => {
  let srv, dir;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-native-', 5, 512));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('completion_probabilities match /v1/completions logprobs', async () => {
    const body = { prompt: 'The quick brown fox', temperature: 0, seed: 1 };
    const n = await postJSON(srv, '/completion', { ...body, n_predict: 4, n_probs: 3 });
    assert.equal(n.status, 200, n.text);
    const o = await postJSON(srv, '/v1/completions', { ...body, model: 'tiny', max_tokens: 4, logprobs: 3 });
    assert.equal(o.status, 200, o.text);
    const probs = n.json.completion_probabilities;
    assert.equal(probs.length, 4);
    const lp = o.json.choices[0].logprobs.token_logprobs;
    probs.forEach((p, i) => {
      assert.ok(Number.isInteger(p.id));
      assert.ok(Math.abs(p.logprob - lp[i]) < 1e-4, `${p.logprob} vs ${lp[i]}`);
      assert.equal(p.top_logprobs.length, 3);
      assert.ok(p.top_logprobs[0].logprob >= p.top_logprobs[1].logprob);
      assert.ok(Array.isArray(p.bytes));
    });
    assert.equal(n.json.content, o.json.choices[0].text);

    const s = await postJSON(srv, '/completion', { ...body, n_predict: 2, n_probs: 2, post_sampling_probs: true });
    assert.equal(s.status, 200, s.text);
    s.json.completion_probabilities.forEach((p, i) => {
      assert.ok(Math.abs(p.prob - Math.exp(probs[i].logprob)) < 1e-4);
      assert.equal(p.top_probs.length, 2);
      assert.equal(p.logprob, undefined);
    });
  });

  test('logit_bias keyed by text: each of its tokens, as the same biases by id', async () => {
    const text = ' hello world';
    const tok = await postJSON(srv, '/tokenize', { content: text });
    const ids = tok.json.tokens;
    assert.ok(ids.length >= 1, tok.text);
    const body = { prompt: 'The quick brown fox', temperature: 0, n_predict: 6 };
    const byId = await postJSON(srv, '/completion', { ...body, logit_bias: ids.map((id) => [id, 100]) });
    assert.equal(byId.status, 200, byId.text);
    for (const logit_bias of [{ [text]: 100 }, [[text, 100]]]) {
      const r = await postJSON(srv, '/completion', { ...body, logit_bias });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.content, byId.json.content, JSON.stringify(logit_bias));
    }
    // only the text's tokens can win at +100
    const again = await postJSON(srv, '/tokenize', { content: byId.json.content });
    for (const id of again.json.tokens) assert.ok(ids.includes(id), byId.json.content);
    // false bans: the first greedy token, named by its text, is not sampled again
    const plain = await postJSON(srv, '/completion', { ...body, n_predict: 1, n_probs: 1 });
    const first = plain.json.completion_probabilities[0];
    const ban = await postJSON(srv, '/completion', { ...body, n_predict: 1, n_probs: 1,
      logit_bias: { [first.token]: false } });
    assert.equal(ban.status, 200, ban.text);
    assert.notEqual(ban.json.completion_probabilities[0].id, first.id);
  });

  test('a JSON object prompt: its prompt_string (llama-server); multimodal_data is a 400', async () => {
    const a = await postJSON(srv, '/completion', { prompt: { prompt_string: 'The quick' }, n_predict: 2, temperature: 0 });
    const b = await postJSON(srv, '/completion', { prompt: 'The quick', n_predict: 2, temperature: 0 });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.json.content, b.json.content);
    const m = await postJSON(srv, '/completion', { prompt: { prompt_string: 'x', multimodal_data: ['AAAA'] } });
    assert.equal(m.status, 400, m.text);
    assert.equal(m.json.error.param, 'prompt');
  });
});

// llama-server's stream extras on /completion and chat (docs/API.md
// "timings_per_token and return_progress"): the sim reads the prompt in
// chunks of --ubatch 4 tokens, one word each.
describe('timings_per_token and return_progress', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--sim-decode-tps', '2000', '--sim-tokens', '3', '--ubatch', '4']);
  });
  after(async () => { await srv.stop(); });

  const stream = async (path, body) => {
    const res = await fetch(`${srv.url}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    assert.equal(res.status, 200);
    return parseSSE(await res.text()).filter((x) => x.data !== '[DONE]').map((x) => JSON.parse(x.data));
  };
  const words = (n) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

  // total, cache fixed; processed from cache (nothing read) up to total, one chunk each
  const checkProgress = (objs, { cached = false } = {}) => {
    const p = objs.filter((o) => o.prompt_progress).map((o) => o.prompt_progress);
    assert.ok(p.length >= 2, JSON.stringify(objs));
    assert.equal(p[0].processed, p[0].cache);
    assert.equal(p[0].time_ms, 0);
    if (cached) assert.ok(p[0].cache > 0);
    for (let i = 1; i < p.length; i++) {
      assert.equal(p[i].total, p[0].total);
      assert.equal(p[i].cache, p[0].cache);
      assert.ok(p[i].processed > p[i - 1].processed);
      assert.ok(p[i].processed - p[i - 1].processed <= 4);   // one --ubatch chunk each
      assert.ok(p[i].time_ms >= p[i - 1].time_ms);
    }
    assert.equal(p.at(-1).processed, p[0].total);
    // all of them before the first token's
    const text = (o) => o.content ?? o.choices?.[0]?.delta?.content ?? o.choices?.[0]?.text ?? '';
    const firstTok = objs.findIndex((o) => text(o) !== '');
    assert.ok(firstTok > 0);
    assert.ok(objs.findLastIndex((o) => o.prompt_progress) < firstTok);
    return p;
  };

  test('/completion: progress objects while the prompt is read, then the tokens', async () => {
    const objs = await stream('/completion', { prompt: words(10), n_predict: 2, return_progress: true });
    const p = checkProgress(objs);
    assert.equal(p.length, 1 + Math.ceil((p[0].total - p[0].cache) / 4));
    for (const o of objs.filter((x) => x.prompt_progress)) {
      assert.equal(o.content, '');
      assert.equal(o.stop, false);
      assert.deepEqual(o.tokens, []);
      assert.equal(o.timings, undefined);   // not asked
    }
    assert.equal(objs.filter((o) => !o.prompt_progress && !o.stop).map((o) => o.content).join(''), 'tok1 tok2');
    // the same prompt again: its cached prefix is reported, not read
    checkProgress(await stream('/completion', { prompt: words(10), n_predict: 2, return_progress: true }),
      { cached: true });
    // not asked, or not a stream: none
    const plain = await stream('/completion', { prompt: words(10), n_predict: 2 });
    assert.ok(plain.every((o) => !o.prompt_progress));
    const whole = await postJSON(srv, '/completion', { prompt: words(10), n_predict: 2, return_progress: true });
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.json.prompt_progress, undefined);
  });

  test('/completion: timings on every object', async () => {
    const objs = await stream('/completion', { prompt: words(9), n_predict: 3, timings_per_token: true,
      return_progress: true });
    assert.ok(objs.every((o) => o.timings), JSON.stringify(objs));
    const prog = objs.filter((o) => o.prompt_progress);
    // the first report comes before anything is read
    assert.equal(prog[0].timings.prompt_n, 0);
    assert.equal(prog[0].timings.prompt_ms, 0);
    assert.equal(prog[0].timings.predicted_n, 0);
    for (const o of prog) {
      assert.equal(o.timings.prompt_n, o.prompt_progress.processed - o.prompt_progress.cache);
      assert.equal(o.timings.prompt_ms, o.prompt_progress.time_ms);
    }
    const toks = objs.filter((o) => !o.prompt_progress && !o.stop);
    assert.deepEqual(toks.map((o) => o.timings.predicted_n), [1, 2, 3]);
    for (const o of objs) {
      for (const [k, v] of Object.entries(o.timings)) assert.ok(typeof v === 'number' && v >= 0, k);
    }
    const plain = await stream('/completion', { prompt: words(9), n_predict: 2 });
    assert.ok(plain.filter((o) => !o.stop).every((o) => o.timings === undefined));
    assert.ok(plain.at(-1).timings);   // the last object's, as always
  });

  test('chat: role-delta progress chunks; timings on every chunk but the role chunk', async () => {
    const objs = await stream('/v1/chat/completions', {
      messages: [{ role: 'user', content: words(11) }], max_tokens: 3,
      return_progress: true, timings_per_token: true, stream_options: { include_usage: true },
    });
    checkProgress(objs);
    for (const o of objs.filter((x) => x.prompt_progress)) {
      assert.equal(o.object, 'chat.completion.chunk');
      assert.deepEqual(o.choices[0].delta, { role: 'assistant', content: null });
      assert.ok(o.timings);
    }
    const rest = objs.filter((o) => !o.prompt_progress);
    assert.deepEqual(rest[0].choices[0].delta, { role: 'assistant', content: null });
    assert.equal(rest[0].timings, undefined);
    assert.ok(rest.slice(1).every((o) => o.timings), JSON.stringify(rest));
    const usage = rest.at(-1);
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.timings.predicted_n, 3);
    // neither asked: no extras (the usual chunks)
    const plain = await stream('/v1/chat/completions', { messages: [{ role: 'user', content: words(11) }], max_tokens: 2 });
    assert.ok(plain.every((o) => !o.prompt_progress && !o.timings));
  });

  test('/v1/completions: empty-text progress chunks', async () => {
    const objs = await stream('/v1/completions', { prompt: words(7), max_tokens: 2, return_progress: true });
    checkProgress(objs);
    for (const o of objs.filter((x) => x.prompt_progress)) {
      assert.equal(o.object, 'text_completion');
      assert.equal(o.choices[0].text, '');
      assert.equal(o.choices[0].finish_reason, null);
    }
  });

  test('/v1/responses: in_progress events with prompt_progress; timings on deltas and the end', async () => {
    const objs = await stream('/v1/responses', { input: words(10), max_output_tokens: 3,
      return_progress: true, timings_per_token: true });
    const prog = objs.filter((o) => o.prompt_progress);
    assert.ok(prog.length >= 2, JSON.stringify(objs));
    assert.ok(prog.every((o) => o.type === 'response.in_progress' && o.response && o.timings));
    assert.equal(prog[0].prompt_progress.processed, prog[0].prompt_progress.cache);
    assert.equal(prog.at(-1).prompt_progress.processed, prog[0].prompt_progress.total);
    const deltas = objs.filter((o) => o.type === 'response.output_text.delta');
    assert.ok(deltas.length > 0 && deltas.every((o) => o.timings?.predicted_n > 0));
    const end = objs.at(-1);
    assert.ok(['response.completed', 'response.incomplete'].includes(end.type), end.type);
    assert.equal(end.timings.predicted_n, 3);
    // the first events are the usual ones, without extras
    assert.equal(objs[0].type, 'response.created');
    assert.equal(objs[0].timings, undefined);
    const plain = await stream('/v1/responses', { input: words(10), max_output_tokens: 2 });
    assert.ok(plain.every((o) => !o.prompt_progress && !o.timings));
  });

  test('bad types: 400 naming the field', async () => {
    for (const f of ['timings_per_token', 'return_progress']) {
      const r = await postJSON(srv, '/completion', { prompt: 'x', [f]: 'yes' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.param, f);
    }
  });
});

// models.test.mjs -- several models on one server (docs/MODELS.md), through
// the real binary: a --config file of three sim models on two sim engines
// (--gpus 0,1), loads of 0.2 s (--sim-load-seconds):
//
//   alpha   aliases a, first; preload: both engines load it at start
//   beta    ctx_size 2048; loads on first use (a swap: no engine is empty)
//   broken  path "fail:disk on fire": every load fails with that reason
//
// What a user sees of it: /v1/models (states, aliases, engines, the failure
// reason and retry time), requests by alias, 404 for an unknown model, 503
// with the reason and Retry-After for the broken one while the others keep
// serving, /slots (each engine's model and context), /api/activity
// (swap_from, load_ms) and /metrics (strata_model_*, promtool-clean).
// About 2 s: five loads of 0.2 s, the rest is HTTP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, postJSON, getJSON, metric, metricsText } from './lib/server.mjs';

const CONFIG = `# written by tests/e2e/models.test.mjs
batch: true
parallel: 2
models:
  - name: alpha
    aliases: [a, first]
    preload: true
  - name: beta
    ctx_size: 4096   # both slots together: 2048 each
  - name: broken
    path: "fail:disk on fire"
`;

let srv;
let dir;
let firstScrape;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-models-'));
  const cfg = path.join(dir, 'models.yaml');
  fs.writeFileSync(cfg, CONFIG);
  srv = await startServer(['--config', cfg, '--gpus', '0,1', '--sim-load-seconds', '0.2',
    '--sim-decode-tps', '1000', '--sim-tokens', '2']);
  firstScrape = await metricsText(srv);
});

after(async () => {
  if (srv) await srv.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const chat = (model, extra = {}) => postJSON(srv, '/v1/chat/completions', {
  model, messages: [{ role: 'user', content: 'hello there' }], max_tokens: 2, ...extra,
});
const models = async () => {
  const r = await getJSON(srv, '/v1/models');
  assert.equal(r.status, 200);
  return Object.fromEntries(r.json.data.map((m) => [m.id, m]));
};
const activity = async () => (await getJSON(srv, '/api/activity')).json;

test('/v1/models lists every model with its state, aliases and engines', async () => {
  const m = await models();
  assert.deepEqual(Object.keys(m), ['alpha', 'beta', 'broken']);
  assert.equal(m.alpha.strata.state, 'loaded');
  assert.deepEqual(m.alpha.strata.aliases, ['a', 'first']);
  assert.deepEqual(m.alpha.strata.engines, [0, 1]);   // preload: both engines
  assert.equal(m.alpha.strata.ctx_size, 4096);
  for (const id of ['beta', 'broken']) {
    assert.equal(m[id].strata.state, 'unloaded', id);
    assert.deepEqual(m[id].strata.engines, [], id);
    assert.equal(m[id].strata.reason, undefined, id);
    assert.equal(m[id].strata.retry_in_s, undefined, id);
  }
  assert.equal(m.beta.strata.ctx_size, 2048);
  // /slots shows the preloaded model on every slot before any request (an
  // engine that has served nothing since its start-up load included)
  const slots = (await getJSON(srv, '/slots')).json;
  assert.equal(slots.length, 4);
  for (const s of slots) {
    assert.equal(s.model, 'alpha', `engine ${s.engine} slot ${s.id}`);
    assert.equal(s.n_ctx, 4096, `engine ${s.engine} slot ${s.id}`);
  }
  // by alias, the model itself
  const one = await getJSON(srv, '/v1/models/first');
  assert.equal(one.status, 200);
  assert.equal(one.json.id, 'alpha');
});

test('every model series is on /metrics from the first scrape', () => {
  const t = firstScrape;
  for (const [name, type] of [['strata_model_loaded', 'gauge'], ['strata_model_load_seconds', 'histogram'],
    ['strata_model_swaps_total', 'counter'], ['strata_model_load_failures_total', 'counter']])
    assert.ok(t.includes(`# TYPE ${name} ${type}\n`), `TYPE ${name}`);
  assert.equal(metric(t, 'strata_model_loaded', { model: 'alpha' }), 2);
  for (const model of ['beta', 'broken']) {
    assert.equal(metric(t, 'strata_model_loaded', { model }), 0, model);
    assert.equal(metric(t, 'strata_model_load_seconds_count', { model }), 0, model);
    assert.equal(metric(t, 'strata_model_load_seconds_bucket', { model, le: '+Inf' }), 0, model);
  }
  for (const model of ['alpha', 'beta', 'broken'])
    assert.equal(metric(t, 'strata_model_load_failures_total', { model }), 0, model);
  // the two start-up loads are loads onto empty engines
  assert.equal(metric(t, 'strata_model_swaps_total', { from: 'none', to: 'alpha' }), 2);
  assert.equal(metric(t, 'strata_model_load_seconds_count', { model: 'alpha' }), 2);
  for (const [from, to] of [['none', 'beta'], ['alpha', 'beta'], ['beta', 'alpha'], ['alpha', 'broken'], ['broken', 'beta']])
    assert.equal(metric(t, 'strata_model_swaps_total', { from, to }), 0, `${from} -> ${to}`);
  assert.equal(metric(t, 'strata_model_swaps_total', { from: 'alpha', to: 'alpha' }), undefined);
});

test('a request by alias is served by its model', async () => {
  for (const alias of ['a', 'first', 'alpha']) {
    const r = await chat(alias);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.model, 'alpha');
  }
  const last = (await activity()).at(-1);
  assert.equal(last.model, 'alpha');
  assert.equal(last.swapped, false);
  assert.equal(last.swap_from, null);
  assert.equal(last.load_ms, 0);
});

test('an unknown model is 404 model_not_found', async () => {
  const r = await chat('gamma');
  assert.equal(r.status, 404);
  assert.equal(r.json.error.code, 'model_not_found');
  assert.equal(r.json.error.param, 'model');
  const one = await getJSON(srv, '/v1/models/gamma');
  assert.equal(one.status, 404);
  assert.equal(one.json.error.code, 'model_not_found');
});

test('a request for another model swaps an engine: activity, slots, metrics', async () => {
  const r = await chat('beta');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.model, 'beta');
  const rec = (await activity()).at(-1);
  assert.equal(rec.model, 'beta');
  assert.equal(rec.swapped, true);
  assert.equal(rec.swap_from, 'alpha');
  assert.ok(rec.load_ms >= 150 && rec.load_ms < 5000, `load_ms ${rec.load_ms}`);
  assert.equal(rec.outcome, 'completed');

  // each slot shows its engine's model and that model's context
  const slots = (await getJSON(srv, '/slots')).json;
  const byEngine = {};
  for (const s of slots) byEngine[s.engine] = s;
  assert.equal(byEngine[rec.engine].model, 'beta');
  assert.equal(byEngine[rec.engine].n_ctx, 2048);
  assert.equal(byEngine[1 - rec.engine].model, 'alpha');
  assert.equal(byEngine[1 - rec.engine].n_ctx, 4096);

  const m = await models();
  assert.equal(m.beta.strata.state, 'loaded');
  assert.deepEqual(m.beta.strata.engines, [rec.engine]);
  assert.deepEqual(m.alpha.strata.engines, [1 - rec.engine]);

  const t = await metricsText(srv);
  assert.equal(metric(t, 'strata_model_swaps_total', { from: 'alpha', to: 'beta' }), 1);
  assert.equal(metric(t, 'strata_model_loaded', { model: 'alpha' }), 1);
  assert.equal(metric(t, 'strata_model_loaded', { model: 'beta' }), 1);
  assert.equal(metric(t, 'strata_model_load_seconds_count', { model: 'beta' }), 1);
  assert.ok(metric(t, 'strata_model_load_seconds_sum', { model: 'beta' }) >= 0.15);
});

test('a model that fails to load: 503 with the reason and Retry-After; the others keep serving', async () => {
  // The first attempt loads it and fails (a streamed request: answered
  // with its real status, since no token was sent); the other engine may
  // still try; once every engine is in its back-off the model is blocked
  // and requests are refused at once, saying when the next try is.
  const seen = [];
  for (let i = 0; i < 4; i++) {
    const r = await chat('broken', i === 0 ? { stream: true } : {});
    assert.equal(r.status, 503, r.text);
    assert.equal(r.json.error.type, 'unavailable_error');
    assert.equal(r.json.error.code, 'model_load_failed');
    assert.match(r.json.error.message, /^model 'broken' failed to load: disk on fire/);
    const retry = Number(r.headers.get('retry-after'));
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 30, `Retry-After ${r.headers.get('retry-after')}`);
    seen.push(r.json.error.message);
    if (/the next request after \d+ s tries again/.test(r.json.error.message)) break;
  }
  assert.ok(!/tries again/.test(seen[0]), 'the first request tried the load');
  assert.match(seen.at(-1), /the next request after \d+ s tries again/, seen.join('\n'));

  const m = await models();
  assert.equal(m.broken.strata.state, 'failed');
  assert.equal(m.broken.strata.reason, 'disk on fire');
  assert.ok(m.broken.strata.retry_in_s >= 1 && m.broken.strata.retry_in_s <= 30, `${m.broken.strata.retry_in_s}`);
  assert.deepEqual(m.broken.strata.engines, []);

  const failed = (await activity()).filter((a) => a.model === 'broken');
  assert.ok(failed.length >= 1);
  for (const a of failed) {
    assert.equal(a.swapped, true);
    assert.equal(a.outcome, 'failed');
    assert.ok(['alpha', 'beta'].includes(a.swap_from), `swap_from ${a.swap_from}`);
    assert.ok(a.load_ms >= 150, `load_ms ${a.load_ms}`);
  }

  // the failed loads left engines empty; the other models load again and serve
  for (const id of ['alpha', 'beta']) {
    const r = await chat(id);
    assert.equal(r.status, 200, `${id}: ${r.text}`);
    assert.equal(r.json.model, id);
  }
  const after = await models();
  assert.equal(after.alpha.strata.state, 'loaded');
  assert.equal(after.beta.strata.state, 'loaded');
  assert.equal(after.broken.strata.state, 'failed');

  const t = await metricsText(srv);
  assert.equal(metric(t, 'strata_model_load_failures_total', { model: 'broken' }), failed.length);
  assert.equal(metric(t, 'strata_model_load_seconds_count', { model: 'broken' }), failed.length);
  assert.equal(metric(t, 'strata_model_loaded', { model: 'broken' }), 0);
  assert.equal(metric(t, 'strata_model_swaps_total', { from: 'none', to: 'broken' }), 0);
  assert.equal(metric(t, 'strata_model_loaded', { model: 'alpha' }) + metric(t, 'strata_model_loaded', { model: 'beta' }), 2);
});

test('promtool check metrics accepts the multi-model scrape', async () => {
  const t = await metricsText(srv);
  const rest = t.split('\n').filter((l) => !/^(# (HELP|TYPE) )?(vllm|strata|llamacpp):/.test(l)).join('\n');
  const r = spawnSync('promtool', ['check', 'metrics'], { input: rest, encoding: 'utf8' });
  assert.ok(!r.error, `promtool must be installed (Debian package "prometheus"): ${r.error}`);
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

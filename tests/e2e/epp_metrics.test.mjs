// epp_metrics.test.mjs -- what a router's endpoint picker reads from
// /metrics (docs/SCALE-OUT.md "Metrics"): the llm-d / Gateway API Inference
// Extension EPP's rules, checked against the real binary:
//   - every family it reads has a `# TYPE ... gauge` line (untyped reads 0);
//   - a family without a label filter is read from its first series, so the
//     strata: families start with the pod-wide total;
//   - the KV figure is a fraction 0..1;
//   - cache_config_info carries block_size and num_gpu_blocks as integers;
//   - the LoRA-info gauge (vllm:lora_requests_info, strata:models_info) says
//     which models are loaded and which wait for a load, so the picker's
//     affinity scorer prefers a pod holding the requested model.
// One sim engine, two models of 4096 tokens x 1 slot, decoding slowly enough
// that a request holds the slot while the others queue behind it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, metric, metricsText, until } from './lib/server.mjs';

const CONFIG = `# written by tests/e2e/epp_metrics.test.mjs
parallel: 1
models:
  - name: alpha
    aliases: [a]
    ctx_size: 4096
    preload: true
  - name: beta
    ctx_size: 4096
`;

let srv;
let dir;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-epp-'));
  const cfg = path.join(dir, 'models.yaml');
  fs.writeFileSync(cfg, CONFIG);
  srv = await startServer(['--config', cfg, '--sim-decode-tps', '20', '--sim-load-seconds', '0.1']);
});

after(async () => {
  if (srv) await srv.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// The labels of the first sample of a family, and its value.
function firstSeries(text, name) {
  for (const line of text.split('\n')) {
    const m = line.match(/^([^\s{]+)(\{(.*)\})?\s+(\S+)$/);
    if (!m || m[1] !== name) continue;
    const labels = {};
    for (const kv of (m[3] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[kv[1]] = kv[2];
    return { labels, value: Number(m[4]) };
  }
  return undefined;
}

const LOAD = ['vllm:num_requests_waiting', 'vllm:num_requests_running', 'vllm:kv_cache_usage_perc',
  'strata:num_requests_waiting', 'strata:num_requests_running', 'strata:kv_cache_usage_ratio'];
const INFO = ['vllm:cache_config_info', 'strata:cache_config_info', 'vllm:lora_requests_info',
  'strata:models_info', 'strata:model_swaps_in_progress'];

test('every family the picker reads is a typed gauge whose first series is unlabeled or the info', async () => {
  const t = await metricsText(srv);
  for (const name of [...LOAD, ...INFO]) {
    assert.ok(t.includes(`# TYPE ${name} gauge\n`), `TYPE ${name} gauge`);
    assert.ok(firstSeries(t, name), `a sample of ${name}`);
  }
  for (const name of LOAD)
    assert.deepEqual(firstSeries(t, name).labels, {}, `${name}: the pod-wide total comes first`);
  for (const name of ['vllm:kv_cache_usage_perc', 'strata:kv_cache_usage_ratio']) {
    const kv = firstSeries(t, name).value;
    assert.ok(kv >= 0 && kv <= 1, `${name} ${kv} is a fraction`);
  }
});

test('cache_config_info: 16-token blocks, the slots\' KV in blocks', async () => {
  const t = await metricsText(srv);
  for (const name of ['vllm:cache_config_info', 'strata:cache_config_info']) {
    const s = firstSeries(t, name);
    assert.equal(s.value, 1);
    assert.equal(s.labels.block_size, '16');
    assert.equal(s.labels.num_gpu_blocks, String((1 * 4096) / 16));
  }
});

test('models info at rest: the preloaded model and its alias run, nothing waits', async () => {
  const t = await metricsText(srv);
  for (const name of ['vllm:lora_requests_info', 'strata:models_info']) {
    const s = firstSeries(t, name);
    assert.equal(s.labels.max_lora, '1', 'one engine holds one model');
    assert.equal(s.labels.running_lora_adapters, 'alpha,a');
    assert.equal(s.labels.waiting_lora_adapters, '');
    assert.ok(Math.abs(s.value - Date.now() / 1000) < 600, `unix time, got ${s.value}`);
  }
  assert.equal(metric(t, 'strata:model_swaps_in_progress'), 0);
});

// A streamed request that holds its slot until aborted.
function hold(model, headers = {}) {
  const ctl = new AbortController();
  const done = fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST',
    signal: ctl.signal,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 2000, stream: true }),
  }).then((r) => r.body.getReader().read().then(() => r)).catch(() => null);
  return { ctl, done };
}

test('under load: totals first, bands after; a queued model not loaded is waiting', async () => {
  const running = hold('alpha');
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_running') === 1, 10000, 'alpha running');
  const queued = [hold('beta'), hold('a', { 'x-llamaswap-priority': 'interactive' })];
  // kv_usage is the slots' view, refreshed at the end of each engine step:
  // the holder's first step (its read) may still run when the others queue
  const t = await until(async () => {
    const s = await metricsText(srv);
    return metric(s, 'vllm:num_requests_waiting') === 2 && metric(s, 'vllm:kv_cache_usage_perc') > 0 ? s : null;
  }, 10000, 'two waiting, the running one holding KV');
  assert.equal(firstSeries(t, 'strata:num_requests_waiting').value, 2);
  assert.equal(metric(t, 'strata:num_requests_waiting', { band: 'interactive' }), 1);
  assert.equal(metric(t, 'strata:num_requests_waiting', { band: 'normal' }), 1);
  assert.equal(metric(t, 'strata:num_requests_waiting', { band: 'batch' }), 0);
  assert.equal(firstSeries(t, 'strata:num_requests_running').value, 1);
  assert.equal(metric(t, 'strata:num_requests_running', { band: 'normal' }), 1);
  for (const name of ['vllm:lora_requests_info', 'strata:models_info']) {
    const s = firstSeries(t, name);
    assert.equal(s.labels.running_lora_adapters, 'alpha,a');
    assert.equal(s.labels.waiting_lora_adapters, 'beta', 'beta is queued and loaded nowhere');
  }
  const kv = firstSeries(t, 'strata:kv_cache_usage_ratio').value;
  assert.equal(firstSeries(t, 'vllm:kv_cache_usage_perc').value, kv);
  assert.ok(kv > 0 && kv <= 1, `a running request holds KV: ${kv}`);
  for (const r of [running, ...queued]) r.ctl.abort();
  await Promise.all([running, ...queued].map((r) => r.done));
  await until(async () => {
    const s = await metricsText(srv);
    return metric(s, 'vllm:num_requests_waiting') === 0 && metric(s, 'vllm:num_requests_running') === 0;
  }, 10000, 'queue and slots empty after the aborts');
});

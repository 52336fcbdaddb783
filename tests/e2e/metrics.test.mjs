// metrics.test.mjs -- GET /metrics: Prometheus text 0.0.4, every family
// with HELP and TYPE, every band label from the first scrape, counters that
// move, and `promtool check metrics` (Debian package prometheus). promtool
// missing is a failure, not a skip.
//
// promtool's linter flags one thing on purpose: the vllm:*, strata:* and
// llamacpp:* families have a colon in their names. Those names are what the
// Kubernetes Gateway API Inference Extension's endpoint picker reads (vLLM
// exports the same; docs/SCALE-OUT.md) and what llama-server exports, so
// they stay; the test accepts exactly that lint message for exactly those
// names (and llama-server's counter n_tokens_max without _total), and the
// rest of the scrape must lint clean. epp_metrics.test.mjs
// checks what the router-facing families say.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startServer, postJSON, metric, metricsText, chatBody } from './lib/server.mjs';

let srv;
let first;
before(async () => {
  srv = await startServer(['--batch', '--parallel', '3', '--sim-decode-tps', '2000', '--sim-tokens', '3']);
  first = await fetch(`${srv.url}/metrics`);
});
after(async () => { await srv.stop(); });

const BANDS = ['interactive', 'normal', 'batch'];

test('content type is Prometheus text 0.0.4', () => {
  assert.equal(first.status, 200);
  assert.match(first.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  // llama-server's header: the unix second the server started
  const t0 = Number(first.headers.get('process-start-time-unix'));
  assert.ok(t0 > 1.6e9 && t0 <= Date.now() / 1000, `Process-Start-Time-Unix ${t0}`);
});

test('every family and every band label is there from the first scrape', async () => {
  const t = await first.text();
  const fams = {
    llamaswap_scheduler_queue_depth: 'gauge',
    llamaswap_scheduler_queue_oldest_wait_seconds: 'gauge',
    llamaswap_scheduler_dispatched_total: 'counter',
    llamaswap_scheduler_reorders_total: 'counter',
    strata_slots: 'gauge',
    strata_give_ways_total: 'counter',
    strata_requests_total: 'counter',
    strata_prompt_tokens_total: 'counter',
    strata_generated_tokens_total: 'counter',
    strata_time_to_first_token_seconds: 'histogram',
    strata_inter_token_latency_seconds: 'histogram',
    strata_mtp_draft_tokens_total: 'counter',
    strata_mtp_accepted_tokens_total: 'counter',
    strata_mtp_steps_total: 'counter',
    strata_ngram_draft_tokens_total: 'counter',
    strata_ngram_accepted_tokens_total: 'counter',
    strata_ngram_steps_total: 'counter',
    strata_spec_plain_steps_total: 'counter',
    strata_mtp_acceptance_rate: 'gauge',
    strata_mtp_mean_accepted_length: 'gauge',
    strata_model_loaded: 'gauge',
    strata_model_load_seconds: 'histogram',
    strata_model_load_failures_total: 'counter',
    strata_model_swaps_total: 'counter',
    'vllm:num_requests_waiting': 'gauge',
    'vllm:num_requests_running': 'gauge',
    'vllm:kv_cache_usage_perc': 'gauge',
    'llamacpp:prompt_tokens_total': 'counter',
    'llamacpp:prompt_tokens_cached_total': 'counter',
    'llamacpp:tokens_predicted_total': 'counter',
    'llamacpp:spec_decode_num_draft_tokens_total': 'counter',
    'llamacpp:spec_decode_num_accepted_tokens_total': 'counter',
    'llamacpp:spec_decode_num_drafts_total': 'counter',
    'llamacpp:requests_processing': 'gauge',
    'llamacpp:requests_deferred': 'gauge',
    'llamacpp:prompt_seconds_total': 'counter',
    'llamacpp:tokens_predicted_seconds_total': 'counter',
    'llamacpp:n_decode_total': 'counter',
    'llamacpp:n_tokens_max': 'counter',
    'llamacpp:prompt_tokens_seconds': 'gauge',
    'llamacpp:predicted_tokens_seconds': 'gauge',
    'llamacpp:n_busy_slots_per_decode': 'gauge',
  };
  for (const [name, type] of Object.entries(fams)) {
    assert.ok(t.includes(`# HELP ${name} `), `HELP ${name}`);
    assert.ok(t.includes(`# TYPE ${name} ${type}\n`), `TYPE ${name} ${type}`);
  }
  for (const band of BANDS) {
    for (const f of ['llamaswap_scheduler_queue_depth', 'llamaswap_scheduler_queue_oldest_wait_seconds', 'llamaswap_scheduler_dispatched_total'])
      assert.equal(metric(t, f, { band }), 0, `${f}{band="${band}"}`);
    for (const term of ['aging', 'swap_affinity'])
      assert.equal(metric(t, 'llamaswap_scheduler_reorders_total', { band, term }), 0);
    for (const outcome of ['completed', 'cancelled', 'rejected', 'failed'])
      assert.equal(metric(t, 'strata_requests_total', { band, outcome }), 0);
    assert.equal(metric(t, 'strata_time_to_first_token_seconds_count', { band }), 0);
    assert.equal(metric(t, 'strata_time_to_first_token_seconds_bucket', { band, le: '+Inf' }), 0);
    assert.equal(metric(t, 'strata_inter_token_latency_seconds_count', { band }), 0);
  }
  for (const state of ['idle', 'reading', 'parked', 'decoding'])
    assert.notEqual(metric(t, 'strata_slots', { state }), undefined, `slots ${state}`);
  assert.equal(metric(t, 'strata_slots', { state: 'idle' }), 3);
  // no MTP or n-gram drafts here: the counters and their ratios are 0
  for (const f of ['strata_mtp_draft_tokens_total', 'strata_mtp_accepted_tokens_total', 'strata_mtp_steps_total',
    'strata_mtp_acceptance_rate', 'strata_mtp_mean_accepted_length', 'strata_ngram_draft_tokens_total',
    'strata_ngram_accepted_tokens_total', 'strata_ngram_steps_total', 'strata_spec_plain_steps_total'])
    assert.equal(metric(t, f), 0, f);
  // the one model, loaded at start on the one engine
  assert.equal(metric(t, 'strata_model_loaded', { model: 'default' }), 1);
  assert.equal(metric(t, 'strata_model_swaps_total', { from: 'none', to: 'default' }), 1);
  assert.equal(metric(t, 'strata_model_load_seconds_count', { model: 'default' }), 1);
  assert.equal(metric(t, 'strata_model_load_failures_total', { model: 'default' }), 0);
  assert.equal(metric(t, 'vllm:num_requests_waiting'), 0);
  assert.equal(metric(t, 'vllm:num_requests_running'), 0);
  const kv = metric(t, 'vllm:kv_cache_usage_perc');
  assert.ok(kv >= 0 && kv <= 1);
  for (const f of ['llamacpp:prompt_tokens_total', 'llamacpp:tokens_predicted_total',
    'llamacpp:requests_processing', 'llamacpp:requests_deferred', 'llamacpp:prompt_tokens_cached_total',
    'llamacpp:spec_decode_num_draft_tokens_total', 'llamacpp:spec_decode_num_accepted_tokens_total',
    'llamacpp:spec_decode_num_drafts_total', 'llamacpp:prompt_seconds_total',
    'llamacpp:tokens_predicted_seconds_total', 'llamacpp:n_decode_total', 'llamacpp:n_tokens_max',
    'llamacpp:prompt_tokens_seconds', 'llamacpp:predicted_tokens_seconds', 'llamacpp:n_busy_slots_per_decode'])
    assert.equal(metric(t, f), 0, f);
});

test('counters move with traffic, by band', async () => {
  await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 3 }));
  await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 3, priority: 100 }));
  await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 3 }), { 'x-llamaswap-priority': 'batch' });
  const t = await metricsText(srv);
  for (const band of BANDS) {
    assert.equal(metric(t, 'llamaswap_scheduler_dispatched_total', { band }), 1, band);
    assert.equal(metric(t, 'strata_requests_total', { band, outcome: 'completed' }), 1, band);
    assert.equal(metric(t, 'strata_time_to_first_token_seconds_count', { band }), 1, band);
    assert.equal(metric(t, 'strata_inter_token_latency_seconds_count', { band }), 2, band);
  }
  assert.equal(metric(t, 'strata_generated_tokens_total'), 9);
  // The same 4-token prompt is read once; later requests reuse 3 of its
  // tokens from the slot's cache (prefix reuse) and read 1.
  assert.equal(metric(t, 'strata_prompt_tokens_total'), 6);
  assert.equal(metric(t, 'strata_cached_prompt_tokens_total'), 6);
  // llama-server's names count the same tokens
  assert.equal(metric(t, 'llamacpp:prompt_tokens_total'), 6);
  assert.equal(metric(t, 'llamacpp:prompt_tokens_cached_total'), 6);
  assert.equal(metric(t, 'llamacpp:tokens_predicted_total'), 9);
  assert.equal(metric(t, 'llamacpp:requests_processing'), 0);
  assert.equal(metric(t, 'llamacpp:requests_deferred'), 0);
  // llama-server's time totals: each request's read and its tokens after the first, summed
  // (the sim decodes at 2000 tokens/s: 2 steps of 0.5 ms after each first token)
  assert.ok(metric(t, 'llamacpp:prompt_seconds_total') > 0);
  const gen = metric(t, 'llamacpp:tokens_predicted_seconds_total');
  assert.ok(gen >= 3 * 2 * 0.0005 * 0.9, `${gen}`);
  assert.ok(Math.abs(metric(t, 'llamacpp:predicted_tokens_seconds') - 6 / gen) < 1e-6 * (6 / gen));
  assert.ok(Math.abs(metric(t, 'llamacpp:prompt_tokens_seconds') - 6 / metric(t, 'llamacpp:prompt_seconds_total')) < 1e-3);
  // one read step and 2 decode steps per request here (one request at a time): 9 passes of 1 slot
  assert.equal(metric(t, 'llamacpp:n_decode_total'), 9);
  assert.equal(metric(t, 'llamacpp:n_busy_slots_per_decode'), 1);
  assert.equal(metric(t, 'llamacpp:n_tokens_max'), 4 + 2);   // the prompt and the tokens fed back
  assert.ok(metric(t, 'strata_http_responses_total', { code: '200' }) >= 3);
  // histogram buckets are cumulative and end at the count
  const b = [...t.matchAll(/^strata_time_to_first_token_seconds_bucket\{band="normal",le="([^"]+)"\} (\d+)$/gm)].map((m) => Number(m[2]));
  for (let i = 1; i < b.length; i++) assert.ok(b[i] >= b[i - 1]);
  assert.equal(b.at(-1), 1);
});

test('promtool check metrics accepts the scrape', async () => {
  const t = await metricsText(srv);
  const run = (input) => spawnSync('promtool', ['check', 'metrics'], { input, encoding: 'utf8' });
  const full = run(t);
  assert.ok(!full.error, `promtool must be installed (Debian package "prometheus"): ${full.error}`);
  // 0 = clean, 3 = lint findings only (1 would be a parse error)
  assert.ok(full.status === 0 || full.status === 3, `promtool exit ${full.status}: ${full.stdout}${full.stderr}`);
  const findings = `${full.stdout}${full.stderr}`.split('\n').filter((l) => l.trim() !== '');
  // and llama-server's n_tokens_max, a counter there (its dashboards read it so) without _total
  for (const f of findings)
    assert.match(f, /^((vllm|strata|llamacpp):\w+ metric names should not contain ':'|llamacpp:n_tokens_max counter metrics should have "_total" suffix)$/, `unexpected promtool finding: ${f}`);
  // without the router-facing gauges the scrape lints clean
  const rest = t.split('\n').filter((l) => !/^(# (HELP|TYPE) )?(vllm|strata|llamacpp):/.test(l)).join('\n');
  const clean = run(rest);
  assert.equal(clean.status, 0, `${clean.stdout}${clean.stderr}`);
});

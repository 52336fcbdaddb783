// deploy.test.mjs -- the Grafana dashboard and the Prometheus rules under
// deploy/ (docs/OPERATIONS.md) name only metrics the server really exports:
// the dashboard parses, is importable (a datasource input, unique panel
// ids, every panel placed and queried), covers what an operator looks at
// (queue by band, TTFT and ITL per band, slots, KV, tokens/s, swaps,
// sheds), and every metric in its queries and in the alert rules is a
// family of a live /metrics scrape (a histogram's _bucket/_sum/_count
// included). promtool's own checks of the rules and of the queries' syntax
// are deploy_prometheus_rules (deploy.cmake).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, postJSON, metricsText } from './lib/server.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/strata.json'), 'utf8'));
const rulesText = readFileSync(join(ROOT, 'deploy/prometheus/strata-rules.yml'), 'utf8');

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and',
  'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

// The metric names a PromQL expression reads: identifiers left once label
// matchers, ranges, strings, grouping clauses and function calls are taken out.
export function metricNames(expr) {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set();
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = bare.slice(m.index + m[0].length);
    if (/^\s*\(/.test(after) || KEYWORDS.has(m[0].toLowerCase())) continue;   // a function, a keyword
    names.add(m[0]);
  }
  return [...names];
}

// Every series name a scrape can hold: the families, and each histogram's
// _bucket, _sum and _count.
function exported(text) {
  const names = new Set();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(m[1]);
    if (m[2] === 'histogram' || m[2] === 'summary')
      for (const s of ['_bucket', '_sum', '_count']) names.add(m[1] + s);
  }
  return names;
}

function panelsOf(d) {
  return d.panels.flatMap((p) => (p.type === 'row' ? [p, ...(p.panels || [])] : [p]));
}

function dashboardExprs() {
  return panelsOf(dashboard).flatMap((p) => (p.targets || []).map((t) => ({ panel: p.title, expr: t.expr })));
}

function ruleExprs() {
  return [...rulesText.matchAll(/^\s*expr:\s*(.+)$/gm)].map((m) => m[1].trim());
}

describe('the dashboard and the rules against a live /metrics', () => {
  let srv, names;
  before(async () => {
    srv = await startServer(['--batch', '--sim-decode-tps', '2000']);
    const r = await postJSON(srv, '/v1/chat/completions', { model: 'default',
      messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });
    assert.equal(r.status, 200, r.text);
    names = exported(await metricsText(srv));
    assert.ok(names.size > 20, [...names].join(' '));
  });
  after(async () => { await srv.stop(); });

  test('the metric-name reader', () => {
    assert.deepEqual(metricNames('histogram_quantile(0.95, sum by (band, le) (rate(a_bucket{x="y"}[5m])))'), ['a_bucket']);
    assert.deepEqual(metricNames('1 - sum(s{state="idle"}) / sum(s)'), ['s']);
    assert.deepEqual(metricNames('max by (instance) (vllm:kv_cache_usage_perc) > 0.9'), ['vllm:kv_cache_usage_perc']);
  });

  test('the dashboard is importable and every panel is queried', () => {
    assert.equal(dashboard.title, 'Strata');
    assert.ok(dashboard.uid);
    assert.ok(dashboard.__inputs.some((i) => i.name === 'DS_PROMETHEUS' && i.pluginId === 'prometheus'));
    const panels = panelsOf(dashboard);
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, `panel ids repeat: ${ids}`);
    for (const p of panels) {
      assert.ok(p.gridPos && p.gridPos.w > 0 && p.gridPos.h > 0, p.title);
      if (p.type === 'row') continue;
      assert.ok(p.title, JSON.stringify(p));
      assert.equal(p.datasource.uid, '${DS_PROMETHEUS}', p.title);
      assert.ok(p.targets.length > 0, p.title);
      for (const t of p.targets) assert.ok(t.expr && t.refId, p.title);
    }
  });

  test('every metric the dashboard reads is exported', () => {
    const exprs = dashboardExprs();
    assert.ok(exprs.length >= 10);
    for (const { panel, expr } of exprs) {
      const used = metricNames(expr);
      assert.ok(used.length > 0, `${panel}: no metric in ${expr}`);
      for (const n of used) assert.ok(names.has(n), `${panel}: ${n} is not on /metrics (${expr})`);
    }
    for (const v of dashboard.templating.list) {
      for (const n of metricNames(v.definition.replace(/^label_values\((.*),[^,]*\)$/, '$1')))
        assert.ok(names.has(n), `variable ${v.name}: ${n} is not on /metrics`);
    }
  });

  test('the dashboard covers the queue, latency, slots, KV, tokens, swaps and sheds', () => {
    const all = dashboardExprs().map((e) => e.expr).join('\n');
    for (const n of ['llamaswap_scheduler_queue_depth', 'llamaswap_scheduler_queue_oldest_wait_seconds',
      'strata_time_to_first_token_seconds_bucket', 'strata_inter_token_latency_seconds_bucket',
      'strata_slots', 'vllm:kv_cache_usage_perc', 'strata_generated_tokens_total',
      'strata_model_swaps_total', 'strata_queue_full_total'])
      assert.ok(all.includes(n), `no panel reads ${n}`);
    assert.match(all, /sum by \(band, le\)/, 'latency percentiles per band');
  });

  test('every metric the alert rules read is exported', () => {
    const exprs = ruleExprs();
    assert.equal(exprs.length, 4, rulesText);
    for (const expr of exprs)
      for (const n of metricNames(expr)) assert.ok(names.has(n), `${n} is not on /metrics (${expr})`);
  });
});

// priority.test.mjs -- request priority end to end (docs/design/SCHEDULER.md sections 2
// and 4): header and body intake with the activity record to show it, the
// free-slot rule and the give-way rule on the running server (sim).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJSON, getJSON, metric, metricsText, until, chatBody } from './lib/server.mjs';

const activity = async (srv) => (await getJSON(srv, '/api/activity')).json;
const rec = (acts, id) => acts.find((a) => a.request_id === id);

describe('intake: body, header, aliases, which one wins', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-decode-tps', '2000', '--sim-tokens', '1']); });
  after(async () => { await srv.stop(); });

  const cases = [
    ['p-none', {}, {}, 0, 'normal'],
    ['p-body', { priority: 70 }, {}, 70, 'interactive'],
    ['p-body-float', { priority: -60.0 }, {}, -60, 'batch'],
    ['p-body-junk', { priority: 'high' }, {}, 0, 'normal'],
    ['p-body-frac', { priority: 1.5 }, {}, 0, 'normal'],
    ['p-hdr', {}, { 'x-llamaswap-priority': ' 42 ' }, 42, 'normal'],
    ['p-hdr-alias', {}, { 'x-llamaswap-priority': 'Interactive' }, 100, 'interactive'],
    ['p-hdr-batch', {}, { 'x-llamaswap-priority': 'batch' }, -100, 'batch'],
    ['p-hdr-junk', {}, { 'x-llamaswap-priority': 'soon' }, 0, 'normal'],
    ['p-both', { priority: 7 }, { 'x-llamaswap-priority': 'batch' }, 7, 'normal'],
  ];
  for (const [id, body, headers, want, band] of cases) {
    test(`${id}: priority ${want}, band ${band}`, async () => {
      const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1, ...body }), { 'x-request-id': id, ...headers });
      assert.equal(r.status, 200, 'junk never errors');
      const a = rec(await activity(srv), id);
      assert.equal(a.serial_priority, want);
      assert.equal(a.serial_band, band);
    });
  }
});

describe('API key defaults and caps (config file)', () => {
  let srv;
  before(async () => {
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(`${tmpdir()}/strata-e2e-`);
    writeFileSync(`${dir}/keys.yaml`, [
      'api_keys:',
      '  - name: batchy',
      '    key: kb',
      '    default_priority: -80',
      '    admin: true', // reads every key's requests on /api/activity
      '  - name: capped',
      '    key: kc',
      '    max_priority: 10',
      '',
    ].join('\n'));
    srv = await startServer(['--config', `${dir}/keys.yaml`, '--sim-decode-tps', '2000', '--sim-tokens', '1']);
  });
  after(async () => { await srv.stop(); });

  test('a key\'s default_priority applies when the request says nothing; max_priority caps', async () => {
    await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1 }), { authorization: 'Bearer kb', 'x-request-id': 'k-def' });
    await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1, priority: 5 }), { authorization: 'Bearer kb', 'x-request-id': 'k-def-over' });
    await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 1, priority: 99 }), { authorization: 'Bearer kc', 'x-request-id': 'k-cap' });
    const acts = await getJSON(srv, '/api/activity', { authorization: 'Bearer kb' });
    assert.equal(rec(acts.json, 'k-def').serial_priority, -80);
    assert.equal(rec(acts.json, 'k-def-over').serial_priority, 5);
    assert.equal(rec(acts.json, 'k-cap').serial_priority, 10);
  });
});

describe('scheduling on the running server', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '2', '--sim-decode-tps', '50', '--sim-prompt-tps', '2000',
      '--ubatch', '256', '--give-way-tokens', '512', '--sim-tokens', '10', '--ctx-size', '16384']);
  });
  after(async () => { await srv.stop(); });

  test('a free slot goes to the highest-priority waiting request', async () => {
    // The holders decode until the test lets them go (they are cancelled):
    // holders that end on their own could free a slot before both are queued.
    const ctl = new AbortController();
    const hold = ['fs-a', 'fs-b'].map((id) => fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify(chatBody({ max_tokens: 100000 })),
    }).catch((e) => e));
    await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state !== 'idle'), 5000, 'both slots busy');
    const low = postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 2, priority: 0 }), { 'x-request-id': 'fs-low' });
    await until(async () => metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'normal' }) === 1, 5000, 'low queued');
    const high = postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 2, priority: 5 }), { 'x-request-id': 'fs-high' });
    await until(async () => metric(await metricsText(srv), 'llamaswap_scheduler_queue_depth', { band: 'normal' }) === 2, 5000, 'high queued');
    ctl.abort();
    for (const r of await Promise.all(hold)) assert.ok(r instanceof Error);
    const rs = await Promise.all([low, high]);
    for (const r of rs) assert.equal(r.status, 200);
    const acts = await activity(srv);
    const l = rec(acts, 'fs-low');
    const h = rec(acts, 'fs-high');
    assert.ok(h.id < l.id, `the 5 (record ${h.id}) was dispatched before the 0 (record ${l.id})`);
    assert.ok(h.serial_queue_wait_ms < l.serial_queue_wait_ms);
  });

  test('a long read gives way to a higher priority of equal length', async () => {
    // seconds of reading (--sim-prompt-tps 2000): B must arrive while A still
    // reads, on a loaded machine too
    const prompt = Array.from({ length: 6000 }, (_, i) => `w${i}`).join(' ');
    const firstToken = async (id, prio) => {
      const t0 = Date.now();
      const res = await fetch(`${srv.url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ prompt, max_tokens: 1, priority: prio }),
      });
      const j = await res.json();
      assert.equal(res.status, 200, JSON.stringify(j));
      return Date.now() - t0;
    };
    const aP = firstToken('gw-low', 0);
    await until(async () => (await getJSON(srv, '/slots')).json.some((s) => s.state === 'reading' && s.n_read > 0), 5000, 'A reading');
    const bP = firstToken('gw-high', 100);
    await Promise.all([aP, bP]);
    const acts = await activity(srv);
    const a = rec(acts, 'gw-low');
    const b = rec(acts, 'gw-high');
    assert.ok(a.give_ways >= 1, `the low read gave way (give_ways ${a.give_ways})`);
    assert.equal(b.give_ways, 0);
    // B started later but got its first token first
    const aFirst = a.dispatched_unix_ms - a.serial_queue_wait_ms + a.ttft_ms;
    const bFirst = b.dispatched_unix_ms - b.serial_queue_wait_ms + b.ttft_ms;
    assert.ok(bFirst < aFirst, `high first token at ${bFirst}, low at ${aFirst}`);
    const m = await metricsText(srv);
    assert.ok(metric(m, 'strata_give_ways_total', { band: 'normal' }) >= 1);
  });
});

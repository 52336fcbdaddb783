// state.test.mjs -- --state-dir (docs/OPERATIONS.md "State that survives a
// restart"): responses stored and requests dispatched before a restart are
// still there after it, per API key: GET /v1/responses/{id} (and its
// input_items), previous_response_id chaining onto a response of the
// previous run, /api/activity keeping its history with ids that go on
// rising, each key seeing only its own (the keys given in another order
// the second time: a key's rows follow the key, not its place). A write
// that fails (a file size limit standing for a full disk) leaves the
// response answered and only not kept. A database that is not one, a state
// dir that is a file, and one another server holds stop the start with one
// line and a non-zero exit.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startServer, waitHealthy, postJSON, getJSON, metricsText, metric, STRATA_BIN,
} from './lib/server.mjs';

const REPLY = 'Paris is sunny today.';
const K1 = { authorization: 'Bearer key-one' };
const K2 = { authorization: 'Bearer key-two' };

function serverArgs(dir, keys) {
  return ['--batch', '--parallel', '2', '--sim-decode-tps', '2000', '--sim-reply', REPLY,
    '--state-dir', dir, ...keys.flatMap((k) => ['--api-key', k])];
}

async function respond(srv, headers, requestId, body) {
  const r = await postJSON(srv, '/v1/responses', { model: 'default', ...body },
    { ...headers, 'x-request-id': requestId });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.status, 'completed');
  return r.json;
}

async function activity(srv, headers) {
  const r = await getJSON(srv, '/api/activity', headers);
  assert.equal(r.status, 200, r.text);
  return r.json;
}

// A record is kept (--state-dir) as the scheduler finishes its request,
// before the reply goes out: a client that has its answers finds every
// record finished, and kept when the server stops.
async function allFinished(srv, headers) {
  const acts = await activity(srv, headers);
  assert.ok(acts.every((a) => a.finished), JSON.stringify(acts));
}

describe('--state-dir: a restart keeps stored responses and the activity log, per key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-state-'));
  let first = {};
  after(() => rmSync(dir, { recursive: true, force: true }));

  before(async () => {
    const srv = await startServer(serverArgs(dir, ['key-one', 'key-two']));
    try {
      first.r1 = await respond(srv, K1, 'state-k1-a', { input: 'weather in Paris?' });
      first.r2 = await respond(srv, K2, 'state-k2-a', { input: 'hello from two' });
      first.alone = (await respond(srv, K1, 'state-k1-b', { input: 'and tomorrow?' })).usage.input_tokens;
      // each key sees its own records already
      const a1 = await activity(srv, K1);
      assert.deepEqual(a1.map((a) => a.request_id), ['state-k1-a', 'state-k1-b']);
      first.ids = a1.map((a) => a.id);
      await allFinished(srv, K1);
      await allFinished(srv, K2);
    } finally {
      await srv.stop();
    }
    assert.ok(existsSync(join(dir, 'strata.db')));
  });

  test('after a restart: GET, input_items and previous_response_id, owner only', async () => {
    const srv = await startServer(serverArgs(dir, ['key-two', 'key-one']));   // other order
    try {
      const got = await getJSON(srv, `/v1/responses/${first.r1.id}`, K1);
      assert.equal(got.status, 200, got.text);
      assert.equal(got.json.id, first.r1.id);
      assert.deepEqual(got.json.output, first.r1.output);
      const items = await getJSON(srv, `/v1/responses/${first.r1.id}/input_items`, K1);
      assert.equal(items.status, 200, items.text);
      assert.deepEqual(items.json.data[0].content, [{ type: 'input_text', text: 'weather in Paris?' }]);
      // another key's response reads as never stored
      assert.equal((await getJSON(srv, `/v1/responses/${first.r1.id}`, K2)).status, 404);
      assert.equal((await getJSON(srv, `/v1/responses/${first.r2.id}`, K2)).status, 200);
      assert.equal((await getJSON(srv, `/v1/responses/${first.r2.id}`, K1)).status, 404);
      // chaining onto the previous run's response: its turn is in the prompt
      const r3 = await respond(srv, K1, 'state-k1-c', { input: 'and tomorrow?',
        previous_response_id: first.r1.id });
      assert.equal(r3.previous_response_id, first.r1.id);
      assert.ok(r3.usage.input_tokens > first.alone, `${r3.usage.input_tokens} vs ${first.alone}`);
      const refused = await postJSON(srv, '/v1/responses', { model: 'default', input: 'x',
        previous_response_id: first.r1.id }, K2);
      assert.equal(refused.status, 404, refused.text);
      assert.equal(refused.json.error.param, 'previous_response_id');
      const m = await metricsText(srv, K1);
      assert.ok(metric(m, 'strata_responses_stored') >= 3, m);
      await allFinished(srv, K1);
    } finally {
      await srv.stop();
    }
  });

  test('after a restart: /api/activity keeps its history, ids rising, per key', async () => {
    const srv = await startServer(serverArgs(dir, ['key-one', 'key-two']));
    try {
      await respond(srv, K2, 'state-k2-b', { input: 'third run' });
      const a1 = await activity(srv, K1);
      assert.deepEqual(a1.map((a) => a.request_id), ['state-k1-a', 'state-k1-b', 'state-k1-c']);
      assert.deepEqual(a1.slice(0, 2).map((a) => a.id), first.ids);
      for (const a of a1) {
        assert.equal(a.finished, true);
        assert.equal(a.outcome, 'completed');
        assert.equal(a.model, 'default');
      }
      const a2 = await activity(srv, K2);
      assert.deepEqual(a2.map((a) => a.request_id), ['state-k2-a', 'state-k2-b']);
      const ids = [...a1, ...a2].map((a) => a.id).sort((x, y) => x - y);
      assert.equal(new Set(ids).size, ids.length, `ids repeat: ${ids}`);
      assert.equal(a2[1].id, Math.max(...ids), 'the new run numbers after the kept records');
      // ?limit=N: the newest N, from the kept history too
      const last2 = await getJSON(srv, '/api/activity?limit=2', K1);
      assert.deepEqual(last2.json.map((a) => a.request_id), ['state-k1-b', 'state-k1-c']);
    } finally {
      await srv.stop();
    }
  });
});

// The server under a file size limit (ulimit -f, SIGXFSZ ignored so a write
// past it fails with EFBIG), standing for a full disk.
async function startLimited(args, limitKiB) {
  const quoted = [STRATA_BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--backend', 'sim', ...args]
    .map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const proc = spawn('bash', ['-c', `trap '' XFSZ; ulimit -f ${limitKiB}; exec ${quoted}`],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', (d) => { log += d; });
  proc.stderr.on('data', (d) => { log += d; });
  const exited = once(proc, 'exit');
  const deadline = Date.now() + 15000;
  let m;
  while (!(m = log.match(/listening on (http:\/\/[^\s"]+)/))) {
    if (proc.exitCode !== null) throw new Error(`strata exited before listening:\n${log}`);
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`strata did not start:\n${log}`); }
    await sleep(20);
  }
  const srv = { url: m[1], log: () => log,
    async stop() { proc.kill('SIGTERM'); const [code] = await exited; return code; } };
  await waitHealthy(srv);
  return srv;
}

describe('--state-dir: a write that fails (disk full) fails the store write, not the request', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-state-full-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('the big response is answered but not kept; the rest goes on', async () => {
    const srv = await startLimited(['-c', '100000', '--sim-prompt-tps', '100000000',
      '--state-dir', dir], 128);
    try {
      const small = await respond(srv, {}, 'full-small', { input: 'small' });
      const big = await respond(srv, {}, 'full-big', { input: 'word '.repeat(40000) });
      assert.equal(big.store, true);
      assert.equal((await getJSON(srv, `/v1/responses/${small.id}`)).status, 200);
      assert.equal((await getJSON(srv, `/v1/responses/${big.id}`)).status, 404);
      const after = await respond(srv, {}, 'full-after', { input: 'and then?',
        previous_response_id: small.id });
      assert.equal((await getJSON(srv, `/v1/responses/${after.id}`)).status, 200);
      assert.match(srv.log(), new RegExp(`${big.id}: not stored`));
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
});

describe('--state-dir: what cannot be used stops the start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-state-bad-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  function start(stateDir) {
    return spawnSync(STRATA_BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '--backend', 'sim',
      '--state-dir', stateDir], { encoding: 'utf8', timeout: 30000 });
  }

  test('a file that is not a database', () => {
    const bad = join(dir, 'junk');
    spawnSync('mkdir', ['-p', bad]);
    writeFileSync(join(bad, 'strata.db'), Buffer.alloc(8192, 0x5a));
    const r = start(bad);
    assert.notEqual(r.status, 0, r.stderr);
    assert.equal(r.signal, null, 'no crash');
    const lines = (r.stdout + r.stderr).split('\n').filter((l) => l.includes('cannot start'));
    assert.equal(lines.length, 1, r.stdout + r.stderr);
    assert.ok(lines[0].includes(join(bad, 'strata.db')) && lines[0].includes('not a database'), lines[0]);
  });

  test('a state dir another server holds', async () => {
    const held = join(dir, 'held');
    const srv = await startServer(['--state-dir', held]);
    try {
      const r = start(held);
      assert.notEqual(r.status, 0, r.stderr);
      assert.match(r.stdout + r.stderr, /cannot start: --state-dir .*held: in use by another Strata/);
    } finally {
      await srv.stop();
    }
    const again = await startServer(['--state-dir', held]);   // free once the first stopped
    await again.stop();
  });

  test('a state dir that is a file', () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'x');
    const r = start(file);
    assert.notEqual(r.status, 0, r.stderr);
    assert.equal(r.signal, null, 'no crash');
    assert.match(r.stdout + r.stderr, /cannot start: --state-dir .*plain-file: not a directory/);
  });
});

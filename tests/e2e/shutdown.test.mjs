// shutdown.test.mjs -- graceful shutdown (--shutdown-timeout, docs/CLI.md):
// after SIGTERM a draining server answers new generations and /health with
// 503 "shutting_down", lets the requests already in (running and queued)
// finish, then exits 0; when the timeout passes first, what is left ends
// with an in-stream error and the server still exits 0. Without the flag,
// SIGTERM stops at once (every other suite's srv.stop() checks that).
//
// The sim decodes 20 tokens/s on one slot (no --batch: one request at a
// time), so a 30-token stream takes about 1.5 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { startServer, getJSON, postJSON, parseSSE, chatBody, until, metric, metricsText } from './lib/server.mjs';

const stream = (srv, tokens) => fetch(`${srv.url}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify(chatBody({ stream: true, max_tokens: tokens })),
});

// Read a streaming response to its end; resolves to the parsed events.
const drainBody = async (res) => parseSSE(await res.text());

// 'close', not 'exit': the exit can be seen before the last log lines
// have been read from the pipe, and the tests then look for them.
const exitOf = async (srv) => {
  if (srv.proc.stderr.closed && srv.proc.exitCode !== null) return [srv.proc.exitCode, null];
  return once(srv.proc, 'close');
};

test('draining: in-flight and queued requests finish, new ones get 503, exit 0', async () => {
  const srv = await startServer(['--sim-decode-tps', '20', '--sim-tokens', '100000', '--shutdown-timeout', '20']);
  const exited = exitOf(srv);
  const first = await stream(srv, 30);
  assert.equal(first.status, 200);
  const firstDone = drainBody(first);
  // a second request waits in the queue behind the first
  const queued = postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 5 }));
  await until(async () => (await getJSON(srv, '/slots')).json?.[0]?.state !== 'idle', 5000,
    'the first request to hold the slot');
  // the second is in the queue, not still on its way (a SIGTERM first refuses it)
  await until(async () => metric(await metricsText(srv), 'vllm:num_requests_waiting') === 1, 5000,
    'the second request queued');

  srv.proc.kill('SIGTERM');
  await until(() => /draining: \d+ request\(s\) in progress/.test(srv.log()), 5000, 'draining');

  const health = await getJSON(srv, '/health');
  assert.equal(health.status, 503);
  assert.equal(health.json.error.code, 'shutting_down');
  assert.equal(health.headers.get('retry-after'), '1');
  const refused = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 2 }));
  assert.equal(refused.status, 503);
  assert.equal(refused.json.error.code, 'shutting_down');
  assert.equal(refused.json.error.type, 'unavailable_error');
  assert.ok(refused.headers.get('retry-after'));
  const models = await getJSON(srv, '/v1/models');
  assert.equal(models.status, 200, 'information routes still answer');
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  assert.match(metrics, /^strata_server_draining 1$/m);

  const events = await firstDone;
  const chunks = events.filter((e) => e.data && e.data !== '[DONE]').map((e) => JSON.parse(e.data));
  assert.equal(events.at(-1).data, '[DONE]');
  assert.ok(chunks.every((c) => !c.error), 'no error in the drained stream');
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  const q = await queued;
  assert.equal(q.status, 200, `the queued request finished: ${q.text}`);
  assert.equal(q.json.choices[0].finish_reason, 'length');

  const [code] = await exited;
  assert.equal(code, 0, srv.log().slice(-2000));
  assert.match(srv.log(), /drained: every request finished/);
});

test('draining past the timeout ends what is left in-stream, exit 0', async () => {
  const srv = await startServer(['--sim-decode-tps', '20', '--sim-tokens', '100000', '--shutdown-timeout', '1']);
  const exited = exitOf(srv);
  const res = await stream(srv, 400);          // 20 s of decoding: outlives the timeout
  assert.equal(res.status, 200);
  const done = drainBody(res);
  await until(async () => (await getJSON(srv, '/slots')).json?.[0]?.state !== 'idle', 5000,
    'the request to hold the slot');
  const t0 = Date.now();
  srv.proc.kill('SIGTERM');
  const events = await done;
  const last = events.filter((e) => e.data && e.data !== '[DONE]').map((e) => JSON.parse(e.data)).at(-1);
  assert.ok(last.error, `the stream ends with an error event: ${JSON.stringify(last)}`);
  assert.match(last.error.message, /shutting down/);
  const [code] = await exited;
  assert.equal(code, 0, srv.log().slice(-2000));
  assert.ok(Date.now() - t0 < 10000, 'stopped at the timeout, not after the request');
  assert.match(srv.log(), /shutdown timeout: ending 1 request\(s\)/);
});

test('a second signal while draining stops at once', async () => {
  const srv = await startServer(['--sim-decode-tps', '20', '--sim-tokens', '100000', '--shutdown-timeout', '60']);
  const exited = exitOf(srv);
  const res = await stream(srv, 400);
  const done = drainBody(res);
  await until(async () => (await getJSON(srv, '/slots')).json?.[0]?.state !== 'idle', 5000,
    'the request to hold the slot');
  srv.proc.kill('SIGTERM');
  await until(() => /draining:/.test(srv.log()), 5000, 'draining');
  srv.proc.kill('SIGINT');
  await done;
  const [code] = await exited;
  assert.equal(code, 0, srv.log().slice(-2000));
  assert.match(srv.log(), /second signal: ending 1 request\(s\) now/);
});

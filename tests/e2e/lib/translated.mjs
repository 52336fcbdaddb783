// translated.mjs -- the checks the e2e suites of the endpoints translated
// onto chat share (responses.test.mjs for /v1/responses, messages.test.mjs
// for /v1/messages): the priority header and body field reaching the
// scheduler as for chat, a client that leaves mid-stream (the request
// cancelled, its slot freed, the server still answering).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startServer, getJSON, metric, metricsText, until,
} from './server.mjs';

// send(headers, extraBody) makes one request of the endpoint and resolves
// to its reply's id; ids: the x-request-id values to use (header, body).
// Checks /api/activity: the header's band "interactive" (priority 100),
// the body's priority -60 (band "batch").
export async function checkPriority(srv, send, ids) {
  const activity = async () => (await getJSON(srv, '/api/activity')).json;
  await send({ 'x-llamaswap-priority': 'interactive', 'x-request-id': ids[0] }, {});
  let a = (await activity()).find((x) => x.request_id === ids[0]);
  assert.equal(a.serial_priority, 100);
  assert.equal(a.serial_band, 'interactive');
  await send({ 'x-request-id': ids[1] }, { priority: -60 });
  a = (await activity()).find((x) => x.request_id === ids[1]);
  assert.equal(a.serial_priority, -60);
  assert.equal(a.serial_band, 'batch');
}

// A describe block: a stream of 'body' on 'path' (sim engine, 20 tokens/s)
// read until " tok2" (it starts with "event: <firstEvent>"), then the
// client leaves. The request is counted cancelled, every slot goes idle,
// and 'again' (a non-stream body of two tokens) still answers: text(json)
// is "tok1 tok2".
export function describeLeaveMidStream({ path, body, firstEvent, again, text }) {
  describe('a client that leaves mid-stream', () => {
    let srv;
    before(async () => { srv = await startServer(['--batch', '--parallel', '2', '--sim-decode-tps', '20', '--sim-tokens', '100000']); });
    after(async () => { await srv.stop(); });

    test('the request is cancelled, the slot freed, and the server still answers', async () => {
      const ctl = new AbortController();
      const res = await fetch(`${srv.url}${path}`, {
        method: 'POST', signal: ctl.signal, headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type'), /text\/event-stream/);
      const reader = res.body.getReader();
      let got = '';
      while (!got.includes(' tok2')) {
        const { value } = await reader.read();
        got += new TextDecoder().decode(value);
      }
      assert.ok(got.startsWith(`event: ${firstEvent}\n`));
      ctl.abort();
      await until(async () => (await getJSON(srv, '/slots')).json.every((s) => s.state === 'idle'), 5000, 'idle slots');
      await until(async () => metric(await metricsText(srv), 'strata_requests_total',
        { band: 'normal', outcome: 'cancelled' }) === 1, 5000, 'the cancelled counter');
      const r = await fetch(`${srv.url}${path}`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(again),
      });
      assert.equal(r.status, 200);
      assert.equal(text(await r.json()), 'tok1 tok2');
      const h = await getJSON(srv, '/health');
      assert.equal(h.status, 200);
    });
  });
}

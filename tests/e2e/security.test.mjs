// security.test.mjs -- the hardening of issue 26 (docs/SECURITY.md): strings
// from requests cannot forge log lines.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, postJSON, chatBody, until } from './lib/server.mjs';

// short: error messages quote at most ~40 bytes of a bad value
const FORGED = '2026-01-01T00:00Z error FORGED';

describe('log forging', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-decode-tps', '1000']); });
  after(async () => { await srv?.stop(); });

  const forgedLines = () => srv.log().split('\n').filter((l) => l.includes('FORGED'));

  test('a newline in "model" is escaped in the text log', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chatBody({ model: `nope\n${FORGED}` }));
    assert.equal(r.status, 404);
    await until(() => srv.log().includes(`nope\\n${FORGED}`), 5000, 'the refusal logged, escaped');
    for (const l of forgedLines()) assert.ok(!l.startsWith(FORGED), l);
  });

  test('a newline in a message role is escaped in the text log', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', chatBody({
      messages: [{ role: `x\r\n${FORGED}`, content: 'hi' }],
    }));
    assert.equal(r.status, 400);
    await until(() => srv.log().includes(`x\\r\\n${FORGED}`), 5000, 'the refusal logged, escaped');
    for (const l of forgedLines()) assert.ok(!l.startsWith(FORGED), l);
  });
});

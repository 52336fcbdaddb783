// dashboard.test.mjs -- the dashboard (docs/DASHBOARD.md) in a real browser:
// Debian's chromium driven by playwright-core against `strata serve` on the
// sim. A slot goes busy and free while a request runs, a queued request
// shows in its band, the chat box streams an answer, the activity log
// filters by band, and with --api-key the page shows nothing until it is
// given the key, and then not another key's requests.
//
// Run directly (`node dashboard.test.mjs`, as ctest does): it exits 77
// (ctest: Skipped) when chromium or playwright-core is missing. Nothing
// waits a fixed time: every step waits for what the page shows, with
// timeouts made for a loaded 2-core machine under ASan. A failing step
// leaves a screenshot in $DASHBOARD_ARTIFACTS (ctest: the build's tests/
// folder); a passing run leaves dashboard.png there (docs/img/dashboard.png).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { startServer, postJSON } from './lib/server.mjs';

const WAIT_MS = 60000;
const ARTIFACTS = process.env.DASHBOARD_ARTIFACTS || process.cwd();

function findChromium() {
  if (process.env.CHROMIUM) return existsSync(process.env.CHROMIUM) ? process.env.CHROMIUM : null;
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      if (dir && existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

const chromiumPath = findChromium();
let playwright = null;
try { playwright = await import('playwright-core'); } catch { /* reported below */ }
if (!chromiumPath || !playwright) {
  console.log(`SKIP: ${!chromiumPath ? 'chromium is not installed (apt-get install chromium)' : 'playwright-core is not installed (npm ci in tests/e2e)'}`);
  process.exit(77);
}

let browser;
before(async () => {
  browser = await playwright.chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    timeout: WAIT_MS,
  });
});
after(async () => { await browser?.close(); });

// A page on srv's dashboard whose failures leave a screenshot named 'name'.
async function openPage(srv, name) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  page.setDefaultTimeout(WAIT_MS);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${srv.url}/`);
  return {
    page,
    errors,
    async step(what, fn) {
      try {
        return await fn();
      } catch (e) {
        const file = join(ARTIFACTS, `dashboard-failure-${name}.png`);
        await page.screenshot({ path: file, fullPage: true }).catch(() => {});
        e.message = `${what}: ${e.message} (screenshot: ${file}; page errors: ${errors.join('; ') || 'none'})`;
        throw e;
      }
    },
  };
}

// A streamed chat request that runs until aborted (ignore_eos, a budget
// far past what the test waits for). Resolves once the server answered.
async function longRequest(srv, id, headers = {}) {
  const ctl = new AbortController();
  const res = await fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST',
    signal: ctl.signal,
    headers: { 'content-type': 'application/json', 'x-request-id': id, ...headers },
    body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: 'tell a long story' }],
      stream: true, ignore_eos: true, max_tokens: 3000 }),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const drained = (async () => { try { for (;;) if ((await reader.read()).done) return; } catch { /* aborted */ } })();
  return { async stop() { ctl.abort(); await drained; } };
}

describe('the dashboard on a one-slot sim server', () => {
  let srv;
  let ui;
  before(async () => {
    // one slot (no --batch): a second request waits in the queue
    srv = await startServer(['--sim-decode-tps', '20', '--sim-tokens', '4']);
    for (const [id, priority] of [['warm-i', 100], ['warm-n', 0], ['warm-b', -100]]) {
      const r = await postJSON(srv, '/v1/chat/completions',
        { model: 'default', messages: [{ role: 'user', content: 'warm up' }], priority }, { 'x-request-id': id });
      assert.equal(r.status, 200);
    }
    ui = await openPage(srv, 'sim');
  });
  after(async () => { await ui?.page.close(); await srv?.stop(); });

  test('a slot goes busy and free; a queued request shows in its band', async () => {
    const { page, step } = ui;
    await step('the slot starts free', () =>
      page.waitForSelector('#engines tr[data-slot="0"][data-phase="free"]'));
    const long = await longRequest(srv, 'dash-long');
    let queued;
    try {
      await step('the running request shows on its slot', () =>
        page.waitForSelector('#engines tr[data-slot="0"][data-request-id="dash-long"][data-phase="decoding"]'));
      queued = postJSON(srv, '/v1/chat/completions',
        { model: 'default', messages: [{ role: 'user', content: 'later' }], priority: -100, max_tokens: 2 },
        { 'x-request-id': 'dash-queued' });
      await step('the queued request shows in the batch band', () =>
        page.waitForSelector('#queue tr[data-band="batch"][data-waiting="1"]'));
      await step('the normal band stays empty', async () =>
        assert.equal(await page.getAttribute('#queue tr[data-band="normal"]', 'data-waiting'), '0'));
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png') });
    } finally {
      await long.stop();
    }
    const done = await queued;
    assert.equal(done.status, 200);
    await step('the queue empties', () =>
      page.waitForSelector('#queue tr[data-band="batch"][data-waiting="0"]'));
    await step('the slot is free again', () =>
      page.waitForSelector('#engines tr[data-slot="0"][data-phase="free"]'));
    await step('the activity log has both, the long one cancelled', async () => {
      await page.waitForSelector('#activity tr[data-request-id="dash-queued"]');
      await page.waitForFunction(() =>
        document.querySelector('#activity tr[data-request-id="dash-long"]')?.textContent.includes('cancelled'));
    });
  });

  test('the chat box streams an answer at the chosen priority', async () => {
    const { page, step } = ui;
    await step('send a message', async () => {
      await page.selectOption('#chat-priority', '100');
      await page.fill('#chat-input', 'hello dashboard');
      await page.click('#chat-send');
    });
    const answer = await step('the answer arrives', async () => {
      await page.waitForSelector('#chat-log .answer[data-done="true"]');
      return page.textContent('#chat-log .answer');
    });
    assert.equal(answer, 'tok1 tok2 tok3 tok4');
    const id = await page.getAttribute('#chat-log .answer', 'data-request-id');
    await step('its dispatch shows in the activity log, interactive', () =>
      page.waitForSelector(`#activity tr[data-request-id="${id}"][data-band="interactive"]`));
  });

  test('the activity log filters by band', async () => {
    const { page, step } = ui;
    await step('choose batch', () => page.selectOption('#activity-band', 'batch'));
    await step('only batch rows are left', async () => {
      await page.waitForSelector('#activity tr[data-request-id="dash-queued"]');
      const bands = await page.$$eval('#activity tbody tr[data-band]', (rows) => rows.map((r) => r.dataset.band));
      assert.ok(bands.length >= 2, `rows: ${bands}`);   // warm-b and dash-queued
      assert.deepEqual([...new Set(bands)], ['batch']);
    });
    assert.deepEqual(ui.errors, []);
  });
});

describe('the dashboard with --api-key', () => {
  let srv;
  let ui;
  before(async () => {
    srv = await startServer(['--api-key', 'sekrit', '--api-key', 'other', '--sim-decode-tps', '20']);
    ui = await openPage(srv, 'key');
  });
  after(async () => { await ui?.page.close(); await srv?.stop(); });

  test('nothing shows until the key is given; a wrong key is refused', async () => {
    const { page, step } = ui;
    await step('the page asks for the key', () => page.waitForSelector('#key-form', { state: 'visible' }));
    assert.equal(await page.isHidden('#main'), true);
    assert.equal(await page.$$eval('#engines tr', (r) => r.length), 0);
    await step('a wrong key', async () => {
      await page.fill('#key-input', 'wrong');
      await page.click('#key-form button[type="submit"]');
      await page.waitForFunction(() => /refused/.test(document.querySelector('#key-error').textContent));
    });
    assert.equal(await page.isHidden('#main'), true);
    await step('the right key shows the slots', async () => {
      await page.fill('#key-input', 'sekrit');
      await page.click('#key-form button[type="submit"]');
      await page.waitForSelector('#engines tr[data-slot="0"]');
    });
    assert.equal(await page.isVisible('#key-form'), false);
    // docs/SECURITY.md: another key's busy slot shows busy, not whose or how far
    const theirs = await longRequest(srv, 'their-secret-id', { authorization: 'Bearer other' });
    try {
      await step('another key\'s request shows as busy, without its id', async () => {
        await page.waitForSelector('#engines tr[data-slot="0"][data-phase="decoding"]');
        const row = await page.textContent('#engines tr[data-slot="0"]');
        assert.match(row, /another key's request/);
        assert.doesNotMatch(await page.textContent('body'), /their-secret-id/);
      });
    } finally {
      await theirs.stop();
    }
    await step('forgetting the key hides them again', async () => {
      await page.click('#key-forget');
      await page.waitForSelector('#key-form', { state: 'visible' });
    });
    assert.equal(await page.isHidden('#main'), true);
    assert.deepEqual(ui.errors, []);
  });
});

describe('the chat box with a reasoning model', () => {
  let srv;
  let ui;
  before(async () => {
    srv = await startServer(['--sim-reply', '<think>\nlet me see\n</think>\n\nHello there']);
    ui = await openPage(srv, 'reasoning');
  });
  after(async () => { await ui?.page.close(); await srv?.stop(); });

  test('the reasoning shows apart from the answer', async () => {
    const { page, step } = ui;
    await step('send once the models are listed', async () => {
      await page.waitForSelector('#chat-model option[value="default"]', { state: 'attached' });
      await page.fill('#chat-input', 'hi');
      await page.press('#chat-input', 'Enter');
      await page.waitForSelector('#chat-log .answer[data-done="true"]');
    });
    assert.equal(await page.textContent('#chat-log .answer'), 'Hello there');
    assert.match(await page.textContent('#chat-log .reasoning'), /let me see/);
    assert.deepEqual(ui.errors, []);
  });
});

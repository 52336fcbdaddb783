// limits.test.mjs -- what one client, or many, can hold (docs/SECURITY.md
// "Connections"): a stream whose client stops reading is cut at
// --stream-buffer (its slot freed, a log line, an error event and [DONE]
// for whoever reads on); past --max-connections new requests get 503
// too_many_connections while /health still answers, and past
// --max-connections-per-ip for one address (127.0.0.1 counts as any); a
// client that stops sending its headers is closed after --timeout, one
// that trickles them byte by byte after --header-timeout; /tokenize refuses a body
// too big to tokenize cheaply. Behaviour is asserted, never speed: every
// wait is generous.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { startServer, getJSON, postJSON, until, chatBody } from './lib/server.mjs';

// A raw connection to the server (node's fetch always reads).
async function connect(srv) {
  const { hostname, port } = new URL(srv.url);
  const sock = net.connect({ host: hostname, port: Number(port) });
  await once(sock, 'connect');
  return sock;
}

function rawPost(sock, path, body) {
  const json = JSON.stringify(body);
  sock.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
}

// Served again once the connections the test dropped are gone: until the
// server has seen them close it still counts them, and a new connection
// past the limit may be reset (fetch throws) rather than answered 503.
const servedAgain = async (srv) => {
  try {
    const r = await fetch(`${srv.url}/v1/models`);
    await r.arrayBuffer();
    return r.status === 200;
  } catch {
    return false;
  }
};

const slotsIdle = async (srv) => {
  const s = await getJSON(srv, '/slots');
  return Array.isArray(s.json) && s.json.every((x) => x.state === 'idle');
};

describe('back-pressure: a client that does not read', () => {
  let srv;
  before(async () => {
    // one slot with room for a long answer, decoded fast: the socket
    // buffers fill in seconds once the client stops reading
    srv = await startServer(['--parallel', '1', '-c', '4000000', '--sim-decode-tps', '20000',
      '--sim-tokens', '4000000', '--stream-buffer', '64k', '--timeout', '600']);
  });
  after(async () => { await srv?.stop(); });

  test('the stream is cut past --stream-buffer, its slot freed; it ends with its error, never [DONE]', async () => {
    const sock = await connect(srv);
    sock.pause();   // read nothing
    rawPost(sock, '/v1/chat/completions', chatBody({ stream: true, max_tokens: 3000000 }));
    await until(() => /does not read its stream/.test(srv.log()), 120000, 'the cut log line');
    assert.match(srv.log(), /--stream-buffer 65536/);
    await until(() => slotsIdle(srv), 30000, 'the slot to be freed');
    // the server answers others meanwhile
    const r = await postJSON(srv, '/v1/chat/completions', chatBody({ max_tokens: 4 }));
    assert.equal(r.status, 200);
    // whoever reads on gets what was held, then the reason, and the chunked
    // body ends there: no [DONE], which would say the answer is whole
    let text = '';
    sock.setEncoding('utf8');
    sock.on('data', (d) => { text = (text + d).slice(-4096); });
    sock.resume();
    await until(() => /\r\n0\r\n\r\n$/.test(text), 60000, 'the end of the stream');
    assert.match(text, /"code":"stream_buffer_full"/);
    assert.doesNotMatch(text, /\[DONE\]/);
    sock.destroy();
  });
});

describe('connections', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--max-connections', '4', '--timeout', '2']);
  });
  after(async () => { await srv?.stop(); });

  test('past --max-connections: 503 too_many_connections, /health still answers', async () => {
    const held = [];
    for (let i = 0; i < 4; i++) {
      const s = await connect(srv);
      s.on('error', () => {});
      // keep them open past --timeout: a byte of headers now and then
      s.write('GET /v1/models HTTP/1.1\r\n');
      held.push(s);
    }
    const ticker = setInterval(() => held.forEach((s) => s.write('X-A: b\r\n')), 500);
    try {
      const r = await fetch(`${srv.url}/v1/models`);
      const body = await r.json();
      assert.equal(r.status, 503, JSON.stringify(body));
      assert.equal(body.error.code, 'too_many_connections');
      assert.ok(r.headers.get('retry-after'));
      const h = await fetch(`${srv.url}/health`);
      await h.arrayBuffer();
      assert.equal(h.status, 200);
    } finally {
      clearInterval(ticker);
      held.forEach((s) => s.destroy());
    }
    await until(() => servedAgain(srv), 30000, 'the connections to be served again');
  });

  test('a client that stops sending its headers is closed after --timeout', async () => {
    const s = await connect(srv);
    s.on('error', () => {});
    s.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');   // and nothing more
    let timer;
    const gave = await Promise.race([once(s, 'close').then(() => 'closed'),
      new Promise((r) => { timer = setTimeout(() => r('held'), 60000); })]);
    clearTimeout(timer);
    assert.equal(gave, 'closed');
  });
});

describe('per address, and a deadline for the headers', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--max-connections-per-ip', '3', '--header-timeout', '2',
      '--timeout', '600']);
  });
  after(async () => { await srv?.stop(); });

  // Held connections that keep sending header lines, each before --timeout.
  async function hold(n, line = 'GET /v1/models HTTP/1.1\r\n') {
    const held = [];
    for (let i = 0; i < n; i++) {
      const s = await connect(srv);
      s.on('error', () => {});
      if (line) s.write(line);   // s.closed: node's, true once the server closed it
      held.push(s);
    }
    return held;
  }

  test('past --max-connections-per-ip from 127.0.0.1: 503 too_many_connections, /health still answers', async () => {
    const held = await hold(3);
    try {
      const r = await fetch(`${srv.url}/v1/models`);
      const body = await r.json();
      assert.equal(r.status, 503, JSON.stringify(body));
      assert.equal(body.error.code, 'too_many_connections');
      assert.match(body.error.message, /--max-connections-per-ip 3/);
      assert.equal(r.headers.get('retry-after'), '1');
      const h = await fetch(`${srv.url}/health`);
      await h.arrayBuffer();
      assert.equal(h.status, 200);
      // past the probes' reserve (16) a new connection is closed at once
      const more = await hold(20, '');
      await until(() => more.some((s) => s.closed), 30000, 'a connection past the reserve to be closed');
      more.forEach((s) => s.destroy());
    } finally {
      held.forEach((s) => s.destroy());
    }
    await until(() => servedAgain(srv), 30000, 'the address to be served again');
  });

  test('headers trickled a byte at a time are cut at --header-timeout, well before --timeout', async () => {
    const [s] = await hold(1, 'G');
    const start = Date.now();
    const rest = 'ET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n' + 'X-Slow: '.padEnd(4000, 'z');
    let i = 0;
    const ticker = setInterval(() => { if (!s.closed && i < rest.length) s.write(rest[i++]); }, 100);
    try {
      await until(() => s.closed, 60000, 'the trickling client to be cut');
      assert.ok(Date.now() - start >= 1900, 'not before --header-timeout');
      assert.ok(i < rest.length, 'cut while it was still sending');
    } finally {
      clearInterval(ticker);
      s.destroy();
    }
    // a keep-alive connection gets a new deadline for each request
    const k = await connect(srv);
    let got = '';
    k.setEncoding('utf8');
    k.on('data', (d) => { got += d; });
    for (let n = 0; n < 3; n++) {
      k.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await until(() => (got.match(/HTTP\/1\.1 200/g) || []).length === n + 1, 30000, `answer ${n + 1}`);
      await new Promise((r) => setTimeout(r, 1200));   // 3.6 s in all, each request within 2 s
    }
    k.destroy();
  });
});

describe('/tokenize size limit', () => {
  let srv;
  before(async () => { srv = await startServer([]); });
  after(async () => { await srv?.stop(); });

  test('content over the limit: 413 content_too_large, before tokenizing', async () => {
    const big = 'a '.repeat(600 * 1024);
    let r = await postJSON(srv, '/tokenize', { content: big });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.json.error.code, 'content_too_large');
    r = await postJSON(srv, '/tokenize', { content: 'a '.repeat(200 * 1024), with_pieces: true });
    assert.equal(r.status, 413, r.text);
    r = await postJSON(srv, '/tokenize', { content: 'hello world' , with_pieces: true });
    assert.equal(r.status, 200, r.text);
  });
});

describe('a half-closed client', () => {
  let srv;
  before(async () => { srv = await startServer(['--sim-decode-tps', '40']); });
  after(async () => { await srv?.stop(); });

  test('a stream whose client shut its write side after the request gets its whole answer', async () => {
    const sock = await connect(srv);
    let text = '';
    sock.setEncoding('utf8');
    sock.on('data', (d) => { text += d; });
    rawPost(sock, '/v1/chat/completions', chatBody({ stream: true, max_tokens: 20 }));
    const closed = once(sock, 'close');
    // half-close once the stream has started: a FIN that comes with the request
    // bytes is seen by libmicrohttpd while it reads them (docs/SECURITY.md)
    await once(sock, 'data');
    sock.end();   // shutdown(SHUT_WR): done sending, still reading
    let timer;
    await Promise.race([closed, new Promise((r) => { timer = setTimeout(r, 60000); })]);
    clearTimeout(timer);
    assert.match(text, /data: \[DONE\]/, text.slice(-500));
    assert.match(text, /"finish_reason":"(stop|length)"/);
    assert.doesNotMatch(text, /"error"/);
    sock.destroy();
  });
});

describe('the descriptor limit', () => {
  test('a low ulimit -n lowers --max-connections, keeping descriptors for the server', async () => {
    const { spawn } = await import('node:child_process');
    const proc = spawn('sh', ['-c', 'ulimit -n 150 && exec "$0" "$@"', process.env.STRATA_BIN,
      'serve', '--host', '127.0.0.1', '--port', '0', '--backend', 'sim'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    proc.stdout.on('data', (d) => { log += d; });
    proc.stderr.on('data', (d) => { log += d; });
    const exited = once(proc, 'exit');
    try {
      await until(() => /listening on/.test(log) || proc.exitCode !== null, 30000, 'the server to start');
      assert.match(log, /--max-connections 1024 lowered to 70: the descriptor limit is 150/, log);
    } finally {
      proc.kill('SIGTERM');
      await exited;
    }
  });
});

// Memory given back after a spike (src/server/idle.c, docs/OPERATIONS.md
// "Memory"): once the server is quiet for a second after work it trims
// its allocator (the debug log says so with the RSS before and after),
// once, and the next trim waits for the gap between trims (10 s).
describe('memory given back when idle', () => {
  let srv;
  before(async () => { srv = await startServer(['--log-level', 'debug', '--http-threads', '4']); });
  after(async () => { await srv?.stop(); });

  test('a burst of large requests, then quiet: a trim, then none within the gap', async () => {
    const from = srv.log().length;   // a trim after start-up's /health may come first
    const trims = () => [...srv.log().slice(from).matchAll(/idle: memory given back .*RSS (\d+) -> (\d+) KiB/g)];
    const big = 'word '.repeat(60000);
    const rs = await Promise.all(Array.from({ length: 8 }, () =>
      postJSON(srv, '/tokenize', { content: big })));
    for (const r of rs) assert.equal(r.status, 200, r.text);
    await until(() => trims().length >= 1, 30000, 'a trim once idle');
    const n = trims().length;
    const [, before, after] = trims()[n - 1];
    // (a sanitizer's allocator gives nothing back: a page may come and go)
    assert.ok(Number(after) <= Number(before) + 64, trims()[n - 1][0]);
    // a health probe is new work: the next trim waits for the gap (100 ticks)
    assert.equal((await getJSON(srv, '/health')).status, 200);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(trims().length, n);
  });
});

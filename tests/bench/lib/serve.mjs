// serve.mjs -- what the Node benchmarks (soak.mjs, mem_spike.mjs) share:
// their command line, `strata serve` started on 127.0.0.1 port 0 with its
// port read back from the log line "listening on http://HOST:PORT", and the
// server's RSS. (tests/e2e/lib/server.mjs does the same for the e2e suites,
// always on the sim engine and $STRATA_BIN; a benchmark picks both.)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

// `node X.mjs [--name value | --flag]... [-- serve flags...]`: args (before
// `--`), extra (after it), opt(name, dflt) (the value after --name) and bin
// (--bin, else $STRATA_BIN, else build/src/strata).
export function benchArgs(argv = process.argv) {
  const dash = argv.indexOf('--');
  const args = argv.slice(2, dash >= 0 ? dash : undefined);
  const extra = dash >= 0 ? argv.slice(dash + 1) : [];
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
  };
  return { args, extra, opt, bin: opt('--bin', process.env.STRATA_BIN || 'build/src/strata') };
}

// `bin serve --host 127.0.0.1 --port 0 ...serveArgs`. Resolves once it
// listens to { proc, url, args (all of bin's arguments), tail() (the last
// 8000 characters it wrote) }; rejects when it exits before. Each whole
// line it writes (stdout or stderr) goes to onLine; onExit(code, signal,
// tail) hears an exit after it listened.
export function spawnServer(bin, serveArgs, { onLine = () => {}, onExit = () => {} } = {}) {
  const args = ['serve', '--host', '127.0.0.1', '--port', '0', ...serveArgs];
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '', partial = '', url = null;
    const on = (d) => {
      const s = d.toString();
      tail = (tail + s).slice(-8000);
      const lines = (partial + s).split('\n');
      partial = lines.pop();
      for (const l of lines) onLine(l);
      const m = !url && tail.match(/listening on (http:\/\/[^\s"]+)/);
      if (m) { url = m[1]; resolve({ proc, url, args, tail: () => tail }); }
    };
    proc.stdout.on('data', on);
    proc.stderr.on('data', on);
    proc.on('exit', (code, sig) => {
      if (!url) reject(new Error(`strata exited ${code ?? sig}:\n${tail.slice(-2000)}`));
      else onExit(code, sig, tail);
    });
  });
}

// The resident KiB of process pid (/proc/PID/status VmRSS).
export const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

// prom.js -- reading the Prometheus text of /metrics (format 0.0.4):
// "name{k="v",...} value" lines; comments and blank lines skipped.

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function unescape(v) {
  return v.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
}

// [{ name, labels: {k: v}, value }] for every sample.
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(LABEL)) labels[l[1]] = unescape(l[2]);
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

// Sum of the samples called 'name' whose labels include 'want'.
export function sum(samples, name, want = {}) {
  let s = 0;
  for (const x of samples) {
    if (x.name !== name) continue;
    if (Object.entries(want).every(([k, v]) => x.labels[k] === v)) s += x.value;
  }
  return s;
}

// { labelValue: sum } of the samples called 'name', grouped by label 'by'.
export function by(samples, name, label, want = {}) {
  const out = {};
  for (const x of samples) {
    if (x.name !== name || !(label in x.labels)) continue;
    if (!Object.entries(want).every(([k, v]) => x.labels[k] === v)) continue;
    out[x.labels[label]] = (out[x.labels[label]] || 0) + x.value;
  }
  return out;
}

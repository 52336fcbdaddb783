// views.js -- the dashboard's tables, rebuilt from each poll's data.
// Every value from the server goes in as text (textContent), never as
// HTML: request ids and model names are chosen by clients.
import { BANDS } from './charts.js';
import { by, sum } from './prom.js';

// el('td', { class: 'x', 'data-y': 1 }, 'text', childNode, ...)
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : String(c));
  return e;
}

const band = (b) => el('span', { class: `band band-${b}` }, b);

function row(cells, attrs = {}) {
  return el('tr', attrs, ...cells.map((c) => el('td', {}, c)));
}

function head(...names) {
  return el('thead', {}, el('tr', {}, ...names.map((n) => el('th', {}, n))));
}

// A slot's phase: idle is "free"; decoding with drafts checked is "drafting".
export function phase(s) {
  if (s.state === 'idle') return 'free';
  if (s.state === 'decoding' && s.n_draft > 0) return 'drafting';
  return s.state;
}

function progress(s) {
  switch (s.state) {
    case 'idle': return s.n_cached ? `${s.n_cached} tokens cached` : '';
    case 'reading':
    case 'parked': return `read ${s.n_read}/${s.n_prompt} prompt tokens` + (s.give_ways ? `, gave way ${s.give_ways}×` : '');
    default: return `${s.n_generated} tokens out (prompt ${s.n_prompt})`;
  }
}

export function renderSlots(root, slots) {
  const engines = new Map();
  for (const s of slots) {
    if (!engines.has(s.engine)) engines.set(s.engine, []);
    engines.get(s.engine).push(s);
  }
  const cards = [];
  for (const [engine, list] of [...engines].sort((a, b) => a[0] - b[0])) {
    const busy = list.filter((s) => s.is_processing).length;
    const model = list.find((s) => s.model)?.model ?? 'no model loaded';
    const table = el('table', { class: 'slots' }, head('slot', 'phase', 'request', 'band', 'progress'));
    const body = el('tbody');
    for (const s of list) {
      const p = phase(s);
      const id = s.is_processing ? (s.request_id ?? 'another key\'s request') : '';
      body.append(row([String(s.id), el('span', { class: `phase phase-${p}` }, p), id,
        s.is_processing && s.request_id ? el('span', {}, band(s.band), ` ${s.priority}`) : '',
        progress(s)], { 'data-slot': s.id, 'data-phase': p, 'data-request-id': s.request_id ?? undefined }));
    }
    table.append(body);
    cards.push(el('div', { class: 'engine', 'data-engine': engine },
      el('h3', {}, `Engine ${engine} `, el('span', { class: 'muted' }, `${model} · ${busy}/${list.length} busy`)), table));
  }
  root.replaceChildren(...(cards.length ? cards : [el('p', { class: 'muted' }, 'No slots.')]));
}

function seconds(v) {
  return v > 0 ? `${v.toFixed(1)} s` : '–';
}

export function renderQueue(root, totals, samples) {
  const depth = by(samples, 'llamaswap_scheduler_queue_depth', 'band');
  const oldest = by(samples, 'llamaswap_scheduler_queue_oldest_wait_seconds', 'band');
  const running = by(samples, 'strata_requests_running', 'band');
  const gaveWay = by(samples, 'strata_give_ways_total', 'band');
  const rejected = by(samples, 'strata_requests_total', 'band', { outcome: 'rejected' });
  const body = el('tbody');
  for (const b of BANDS) {
    body.append(row([band(b), String(depth[b] ?? 0), seconds(oldest[b] ?? 0), String(running[b] ?? 0),
      String(gaveWay[b] ?? 0), String(rejected[b] ?? 0)], { 'data-band': b, 'data-waiting': depth[b] ?? 0 }));
  }
  root.replaceChildren(head('band', 'waiting', 'oldest wait', 'running', 'give-ways', 'rejected (429)'), body);
  totals.textContent = `Queue full or shed (429): ${sum(samples, 'strata_queue_full_total')} · ` +
    `KV cache in use: ${Math.round(100 * sum(samples, 'vllm:kv_cache_usage_perc'))}%`;
}

export function renderModels(root, models, samples) {
  const swaps = by(samples, 'strata_model_swaps_total', 'to');
  const loaded = by(samples, 'strata_model_loaded', 'model');
  const failures = by(samples, 'strata_model_load_failures_total', 'model');
  const body = el('tbody');
  for (const m of models) {
    const st = m.strata || {};
    const engines = (st.engines || []).map((e) => `engine ${e}`).join(', ');
    body.append(row([m.id, el('span', { class: `state state-${st.state}` }, st.state ?? '?'),
      st.backend ?? '', engines || 'none', String(loaded[m.id] ?? 0), String(swaps[m.id] ?? 0),
      String(failures[m.id] ?? 0) + (st.reason ? ` (${st.reason})` : '')], { 'data-model': m.id }));
  }
  root.replaceChildren(head('model', 'state', 'backend', 'resident on', 'loaded', 'swapped in', 'load failures'), body);
}

function clock(ms) {
  return ms ? new Date(ms).toLocaleTimeString([], { hour12: false }) : '';
}

const ms = (v) => (v === null || v === undefined ? '–' : `${Math.round(v)} ms`);

export function renderActivity(root, records, bandFilter, max = 100) {
  const body = el('tbody');
  let n = 0;
  for (let i = records.length - 1; i >= 0 && n < max; i--) {
    const a = records[i];
    if (bandFilter && a.serial_band !== bandFilter) continue;
    n++;
    body.append(row([clock(a.dispatched_unix_ms), a.request_id, a.model,
      el('span', {}, band(a.serial_band), ` ${a.serial_priority}`), `${a.engine}.${a.slot}`,
      ms(a.serial_queue_wait_ms), ms(a.ttft_ms), String(a.completion_tokens), String(a.give_ways),
      a.swapped ? `from ${a.swap_from ?? 'none'}` : '', a.finished ? a.outcome : 'running'],
    { 'data-request-id': a.request_id, 'data-band': a.serial_band }));
  }
  if (!n) body.append(el('tr', {}, el('td', { colspan: 11, class: 'muted' }, 'Nothing yet.')));
  root.replaceChildren(head('time', 'request', 'model', 'band', 'engine.slot', 'queue wait', 'TTFT',
    'tokens', 'give-ways', 'swap', 'outcome'), body);
}

// app.js -- the dashboard's main loop: poll the data endpoints once a
// second, redraw, and ask for the API key when the server wants one.
//
// Sources (docs/DASHBOARD.md): /slots (each engine's slots), /metrics (the
// queue by band, give-ways, 429s, TTFT and token counts per band, model
// swaps), /v1/models (models and where they are resident), /api/activity
// (the dispatch log). /slots and /api/activity show a key only its own
// requests (docs/SECURITY.md); the page shows what they give.
import { AuthError, getJSON, getKey, getText, keyGeneration, setKey } from './api.js';
import { BANDS, BAND_COLORS, History, drawChart } from './charts.js';
import { setModels, setupChat } from './chat.js';
import { parseMetrics, sum } from './prom.js';
import { el, renderActivity, renderModels, renderQueue, renderSlots } from './views.js';

const POLL_MS = 1000;
const $ = (id) => document.getElementById(id);

const ttft = new History();
const tps = new History();
let prev = null;        // the last counters: { t, [band]: { ttftSum, ttftCount, itlCount } }
let activity = [];
let timer = null;
let polling = false;    // a poll is in flight: a tick asked for meanwhile runs right after it
let again = false;

function status(state, text) {
  const s = $('status');
  s.dataset.state = state;
  s.textContent = text;
}

function counters(samples, t) {
  const snap = { t };
  for (const b of BANDS) {
    snap[b] = {
      ttftSum: sum(samples, 'strata_time_to_first_token_seconds_sum', { band: b }),
      ttftCount: sum(samples, 'strata_time_to_first_token_seconds_count', { band: b }),
      itlCount: sum(samples, 'strata_inter_token_latency_seconds_count', { band: b }),
    };
  }
  return snap;
}

// One point per band since the last poll: mean TTFT of the requests that
// got their first token meanwhile, and tokens generated per second (first
// tokens + the inter-token samples: one per later token).
function addPoints(snap) {
  if (prev && snap.t > prev.t) {
    const dt = (snap.t - prev.t) / 1000;
    const tv = {};
    const rv = {};
    for (const b of BANDS) {
      const n = snap[b].ttftCount - prev[b].ttftCount;
      const tokens = n + snap[b].itlCount - prev[b].itlCount;
      if (n < 0 || tokens < 0) continue;   // the server restarted: a gap
      tv[b] = n > 0 ? (snap[b].ttftSum - prev[b].ttftSum) / n : null;
      rv[b] = tokens / dt;
    }
    ttft.add(snap.t, tv);
    tps.add(snap.t, rv);
  }
  prev = snap;
}

function redrawCharts() {
  const now = Date.now();
  drawChart($('chart-ttft'), ttft, now);
  drawChart($('chart-tps'), tps, now);
}

function needKey(message) {
  document.body.dataset.auth = 'needed';
  $('main').hidden = true;
  $('key-form').hidden = false;
  $('key-error').textContent = message;
  $('key-forget').hidden = !getKey();
  status('key', 'API key needed');
  $('key-input').focus();
}

async function poll() {
  const gen = keyGeneration();
  const [slots, metrics, models, acts] = await Promise.all([
    getJSON('/slots'), getText('/metrics'), getJSON('/v1/models'), getJSON('/api/activity?limit=500'),
  ]);
  if (gen !== keyGeneration()) return;   // read with a key since forgotten or replaced
  const samples = parseMetrics(metrics);
  document.body.dataset.auth = 'ok';
  $('key-form').hidden = true;
  $('main').hidden = false;
  $('key-forget').hidden = !getKey();
  renderSlots($('engines'), slots);
  renderQueue($('queue'), $('queue-totals'), samples);
  renderModels($('models'), models.data || [], samples);
  setModels($('chat-model'), models.data || []);
  activity = acts;
  renderActivity($('activity'), activity, $('activity-band').value);
  addPoints(counters(samples, Date.now()));
  redrawCharts();
  status('live', `live · ${new Date().toLocaleTimeString([], { hour12: false })}`);
}

// One poll chain at a time: a tick while a poll is in flight (a key just
// given) is taken up when it ends instead of starting a second chain.
async function tick() {
  clearTimeout(timer);
  if (polling) { again = true; return; }
  polling = true;
  let stop = false;
  try {
    await poll();
  } catch (e) {
    if (e instanceof AuthError) { needKey(e.message); stop = true; }   // polls again once a key is given
    else status('error', `cannot reach the server: ${e.message}`);
  } finally {
    polling = false;
  }
  const soon = again;
  again = false;
  if (!stop || soon) timer = setTimeout(tick, soon ? 0 : POLL_MS);
}

function legend() {
  $('legend').replaceChildren(...BANDS.map((b) => {
    const swatch = el('span', { class: 'swatch' });
    swatch.style.background = BAND_COLORS[b];
    return el('span', { class: 'legend-item' }, swatch, b);
  }));
}

function start() {
  legend();
  $('key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    setKey($('key-input').value.trim());
    $('key-input').value = '';
    tick();
  });
  $('key-forget').addEventListener('click', () => {
    setKey('');
    needKey('Key forgotten.');
  });
  $('activity-band').addEventListener('change', () => renderActivity($('activity'), activity, $('activity-band').value));
  setupChat({
    form: $('chat-form'), input: $('chat-input'), model: $('chat-model'), priority: $('chat-priority'),
    log: $('chat-log'), send: $('chat-send'), stop: $('chat-stop'), clear: $('chat-clear'),
  });
  window.addEventListener('resize', redrawCharts);
  tick();
}

start();

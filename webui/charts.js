// charts.js -- per-band time series of the last minutes and a small line
// chart drawn on a canvas by hand (no library).

export const BANDS = ['interactive', 'normal', 'batch'];
export const BAND_COLORS = { interactive: '#e8590c', normal: '#1c7ed6', batch: '#7048e8' };
export const WINDOW_MS = 5 * 60 * 1000;

// Points { t: ms, v: number|null } per band; null leaves a gap.
export class History {
  constructor() { this.series = Object.fromEntries(BANDS.map((b) => [b, []])); }

  add(t, values) {
    for (const b of BANDS) {
      const s = this.series[b];
      s.push({ t, v: values[b] ?? null });
      while (s.length && s[0].t < t - WINDOW_MS) s.shift();
    }
  }

  max() {
    let m = 0;
    for (const b of BANDS) for (const p of this.series[b]) if (p.v !== null && p.v > m) m = p.v;
    return m;
  }
}

// A step of 1, 2 or 5 times a power of ten with about 'n' steps up to 'max'.
function niceStep(max, n) {
  const raw = max / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

function fmt(v) {
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toPrecision(2).replace(/\.?0+$/, '');
}

// Draws 'history' on 'canvas' over the last WINDOW_MS ending at 'now'.
export function drawChart(canvas, history, now) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 480;
  const h = canvas.clientHeight || 160;
  if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
  if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const pad = { l: 40, r: 8, t: 8, b: 18 };
  const pw = w - pad.l - pad.r;
  const ph = h - pad.t - pad.b;
  const top = history.max();
  const step = niceStep(top > 0 ? top : 1, 4);
  const ymax = Math.max(step, Math.ceil((top || step) / step) * step);
  const x = (t) => pad.l + ((t - (now - WINDOW_MS)) / WINDOW_MS) * pw;
  const y = (v) => pad.t + ph - (v / ymax) * ph;

  g.font = '11px system-ui, sans-serif';
  g.strokeStyle = '#dee2e6';
  g.fillStyle = '#868e96';
  g.lineWidth = 1;
  g.textAlign = 'right';
  g.textBaseline = 'middle';
  for (let v = 0; v <= ymax + step / 2; v += step) {
    g.beginPath();
    g.moveTo(pad.l, Math.round(y(v)) + 0.5);
    g.lineTo(w - pad.r, Math.round(y(v)) + 0.5);
    g.stroke();
    g.fillText(fmt(v), pad.l - 4, y(v));
  }
  g.textAlign = 'center';
  g.textBaseline = 'top';
  for (let m = 0; m <= 5; m++) g.fillText(m === 0 ? 'now' : `-${m}m`, x(now - m * 60000), h - pad.b + 4);

  for (const b of BANDS) {
    g.strokeStyle = BAND_COLORS[b];
    g.fillStyle = BAND_COLORS[b];
    g.lineWidth = 1.5;
    let open = false;
    g.beginPath();
    for (const p of history.series[b]) {
      if (p.v === null) { open = false; continue; }
      if (open) g.lineTo(x(p.t), y(p.v)); else g.moveTo(x(p.t), y(p.v));
      open = true;
    }
    g.stroke();
    for (const p of history.series[b]) {   // dots: a lone point is visible too
      if (p.v === null) continue;
      g.beginPath();
      g.arc(x(p.t), y(p.v), 1.5, 0, 2 * Math.PI);
      g.fill();
    }
  }
}

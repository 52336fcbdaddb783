// chat.js -- the chat box: one conversation sent to /v1/chat/completions
// with a chosen priority, the answer streamed in as it is generated.
import { apiFetch } from './api.js';
import { el } from './views.js';

function requestId() {
  const b = new Uint8Array(6);
  crypto.getRandomValues(b);
  return `chat-${[...b].map((x) => x.toString(16).padStart(2, '0')).join('')}`;
}

// The text deltas of an SSE body, as they arrive.
async function* deltas(res) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of block.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') return;
        const ev = JSON.parse(data);
        if (ev.error) throw new Error(ev.error.message || 'error');
        const d = ev.choices?.[0]?.delta || {};
        yield { text: d.content || '', reasoning: d.reasoning_content || '', finish: ev.choices?.[0]?.finish_reason };
      }
    }
  }
}

export function setupChat({ form, input, model, priority, log, send, stop, clear }) {
  let messages = [];
  let abort = null;

  const busy = (on) => { send.disabled = on; stop.disabled = !on; };

  async function run(text) {
    const id = requestId();
    messages.push({ role: 'user', content: text });
    const thinking = el('div', { class: 'reasoning' });
    const answer = el('div', { class: 'answer', 'data-request-id': id });
    const meta = el('div', { class: 'meta' }, `${id} · priority ${priority.value} · waiting…`);
    log.append(el('div', { class: 'turn' }, el('div', { class: 'question' }, text), thinking, answer, meta));
    log.scrollTop = log.scrollHeight;
    abort = new AbortController();
    busy(true);
    let got = '';
    let reasoning = '';
    try {
      const res = await apiFetch('/v1/chat/completions', {
        method: 'POST',
        signal: abort.signal,
        headers: { 'content-type': 'application/json', 'x-request-id': id },
        body: JSON.stringify({ model: model.value, messages, stream: true, priority: Number(priority.value) }),
      });
      meta.textContent = `${id} · priority ${priority.value} · streaming`;
      let finish = null;
      for await (const d of deltas(res)) {
        got += d.text;
        reasoning += d.reasoning;
        answer.textContent = got;
        thinking.textContent = reasoning;
        if (d.finish) finish = d.finish;
        log.scrollTop = log.scrollHeight;
      }
      messages.push({ role: 'assistant', content: got });
      meta.textContent = `${id} · priority ${priority.value} · done (${finish ?? 'end'})`;
      answer.dataset.done = 'true';
    } catch (e) {
      messages.pop();
      meta.textContent = `${id} · ${e.name === 'AbortError' ? 'stopped' : e.message}`;
      answer.dataset.done = 'error';
      if (e.name === 'AuthError') throw e;
    } finally {
      abort = null;
      busy(false);
    }
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text || abort || !model.value) return;   // no model listed yet: the first poll brings them
    input.value = '';
    run(text).catch(() => {});
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });
  stop.addEventListener('click', () => abort?.abort());
  clear.addEventListener('click', () => { abort?.abort(); messages = []; log.replaceChildren(); });
  busy(false);
}

// Fill the model picker from /v1/models, keeping the choice.
export function setModels(select, models) {
  const keep = select.value;
  const ids = models.map((m) => m.id);
  if (ids.join('\n') === [...select.options].map((o) => o.value).join('\n')) return;
  select.replaceChildren(...ids.map((id) => el('option', { value: id }, id)));
  if (ids.includes(keep)) select.value = keep;
}

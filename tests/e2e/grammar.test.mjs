// grammar.test.mjs -- llama-server's `grammar` field (GBNF) against a real
// model: a synthetic tiny model (strata make-model, random weights, so its
// text is noise) served by the CPU backend. docs/API.md "Grammars (GBNF)".
//
//   - chat and completions, greedy and seeded sampled, streamed or not: the
//     reply is in the grammar's language when it stops, a prefix of it when
//     cut by max_tokens;
//   - stop strings are not applied to a constrained reply; ignore_eos does
//     not keep a finished text going;
//   - a bad grammar is a 400 with param "grammar" and the line and column;
//     grammar with a JSON response_format or a forced tool_choice is a 400.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { postJSON, startTinyModel } from './lib/server.mjs';

const messages = [{ role: 'user', content: 'Answer yes or no.' }];
const yesNo = 'root ::= ("yes" | "no") "."';
const numbers = 'root ::= num ("," " "? num){0,4}\nnum ::= "-"? [1-9] [0-9]{0,2} | "0"';
const numbersFull = /^(-?[1-9][0-9]{0,2}|0)(, ?(-?[1-9][0-9]{0,2}|0)){0,4}$/;

describe('grammar (GBNF) on a real model', () => {
  let srv, dir;
  before(async () => {
    ({ srv, dir } = await startTinyModel('strata-e2e-grammar-', 1, 512));
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const chat = (extra) => postJSON(srv, '/v1/chat/completions', {
    model: 'tiny', messages, max_tokens: 30, reasoning_format: 'none', ...extra,
  });

  test('chat: the reply is "yes." or "no.", greedy and sampled', async () => {
    for (const extra of [{ temperature: 0 }, { temperature: 1, seed: 1 }, { temperature: 1.5, seed: 7 },
      { temperature: 1, seed: 3, stop: ['.'] }]) {
      const r = await chat({ grammar: yesNo, ...extra });
      assert.equal(r.status, 200, r.text);
      const c = r.json.choices[0];
      assert.match(c.message.content, /^(yes|no)\.$/, JSON.stringify(extra));
      assert.equal(c.finish_reason, 'stop');
    }
  });

  test('ignore_eos: a complete text that cannot go on still ends', async () => {
    const r = await chat({ grammar: yesNo, temperature: 0, ignore_eos: true });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.choices[0].message.content, /^(yes|no)\.$/);
    assert.equal(r.json.choices[0].finish_reason, 'stop');
  });

  test('chat with the reasoning split on: the content is in the language', async () => {
    const r = await postJSON(srv, '/v1/chat/completions', {
      model: 'tiny', messages, max_tokens: 60, temperature: 0, grammar: yesNo,
    });
    assert.equal(r.status, 200, r.text);
    const c = r.json.choices[0];
    if (c.finish_reason === 'stop') assert.match(c.message.content, /^(yes|no)\.$/);
  });

  test('completions: numbers, stopped replies match, cut ones are prefixes', async () => {
    let stopped = 0;
    for (let seed = 0; seed < 6; seed++) {
      const r = await postJSON(srv, '/v1/completions', {
        model: 'tiny', prompt: 'Some numbers:', max_tokens: 24, temperature: 1, seed, grammar: numbers,
      });
      assert.equal(r.status, 200, r.text);
      const c = r.json.choices[0];
      assert.match(c.text, /^[-0-9, ]*$/);
      if (c.finish_reason === 'stop') {
        stopped++;
        assert.match(c.text, numbersFull);
      }
    }
    assert.ok(stopped > 0, 'no reply ended');
  });

  test('streamed chat gives the same text as the whole reply', async () => {
    const body = { model: 'tiny', messages, max_tokens: 30, temperature: 0, grammar: yesNo, reasoning_format: 'none' };
    const whole = await postJSON(srv, '/v1/chat/completions', body);
    const r = await fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
    });
    const text = await r.text();
    let content = '';
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      content += JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? '';
    }
    assert.equal(content, whole.json.choices[0].message.content);
  });

  test('bad grammars and mixes are 400s naming the param, the line and the column', async () => {
    const cases = [
      [{ grammar: 'root ::= foo' }, /line 1, column 10: undefined rule 'foo'/],
      [{ grammar: 'root ::= "a"\nexpr ::= expr "+"' }, /line 2, column 1: rule 'expr' is left-recursive/],
      [{ grammar: 'root ::= "abc' }, /line 1, column 10: unterminated literal/],
      [{ grammar: 'a ::= "x"' }, /no 'root' rule/],
      [{ grammar: 12 }, /Invalid type for 'grammar'/],
      [{ grammar: yesNo, response_format: { type: 'json_object' } }, /cannot be combined/],
      [{ grammar: yesNo, json_schema: { type: 'string' } }, /cannot be combined/],
      [{ grammar: yesNo, tool_choice: 'required', tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, /cannot be combined/],
    ];
    for (const [extra, re] of cases) {
      const r = await chat(extra);
      assert.equal(r.status, 400, `${JSON.stringify(extra)}: ${r.text}`);
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.equal(r.json.error.param, 'grammar');
      assert.match(r.json.error.message, re);
    }
    const empty = await chat({ grammar: '', temperature: 0 });   // "" is no grammar, as llama-server
    assert.equal(empty.status, 200, empty.text);
  });
});

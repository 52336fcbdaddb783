// glm.test.mjs -- a glm4moe model (GLM-4.5's layout at toy size: strata
// make-model --preset glm-tiny, random weights, so its text is noise)
// served by the CPU backend, through the OpenAI Node SDK and raw HTTP:
//
//   - the prompt is GLM-4.5's template ([gMASK]<sop>, <|system|> with the
//     tools, <|user|>, <|assistant|>; /nothink and the empty think block
//     when thinking is off), as /apply-template shows it;
//   - tool_choice "required" / a named function: the reply is constrained
//     to GLM's <tool_call>NAME\n<arg_key>..</arg_key>\n<arg_value>.. form,
//     so even this model's noise comes back as tool_calls whose arguments
//     are JSON objects valid against the tool's schema, streamed or not;
//   - under response_format a reply may think after GLM's "\n" (the think
//     block takes a few blanks before <think>);
//   - a plain chat completes and its usage counts the rendered prompt.
// docs/API.md "Tool calls and reasoning" (GLM-4.5), docs/GGUF.md (glm4moe).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import OpenAI from 'openai';
import { postJSON, startPresetModel } from './lib/server.mjs';

// Enums, ranges and additionalProperties: false keep every argument short:
// a model of noise would otherwise write free keys and strings until
// max_tokens (what the grammar allows, and what a real model does not).
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', required: ['city', 'days'], additionalProperties: false,
      properties: { city: { type: 'string', enum: ['Paris', 'Rome'] },
        days: { type: 'integer', minimum: 1, maximum: 7 } } } } },
  { type: 'function', function: { name: 'get_time',
    parameters: { type: 'object', required: ['tz'], additionalProperties: false,
      properties: { tz: { type: 'string', enum: ['UTC', 'CET'] } } } } },
];
const noThink = { chat_template_kwargs: { enable_thinking: false } };
const messages = [{ role: 'user', content: 'weather in Paris for 3 days, and the time?' }];

function checkCall(call) {
  assert.equal(call.type, 'function');
  const args = JSON.parse(call.function.arguments);
  assert.equal(typeof args, 'object');
  if (call.function.name === 'get_weather') {
    assert.deepEqual(Object.keys(args).sort(), ['city', 'days']);
    assert.ok(['Paris', 'Rome'].includes(args.city), `city ${args.city}`);
    assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, `days ${args.days}`);
  } else {
    assert.equal(call.function.name, 'get_time');
    assert.ok(['UTC', 'CET'].includes(args.tz), `tz ${args.tz}`);
  }
}

describe('glm4moe (glm-tiny) on the CPU backend', () => {
  let srv, dir, client;
  before(async () => {
    ({ srv, dir } = await startPresetModel('strata-e2e-glm-', 'glm-tiny', 3, 2048));
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await srv?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('/apply-template renders GLM-4.5: tools in the system turn, thinking on and off', async () => {
    const on = await postJSON(srv, '/apply-template', { messages, tools });
    assert.equal(on.status, 200, on.text);
    const p = on.json.prompt;
    assert.ok(p.startsWith('[gMASK]<sop><|system|>\n# Tools\n'), p.slice(0, 60));
    assert.ok(p.includes('"name": "get_weather"') || p.includes('"name":"get_weather"'), p);
    assert.ok(p.includes('<|user|>\nweather in Paris for 3 days, and the time?'), p);
    assert.ok(p.endsWith('<|assistant|>'), p.slice(-40));
    const off = await postJSON(srv, '/apply-template', {
      messages, chat_template_kwargs: { enable_thinking: false } });
    assert.equal(off.status, 200, off.text);
    assert.ok(off.json.prompt.endsWith('/nothink<|assistant|>\n<think></think>'),
      JSON.stringify(off.json.prompt.slice(-60)));
  });

  test('tool_choice required: one schema-valid call, greedy and sampled, thinking off and capped', async () => {
    for (const extra of [{ temperature: 0, ...noThink }, { temperature: 1, seed: 1, ...noThink },
      { temperature: 1.3, seed: 9, ...noThink }, { temperature: 0, thinking_budget: 5 }]) {
      const r = await client.chat.completions.create({ model: 'glm-tiny', messages, tools,
        tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300, ...extra });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.equal(c.message.tool_calls.length, 1);
      checkCall(c.message.tool_calls[0]);
      assert.match(c.message.tool_calls[0].id, /^call_[A-Za-z0-9]{24}$/);
      if (extra.thinking_budget)   // the block was forced closed after 5 tokens
        assert.equal(typeof c.message.reasoning_content, 'string');
    }
  });

  test('a named tool_choice, streamed: the deltas rebuild the non-streamed call', async () => {
    const body = { model: 'glm-tiny', messages, tools, max_tokens: 300, temperature: 0, ...noThink,
      parallel_tool_calls: false, tool_choice: { type: 'function', function: { name: 'get_weather' } } };
    const whole = await client.chat.completions.create(body);
    assert.equal(whole.choices[0].finish_reason, 'tool_calls');
    assert.equal(whole.choices[0].message.tool_calls.length, 1);
    const call = whole.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    checkCall(call);
    const stream = await client.chat.completions.create({ ...body, stream: true });
    let name = '', args = '', finish = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        for (const t of c.delta.tool_calls ?? []) {
          name += t.function?.name ?? '';
          args += t.function?.arguments ?? '';
        }
        finish = c.finish_reason ?? finish;
      }
    }
    assert.equal(finish, 'tool_calls', `${name} ${args}`);
    assert.equal(name, 'get_weather');
    assert.deepEqual(JSON.parse(args), JSON.parse(call.function.arguments));
  });

  // GLM-4.5 opens its block with "\n<think>": under response_format the
  // think block takes up to 4 blanks before the tag (think_block.h). A
  // logit_bias makes "\n" the first choice wherever it is allowed, and
  // "<think>" the next: the reply starts with the 4 blanks allowed (a JSON
  // document may not start so), thinks (blanks, cut by the budget), then
  // writes the one document the schema allows. The block is split out (its
  // blank reasoning is empty): the content is the document alone.
  test('response_format: a reply that starts "\\n<think>" thinks, then the document', async () => {
    const id = async (text) => {
      const t = await postJSON(srv, '/tokenize', { content: text, add_special: false,
        parse_special: true });
      assert.equal(t.json.tokens.length, 1, `${JSON.stringify(text)}: ${t.text}`);
      return t.json.tokens[0];
    };
    const schema = { type: 'object', required: ['a'], additionalProperties: false,
      properties: { a: { enum: [1] } } };
    const r = await client.chat.completions.create({ model: 'glm-tiny', messages,
      max_tokens: 400, temperature: 0, thinking_budget: 2, logprobs: true,
      logit_bias: { [await id('\n')]: 100, [await id('<think>')]: 90 },
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } });
    const c = r.choices[0];
    const toks = c.logprobs.content.map((t) => t.token);
    const head = JSON.stringify(toks.slice(0, 10));
    assert.deepEqual(toks.slice(0, 5), ['\n', '\n', '\n', '\n', '<think>'], head);
    assert.ok(toks.indexOf('</think>') > 5, head);
    assert.equal(c.finish_reason, 'stop', JSON.stringify(c.message));
    assert.ok(c.message.content.startsWith('{'), JSON.stringify(c.message));
    assert.deepEqual(JSON.parse(c.message.content), { a: 1 });
  });

  test('a plain chat completes; usage counts the rendered prompt', async () => {
    const tpl = await postJSON(srv, '/apply-template', { messages });
    const tok = await postJSON(srv, '/tokenize', { content: tpl.json.prompt, add_special: false,
      parse_special: true });
    assert.equal(tok.status, 200, tok.text);
    const r = await client.chat.completions.create({
      model: 'glm-tiny', messages, max_tokens: 8, temperature: 0 });
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.equal(r.usage.prompt_tokens, tok.json.tokens.length);
  });
});

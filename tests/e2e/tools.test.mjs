// tools.test.mjs -- tool calls and reasoning through the official OpenAI
// Node SDK: the sim generates an exact reply (--sim-reply, or a model path
// "reply:TEXT"), split into 1-7 byte pieces, and the server parses it into
// message.reasoning_content, content and tool_calls (docs/API.md "Tool
// calls and reasoning"), streamed and not.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import OpenAI from 'openai';
import { startServer, postJSON, readSSE } from './lib/server.mjs';

const REPLY = '<think>\nThe user wants the weather and the time.\n</think>\n\n'
  + 'Let me check both.\n'
  + '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "note": "} </tool_call> \\"q\\""}}\n</tool_call>\n'
  + '<tool_call>\n{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}\n</tool_call>';

const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } } },
];
const messages = [{ role: 'user', content: 'weather and time in Paris please' }];
const ID = /^call_[A-Za-z0-9]{24}$/;

function checkCalls(calls) {
  assert.equal(calls.length, 2);
  assert.match(calls[0].id, ID);
  assert.match(calls[1].id, ID);
  assert.notEqual(calls[0].id, calls[1].id);
  assert.equal(calls[0].type, 'function');
  assert.equal(calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(calls[0].function.arguments), { city: 'Paris', note: '} </tool_call> "q"' });
  assert.equal(calls[1].function.name, 'get_time');
  assert.deepEqual(JSON.parse(calls[1].function.arguments), { tz: 'Europe/Paris' });
}

describe('a reply with reasoning, content and two tool calls', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--batch', '--parallel', '4', '--sim-decode-tps', '2000', '--sim-reply', REPLY]);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('non-stream: tool_calls, content, reasoning_content, finish_reason tool_calls', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages, tools });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(m.role, 'assistant');
    assert.equal(m.content, 'Let me check both.');
    assert.equal(m.reasoning_content, 'The user wants the weather and the time.');
    checkCalls(m.tool_calls);
  });

  test('stream: deltas reassemble into the same calls (by hand and by the SDK helper)', async () => {
    const stream = await client.chat.completions.create({ model: 'default', messages, tools, stream: true });
    const calls = [];
    let content = '', reasoning = '', finish = null, firsts = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        content += c.delta?.content ?? '';
        reasoning += c.delta?.reasoning_content ?? '';
        for (const tc of c.delta?.tool_calls ?? []) {
          if (tc.id) {
            firsts++;
            assert.equal(tc.type, 'function');
            assert.equal(tc.function.arguments, '');
            calls[tc.index] = { id: tc.id, type: tc.type, function: { name: tc.function.name, arguments: '' } };
          } else {
            assert.equal(tc.function.name, undefined);
            calls[tc.index].function.arguments += tc.function.arguments;
          }
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(firsts, 2);
    assert.equal(content, 'Let me check both.');
    assert.equal(reasoning, 'The user wants the weather and the time.');
    assert.equal(finish, 'tool_calls');
    checkCalls(calls);

    const final = await client.chat.completions.stream({ model: 'default', messages, tools }).finalChatCompletion();
    checkCalls(final.choices[0].message.tool_calls);
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
  });

  test('tool_choice "none": no tools to the template, nothing parsed', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages, tools, tool_choice: 'none' });
    const m = r.choices[0].message;
    assert.equal(m.tool_calls, undefined);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(m.content.startsWith('Let me check both.\n<tool_call>\n{"name": "get_weather"'), m.content);
    assert.ok(m.content.endsWith('</tool_call>'));
    assert.equal(m.reasoning_content, 'The user wants the weather and the time.');   /* still split */
  });

  test('tool_choice "required" and a named function: the reply is still parsed into its calls', async () => {
    // the sim forces its text (the constraint is the sampler's: the
    // enforcement itself is tests/unit/test_engine_calls.c); the wiring is
    // checked on the debug log below
    for (const tool_choice of ['required', 'auto', { type: 'function', function: { name: 'get_time' } }]) {
      const r = await client.chat.completions.create({ model: 'default', messages, tools, tool_choice });
      assert.equal(r.choices[0].message.tool_calls.length, 2);
    }
  });

  test('parallel_tool_calls false keeps the first call; reasoning_format none keeps <think>', async () => {
    let r = await client.chat.completions.create({ model: 'default', messages, tools, parallel_tool_calls: false });
    assert.equal(r.choices[0].message.tool_calls.length, 1);
    assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_weather');
    r = await client.chat.completions.create({ model: 'default', messages, tools, reasoning_format: 'none' });
    const m = r.choices[0].message;
    assert.equal(m.reasoning_content, undefined);
    assert.ok(m.content.startsWith('<think>\nThe user wants'), m.content);
    assert.equal(m.tool_calls.length, 2);
  });

  test('n=2: each choice parses its own reply', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages, tools, n: 2 });
    assert.equal(r.choices.length, 2);
    for (const c of r.choices) checkCalls(c.message.tool_calls);
    assert.notEqual(r.choices[0].message.tool_calls[0].id, r.choices[1].message.tool_calls[0].id);
  });

  test('cut off inside a call (max_tokens): the partial call comes back as content', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages, tools, max_tokens: 25 });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(m.tool_calls, undefined);
    assert.ok(m.content.startsWith('Let me check both.\n<tool_call>'), m.content);
  });

  test('without tools only reasoning is split; /v1/completions stays raw', async () => {
    const r = await client.chat.completions.create({ model: 'default', messages });
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.ok(r.choices[0].message.content.startsWith('Let me check both.\n<tool_call>'));
    const c = await client.completions.create({ model: 'default', prompt: 'weather' });
    assert.equal(c.choices[0].text, REPLY);
  });

  test('stream logprobs stay one per token', async () => {
    const res = await fetch(`${srv.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages, tools, stream: true, logprobs: true, stream_options: { include_usage: true } }),
    });
    const { events } = await readSSE(res);
    let n = 0, usage = null;
    for (const e of events) {
      if (e.data === '[DONE]') continue;
      const j = JSON.parse(e.data);
      if (j.usage) usage = j.usage;
      for (const c of j.choices) n += c.logprobs?.content?.length ?? 0;
    }
    assert.ok(usage.completion_tokens > 20);
    assert.equal(n, usage.completion_tokens);   /* even tokens whose text the parser held */
  });

  test('a follow-up with the assistant tool_calls and role "tool" messages renders (200)', async () => {
    const first = await client.chat.completions.create({ model: 'default', messages, tools });
    const m = first.choices[0].message;
    const follow = [
      ...messages,
      { role: 'assistant', content: m.content, tool_calls: m.tool_calls },
      { role: 'tool', tool_call_id: m.tool_calls[0].id, content: '{"temp_c": 21}' },
      { role: 'tool', tool_call_id: m.tool_calls[1].id, content: '{"time": "14:05"}' },
    ];
    const r = await client.chat.completions.create({ model: 'default', messages: follow, tools });
    assert.equal(r.choices[0].message.tool_calls.length, 2);
    const raw = await postJSON(srv, '/v1/chat/completions', { messages: [...messages,
      { role: 'assistant', content: null, tool_calls: m.tool_calls }, follow[3]], tools });
    assert.equal(raw.status, 200, raw.text);
  });
});

describe('--reasoning-format none, and per-model replies from the config', () => {
  let srv, client, dir;
  before(async () => {
    dir = mkdtempSync(`${tmpdir()}/strata-tools-`);
    writeFileSync(`${dir}/models.yaml`, [
      'reasoning_format: none',
      'models:',
      '  - name: thinker',
      '    path: "reply:<think>hmm</think>Answer."',
      '    preload: true',
      '  - name: broken',
      '    path: "reply:Sure.\\n<tool_call>\\n{\\"name\\": \\"f\\", \\"arguments\\": {oops}}\\n</tool_call>"',
      '',
    ].join('\n'));
    srv = await startServer(['--config', `${dir}/models.yaml`, '--sim-decode-tps', '2000']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); rmSync(dir, { recursive: true, force: true }); });

  test('the server default none keeps <think> in the content; the body overrides it', async () => {
    let r = await client.chat.completions.create({ model: 'thinker', messages });
    assert.equal(r.choices[0].message.content, '<think>hmm</think>Answer.');
    assert.equal(r.choices[0].message.reasoning_content, undefined);
    r = await client.chat.completions.create({ model: 'thinker', messages, reasoning_format: 'deepseek' });
    assert.equal(r.choices[0].message.content, 'Answer.');
    assert.equal(r.choices[0].message.reasoning_content, 'hmm');
  });

  test('a malformed call is given back as content, streamed or not', async () => {
    const want = 'Sure.\n<tool_call>\n{"name": "f", "arguments": {oops}}\n</tool_call>';
    const r = await client.chat.completions.create({ model: 'broken', messages, tools });
    assert.equal(r.choices[0].message.content, want);
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const stream = await client.chat.completions.create({ model: 'broken', messages, tools, stream: true });
    let content = '';
    for await (const chunk of stream) for (const c of chunk.choices) {
      content += c.delta?.content ?? '';
      assert.equal(c.delta?.tool_calls, undefined);
    }
    assert.equal(content, want);
  });

  test('a bad reasoning_format or tool_choice is a 400 naming the field', async () => {
    let r = await postJSON(srv, '/v1/chat/completions', { model: 'thinker', messages, reasoning_format: 'loud' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'reasoning_format');
    r = await postJSON(srv, '/v1/chat/completions', { model: 'thinker', messages, tool_choice: 'maybe' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'tool_choice');
  });
});

// Mistral's format (reply_parse.h, opts.mistral): the server picks it when
// the rendered prompt is a Mistral one. The sim's "template" joins the
// messages' contents, so a user message that starts with [INST] makes the
// prompt look like one.
describe('Mistral replies: [THINK], [TOOL_CALLS]name[ARGS]{...} and the JSON-array form', () => {
  const MISTRAL = '[THINK]Two calls.[/THINK]Checking. [TOOL_CALLS]get_weather[ARGS]'
    + '{"city": "Paris", "note": "[TOOL_CALLS] } \\"q\\""}[TOOL_CALLS]get_time[ARGS]{"tz": "Europe/Paris"}';
  const V7 = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "note": "[TOOL_CALLS] } \\"q\\""}, '
    + '"id": "abcdefghi"}, {"name": "get_time", "arguments": "{\\"tz\\": \\"Europe/Paris\\"}"}]';
  const mmsgs = [{ role: 'user', content: '[INST]weather and time in Paris please[/INST]' }];
  let srv, client, dir;
  const checkMistral = (calls) => {
    assert.equal(calls.length, 2);
    assert.match(calls[0].id, ID);
    assert.equal(calls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(calls[0].function.arguments), { city: 'Paris', note: '[TOOL_CALLS] } "q"' });
    assert.equal(calls[1].function.name, 'get_time');
    assert.deepEqual(JSON.parse(calls[1].function.arguments), { tz: 'Europe/Paris' });
  };
  before(async () => {
    dir = mkdtempSync(`${tmpdir()}/strata-mistral-`);
    writeFileSync(`${dir}/models.yaml`, [        // JSON strings are YAML double-quoted scalars
      'models:',
      '  - name: v11',
      `    path: ${JSON.stringify(`reply:${MISTRAL}`)}`,
      '  - name: v7',
      `    path: ${JSON.stringify(`reply:${V7}`)}`,
      '',
    ].join('\n'));
    srv = await startServer(['--config', `${dir}/models.yaml`, '--sim-decode-tps', '2000']);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); rmSync(dir, { recursive: true, force: true }); });

  test('[ARGS] calls with [THINK] reasoning, streamed and not', async () => {
    const r = await client.chat.completions.create({ model: 'v11', messages: mmsgs, tools });
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(m.content, 'Checking.');
    assert.equal(m.reasoning_content, 'Two calls.');
    checkMistral(m.tool_calls);
    const final = await client.chat.completions.stream({ model: 'v11', messages: mmsgs, tools }).finalChatCompletion();
    checkMistral(final.choices[0].message.tool_calls);
  });

  test('the v7 JSON-array form; without the Mistral prompt the markers are text', async () => {
    const r = await client.chat.completions.create({ model: 'v7', messages: mmsgs, tools });
    checkMistral(r.choices[0].message.tool_calls);
    assert.equal(r.choices[0].message.content, null);
    const plain = await client.chat.completions.create({ model: 'v7', messages, tools });
    assert.equal(plain.choices[0].message.tool_calls, undefined);
    assert.equal(plain.choices[0].message.content, V7);
  });
});

// tool_choice "required" / a named function (docs/API.md "Tool calls and
// reasoning"): the server compiles a call grammar for the format the parser
// will read and hands it to the sampler; the debug log says which. The sim's
// "template" is the messages' contents, so a message can make the prompt
// look like a Llama 3.1 or Mistral one, or open a think block.
describe('tool_choice enforcement: the grammar handed to the sampler', () => {
  const REPLY1 = '<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>';
  let srv, client;
  before(async () => {
    srv = await startServer(['--log-level', 'debug', '--sim-decode-tps', '2000', '--sim-reply', REPLY1]);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  // the log lines a request added (written before its reply)
  async function logOf(body) {
    const before = srv.log().length;
    const r = await client.chat.completions.create({ model: 'default', tools, ...body });
    return { r, log: srv.log().slice(before) };
  }
  const CONSTRAINED = /tool_choice: reply constrained to calls \(format (\S+), think (\S+), (\d+) tool\(s\), (\d+) with any-object arguments, ([a-z ]+)\)/;

  test('"required": every tool, Hermes format, think optional, parallel', async () => {
    const { r, log } = await logOf({ messages, tool_choice: 'required' });
    assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_time');
    const m = log.match(CONSTRAINED);
    assert.ok(m, log);
    assert.deepEqual(m.slice(1), ['hermes', 'optional', '2', '0', 'parallel']);
  });

  test('a named function: that tool only; parallel_tool_calls false: one call', async () => {
    const { log } = await logOf({ messages, parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'get_time' } } });
    assert.deepEqual(log.match(CONSTRAINED).slice(1), ['hermes', 'optional', '1', '0', 'one call']);
  });

  test('the format follows the prompt: Llama 3.1, Mistral v11 / v7, Qwen3-Coder, an open think block', async () => {
    const cases = [
      ['<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nweather?', ['llama', 'none']],
      ['[INST]x[/INST][AVAILABLE_TOOLS][{}][/AVAILABLE_TOOLS]', ['mistral-v11', 'optional']],
      ['[INST]x[/INST][AVAILABLE_TOOLS] [{}][/AVAILABLE_TOOLS]', ['mistral-v7', 'none']],
      ['<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n', ['xml', 'none']],
      ['think first <think>\n', ['hermes', 'open']],
      ['no thinking <think>\n\n</think>\n\n', ['hermes', 'none']],
    ];
    for (const [content, want] of cases) {
      const { log } = await logOf({ messages: [{ role: 'user', content }], tool_choice: 'required' });
      const m = log.match(CONSTRAINED);
      assert.ok(m, `${content}: ${log}`);
      assert.deepEqual(m.slice(1, 3), want, content);
    }
    // reasoning_format none: no think block may open
    const { log } = await logOf({ messages, tool_choice: 'required', reasoning_format: 'none' });
    assert.deepEqual(log.match(CONSTRAINED).slice(1, 3), ['hermes', 'none']);
  });

  test('never a 400 for it: an unknown name, a schema the compiler refuses, "auto"', async () => {
    let { r, log } = await logOf({ messages, tool_choice: { type: 'function', function: { name: 'nope' } } });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.match(log, /tool_choice not enforced: no tool named 'nope'/);
    assert.doesNotMatch(log, CONSTRAINED);
    const odd = [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object',
      properties: { tz: { type: 'string', pattern: '(?=[A-Z])' } } } } }];
    ({ r, log } = await logOf({ messages, tools: odd, tool_choice: 'required' }));
    assert.equal(r.choices[0].message.tool_calls[0].function.name, 'get_time');
    assert.deepEqual(log.match(CONSTRAINED).slice(1, 5), ['hermes', 'optional', '1', '1']);
    ({ log } = await logOf({ messages, tool_choice: 'auto' }));
    assert.doesNotMatch(log, CONSTRAINED);
  });
});

// response_format after a think block (docs/API.md "Reasoning before a
// constrained answer"): the sim writes the reply a reasoning model would
// (its tokens are forced, so the mask is not what is tested here: the
// engine suites test_engine_think / test_think_block do that), and the
// server must split it into reasoning_content and a content that is the
// JSON document, streamed and not; the debug log says which think block
// the sampler allows (the same rule as tool_choice's grammar).
describe('response_format with reasoning: reasoning_content, then content that is the JSON', () => {
  const DOC = { city: 'Paris', temp_c: 21.5, tags: ['sunny', '{not } a </think> tag'] };
  const REPLY = `<think>\nThe user wants JSON; "{" is not the answer yet.\n</think>\n\n${JSON.stringify(DOC, null, 1)}`;
  const schema = { type: 'object', properties: { city: { type: 'string' }, temp_c: { type: 'number' },
    tags: { type: 'array', items: { type: 'string' } } }, required: ['city', 'temp_c', 'tags'],
    additionalProperties: false };
  const formats = [
    { type: 'json_schema', json_schema: { name: 'weather', strict: true, schema } },
    { type: 'json_object' },
  ];
  const THINK = /response_format: think block (\S+) \((\S+)\) before the document/;
  let srv, client;
  before(async () => {
    srv = await startServer(['--log-level', 'debug', '--sim-decode-tps', '4000', '--sim-reply', REPLY]);
    client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await srv.stop(); });

  test('non-stream: content parses as the document, reasoning apart', async () => {
    for (const response_format of formats) {
      const before = srv.log().length;
      const r = await client.chat.completions.create({ model: 'default', messages, response_format });
      const m = r.choices[0].message;
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.equal(m.reasoning_content, 'The user wants JSON; "{" is not the answer yet.');
      assert.deepEqual(JSON.parse(m.content), DOC);
      assert.deepEqual(srv.log().slice(before).match(THINK)?.slice(1), ['optional', '<think>']);
    }
  });

  test('stream: the content deltas concatenate into the document', async () => {
    for (const response_format of formats) {
      const stream = await client.chat.completions.create({ model: 'default', messages, response_format, stream: true });
      let content = '', reasoning = '', finish = null;
      for await (const chunk of stream) {
        for (const c of chunk.choices) {
          content += c.delta?.content ?? '';
          reasoning += c.delta?.reasoning_content ?? '';
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
      assert.equal(finish, 'stop');
      assert.equal(reasoning, 'The user wants JSON; "{" is not the answer yet.');
      assert.deepEqual(JSON.parse(content), DOC);
    }
  });

  test('stop strings do not cut a constrained reply (reasoning or document); they do without response_format', async () => {
    const stop = ['sunny', 'JSON'];
    for (const response_format of formats) {
      const r = await client.chat.completions.create({ model: 'default', messages, response_format, stop });
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.deepEqual(JSON.parse(r.choices[0].message.content), DOC);
      assert.match(r.choices[0].message.reasoning_content, /JSON/);
    }
    const plain = await client.chat.completions.create({ model: 'default', messages, stop });
    // cut at "JSON", inside the think block: all reasoning, no content
    assert.equal(plain.choices[0].finish_reason, 'stop');
    assert.equal(plain.choices[0].message.reasoning_content, 'The user wants');
    assert.equal(plain.choices[0].message.content, '');
  });

  test('the think block follows the prompt; none with reasoning_format "none" or on /v1/completions', async () => {
    const cases = [
      ['think first <think>\n', ['open', '<think>']],
      ['no thinking <think>\n\n</think>\n\n', ['none', '<think>']],
      // the sim's words are tokens, "<think>" and "[THINK]" alike: Magistral's either spelling
      ['[INST]x[/INST]', ['optional', '<think>|[THINK]']],
      ['<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nweather?', ['none', '<think>']],
    ];
    const response_format = formats[0];
    for (const [content, want] of cases) {
      const before = srv.log().length;
      await client.chat.completions.create({ model: 'default', messages: [{ role: 'user', content }], response_format });
      assert.deepEqual(srv.log().slice(before).match(THINK)?.slice(1), want, content);
    }
    let before = srv.log().length;
    const r = await client.chat.completions.create({ model: 'default', messages, response_format, reasoning_format: 'none' });
    assert.deepEqual(srv.log().slice(before).match(THINK)?.slice(1), ['none', '<think>']);
    assert.equal(r.choices[0].message.reasoning_content, undefined);
    assert.ok(r.choices[0].message.content.startsWith('<think>'));   // the raw text, as before
    before = srv.log().length;
    await client.completions.create({ model: 'default', prompt: 'x', response_format });
    assert.doesNotMatch(srv.log().slice(before), THINK);
    // tool_choice takes the place of response_format: its grammar has the think block
    before = srv.log().length;
    await client.chat.completions.create({ model: 'default', messages, response_format, tools, tool_choice: 'required' });
    assert.doesNotMatch(srv.log().slice(before), THINK);
  });
});

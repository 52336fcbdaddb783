// templates.test.mjs -- chat templates on the running server, a synthetic
// tiny model on the CPU backend (docs/TEMPLATES.md):
//   - --chat-template-file: a template no C renderer knows (DeepSeek-R1's
//     shape: the generation prompt opens a think block) renders through the
//     Jinja interpreter, as /apply-template shows;
//   - --reasoning-budget 0: that open think block is closed ("</think>"),
//     by /apply-template and by chat alike (chat's prompt_tokens are the
//     tokens of /apply-template's prompt);
//   - chat_template_kwargs reach the template as variables;
//   - /apply-template's add_generation_prompt false leaves the turn out;
//   - a template file that does not parse stops the server, naming the line;
//     an unknown --chat-template name lists the built-in ones.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STRATA_BIN, postJSON, startTinyModel } from './lib/server.mjs';

const R1_LIKE =
  "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}" +
  "{% endfor %}{% if greeting is defined %}{{ greeting }}{% endif %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}\n";

describe('a Jinja template from --chat-template-file, thinking off by --reasoning-budget 0', () => {
  let srv, dir, tdir;
  before(async () => {
    tdir = mkdtempSync(join(tmpdir(), 'strata-e2e-tpl-'));
    writeFileSync(join(tdir, 'r1.jinja'), R1_LIKE);
    ({ srv, dir } = await startTinyModel('strata-e2e-templates-', 5, 1024,
      ['--chat-template-file', join(tdir, 'r1.jinja'), '--reasoning-budget', '0']));
  });
  after(async () => {
    await srv?.stop();
    for (const d of [dir, tdir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  const messages = [{ role: 'user', content: 'hi' }];

  test('/apply-template renders the file, its think block closed', async () => {
    const r = await postJSON(srv, '/apply-template', { model: 'tiny', messages });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.prompt, '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n</think>');
    const kw = await postJSON(srv, '/apply-template', { model: 'tiny', messages,
      chat_template_kwargs: { greeting: '[hello]' } });
    assert.ok(kw.json.prompt.includes('<|im_end|>\n[hello]<|im_start|>'), kw.text);
    // add_generation_prompt false: the turns only, as llama-server's
    const nogen = await postJSON(srv, '/apply-template', { model: 'tiny', messages,
      add_generation_prompt: false });
    assert.equal(nogen.json.prompt, '<|im_start|>user\nhi<|im_end|>\n', nogen.text);
  });

  test('chat reads the same prompt as /apply-template shows', async () => {
    const tpl = await postJSON(srv, '/apply-template', { model: 'tiny', messages });
    const ids = await postJSON(srv, '/tokenize', { model: 'tiny', content: tpl.json.prompt });
    const chat = await postJSON(srv, '/v1/chat/completions',
      { model: 'tiny', messages, max_tokens: 1, temperature: 0 });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.json.usage.prompt_tokens, ids.json.tokens.length);
  });
});

test('a template file that does not parse stops the server, naming the line', () => {
  const tdir = mkdtempSync(join(tmpdir(), 'strata-e2e-tpl-bad-'));
  try {
    writeFileSync(join(tdir, 'bad.jinja'), '{% for m in messages %}\n{{ m.content }}\n{% endfro %}');
    const r = spawnSync(STRATA_BIN, ['serve', '--backend', 'sim', '--port', '0',
      '--chat-template-file', join(tdir, 'bad.jinja')], { encoding: 'utf8', timeout: 15000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr + r.stdout, /bad\.jinja: chat template: line 3, column 4: unknown tag 'endfro'/);
    const u = spawnSync(STRATA_BIN, ['serve', '--backend', 'sim', '--port', '0',
      '--chat-template', 'nosuch'], { encoding: 'utf8', timeout: 15000 });
    assert.notEqual(u.status, 0);
    assert.match(u.stderr + u.stdout, /not a built-in template \(chatml, qwen3/);
  } finally {
    rmSync(tdir, { recursive: true, force: true });
  }
});

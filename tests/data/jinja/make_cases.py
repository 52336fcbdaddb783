#!/usr/bin/env python3
"""Writes cases.json: each construct of the interpreter, rendered by
Python's jinja2 in Hugging Face's environment (hf_env.py). The unit suite
tests/unit/test_jinja.c renders each with Strata's interpreter and
compares; a case Python rejects must fail in Strata too.
Run: python3 tests/data/jinja/make_cases.py (needs python3-jinja2)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_env import env  # noqa: E402

MSGS = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": {"city": "Paris", "days": 3}}}]},
        {"role": "tool", "content": "sunny"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}}]
CTX = {"messages": MSGS, "tools": TOOLS, "add_generation_prompt": True, "bos_token": "<s>",
       "eos_token": "</s>", "n": 7, "f": 2.5, "s": "  Hello World  ", "none": None,
       "flag": False, "d": {"b": 2, "a": 1}, "l": [3, 1, 2], "u": "héllo wörld"}

CASES = [
    # text, output, whitespace control, trim_blocks / lstrip_blocks
    "plain text",
    "{{ 'a' }}{{ \"b\" }}{{ 1 }}{{ 2.5 }}{{ true }}{{ none }}{{ undefined_name }}",
    "a  {{- ' b ' -}}  c",
    "line1\n  {% if true %}\n  yes\n  {% endif %}\nend",
    "x {%- if true %} y {% endif -%} z",
    "{% if true %}A{% endif %}\n{% if true %}B{% endif %}\n",
    "  {# comment #}\nafter",
    "{%+ if true %}keep{% endif %}",
    "a\n    {{ 'var' }}\n    {% set q = 1 %}\nb",
    "{% for m in messages %}\n  {{ m.role }}\n{% endfor %}",
    # if / elif / else
    "{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}",
    "{% if none %}a{% elif flag %}b{% else %}c{% endif %}",
    "{% if not flag and n == 7 or false %}yes{% endif %}",
    # for
    "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
    "{% for x in [] %}never{% else %}empty{% endfor %}",
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k in d %}{{ k }}{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}:{{ m.role }} {% endfor %}",
    "{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}",
    "{% for x in range(2, 10, 3) %}{{ x }},{% endfor %}{% for x in range(3, 0, -1) %}{{ x }}{% endfor %}",
    "{% for c in 'abc' %}{{ c }}-{% endfor %}",
    "{% for x in l %}{{ loop.revindex }}{{ loop.cycle('a', 'b') }}{% endfor %}",
    "{% for x in l %}{% if not loop.first %}{{ loop.previtem }}{% endif %}{% if not loop.last %}{{ loop.nextitem }}{% endif %};{% endfor %}",
    "{% for a in [1, 2] %}{% for b in [3, 4] %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %}",
    # set, scoping, namespace
    "{% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}",
    "{% set ns = namespace(x=1, found=false) %}{% for i in l %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}{{ ns.found }}",
    "{% set a, b = [1, 2] %}{{ a }}{{ b }}",
    "{% set block %}inner {{ n }}{% endset %}[{{ block }}]",
    "{% set ns = namespace(d={}) %}{{ ns.d }}",
    # macros
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }} {{ greet(name='Cy') }}",
    "{% macro rec(k) %}{% if k > 0 %}{{ k }}{{ rec(k - 1) }}{% endif %}{% endmacro %}{{ rec(4) }}",
    "{% macro m() %}{{ n }}{% endmacro %}{% set n = 8 %}{{ m() }}",
    # expressions
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 4 / 2 }}",
    "{{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ [1] + [2] }}",
    "{{ 1 < 2 }} {{ 'a' < 'b' }} {{ 2 >= 2 }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ [1, 2] == [1, 2] }}",
    "{{ 'ell' in 'hello' }} {{ 2 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ not 'x' in 'abc' }}",
    "{{ 'yes' if n > 3 else 'no' }} {{ 'yes' if flag else 'no' }}[{{ 'x' if flag }}]",
    "{{ l[0] }} {{ l[-1] }} {{ l[5] }} {{ d['a'] }} {{ d.b }} {{ messages[1]['content'] }} {{ s[2] }}",
    "{{ l[::-1] }} {{ l[1:] }} {{ l[:2] }} {{ 'abcdef'[1:4] }} {{ 'abcdef'[::2] }} {{ u[::-1] }} {{ l[-2:] }}",
    "{{ [1, 'a', none, true, 2.5, [3], {'k': 'v'}] }} {{ d }} {{ (1, 2) }}",
    "{{ 'it\\'s' }} {{ \"q\\\"d\" }} {{ 'tab\\tnew\\nline' }} {{ 'a' 'b' }} {{ ['it\\'s'] }}",
    "{{ messages[2].tool_calls[0].function.arguments.city }}",
    "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 3.0 * 2 }} {{ -0.5 }} {{ 10 / 4 }}",
    "{{ none is none }} {{ n is number }} {{ s is string }} {{ d is mapping }} {{ l is iterable }} {{ l is sequence }} {{ undefined_x is defined }} {{ undefined_x is undefined }} {{ n is not none }}",
    "{{ true is true }} {{ flag is false }} {{ n is integer }} {{ f is float }} {{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ n is equalto 7 }} {{ n is eq(7) }} {{ 'abc' is lower }} {{ 'ABC' is upper }}",
    # str methods
    "[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\\n a \\n'.strip() }}]",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a<think>b</think>c'.split('</think>')[-1] }}",
    "{{ s.startswith('  H') }} {{ s.endswith('x') }} {{ 'abc'.startswith(('x', 'a')) }} {{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}",
    "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.find('c') }} {{ 'abc'.find('z') }} {{ 'a-b-c'.count('-') }} {{ '-'.join(['x', 'y']) }}",
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}",
    # filters
    "{{ l | length }} {{ s | length }} {{ d | length }} {{ u | length }} {{ messages | count }}",
    "[{{ s | trim }}] {{ s | upper }} {{ s | lower }} {{ 'hello' | capitalize }} {{ 'a b' | title }} {{ 'aXa' | replace('a', 'b') }}",
    "{{ l | join(', ') }} {{ l | join }} {{ messages | map(attribute='role') | join(',') }} {{ l | first }} {{ l | last }} {{ 'xyz' | first }}",
    "{{ undefined_x | default('dflt') }} {{ none | default('dflt') }} {{ '' | default('dflt', true) }} {{ n | d(3) }}",
    "{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='role') | list }} {{ messages | selectattr('tool_calls', 'defined') | list | length }} {{ messages | selectattr('tool_calls') | list | length }}",
    "{{ [1, 0, 2, none] | select | list }} {{ [1, 2, 3, 4] | reject('odd') | list }} {{ ['a', 'b'] | map('upper') | list }}",
    "{{ tools | tojson }}",
    "{{ tools[0] | tojson(indent=2) }}",
    "{{ {'b': 1, 'a': [1, 2, {}], 'c': 'é\\n\"'} | tojson }} {{ d | tojson(sort_keys=true) }} {{ none | tojson }} {{ 'x' | tojson }} {{ 2.5 | tojson }} {{ [] | tojson(indent=4) }}",
    "{{ n | string }}{{ (n | string) ~ 'x' }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ 2.7 | int }} {{ '2.5' | float }} {{ 3 | float }} {{ -3 | abs }}",
    "{{ d | items | list }} {{ d | dictsort }} {{ l | reverse | list }} {{ [1, 2, 1, 3] | unique | list }} {{ 'abc' | reverse }} {{ 'safe' | safe }}",
    "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(4, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'x\\ny' | indent('> ') }}",
    "{% filter upper %}shout {{ n }}{% endfilter %}",
    "{{ messages | map(attribute='missing', default='?') | join }}",
    # globals
    "{{ bos_token }}{% for m in messages %}{{ m.role }}{% endfor %}{% if add_generation_prompt %}<gen>{% endif %}{{ eos_token }}",
    "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    # dict keys keep their type (Seed-OSS's budget table): ints order as numbers, 512 and '512'
    # are two keys, 1, 1.0 and True one; json.dumps writes int keys as strings
    "{{ {0: 0, 512: 128, 'a': 1, 2.5: none, none: 'n', (1, 2): 't'} }}",
    "{% for k, v in {16384: 1024, 0: 0, 1024: 256, 512: 128, 2048: 512} | dictsort %}{{ k }}:{{ v }},{% endfor %}",
    "{% for k, v in {'b': 1, 'B': 2, 'a': 3} | dictsort %}{{ k }}{{ v }}{% endfor %}",
    "{{ {'a': 3, 'b': 1, 'c': 2, 'd': 1} | dictsort(by='value') }} {{ {'a': 3, 'b': 1, 'c': 2, 'd': 1} | dictsort(by='value', reverse=true) }}",
    "{{ {512: 1, 0: 2, 16384: 3} | dictsort(reverse=true) }} {{ {'b': 'X', 'a': 'y', 'c': 'x'} | dictsort(false, 'value') }} {{ {'b': 'X', 'a': 'y', 'c': 'x'} | dictsort(true, 'value', true) }}",
    "{{ {} | dictsort(by='value') }}",
    "{% set b = {0: 0, 512: 128, 16384: 1024} %}{{ b[16384] }} {{ b[512] }} [{{ b['512'] }}] {{ b.get(512) }} {{ b.get('512', 'none') }} {{ b[512.0] }} {{ b[true] }} {{ b[-1] }}",
    "{% set b = {0: 0, 512: 128} %}{{ 512 in b }} {{ '512' in b }} {{ 512 not in b }} {{ 1 in {true: 'x'} }} {{ 1.0 in {1: 2} }} {{ none in {none: 1} }} {{ (1, 2) in {(1, 2): 0} }} {{ 512 is in b }}",
    "{% set b = {0: 0, 512: 128} %}{{ b.items() | list }} {{ b.keys() | list }} {{ b.values() | list }} {{ b | items | list }} {% for k in b %}{{ k + 1 }},{% endfor %}{% for k, v in b.items() %}{{ k * 2 }}={{ v }};{% endfor %} {{ b | list }} {{ b | first }}",
    "{% set b = {0: 0, 512: 128} %}{{ b | tojson }} {{ {1.5: none, false: 1, none: 0, 'k': {2: [3]}} | tojson }} {{ {1024: 1, 3: 2, 512: 0} | tojson(sort_keys=true) }} {{ {2: 'x'} | tojson(indent=2) }}",
    "{{ {1: 'int', '1': 'str'} }} {{ {1: 'int', '1': 'str'} | length }} {{ {1: 'a', 1.0: 'b', true: 'c'} }} {{ {1: 'int', '1': 'str'}['1'] }} {{ {1: 'int', '1': 'str'}[1] }}",
    "{% set ns = namespace(i=none) %}{% for k, v in {0: 0, 512: 128, 1024: 256, 16384: 1024} | dictsort %}{% if ns.i is none and 600 <= k %}{% set ns.i = v %}{% endif %}{% endfor %}{{ ns.i }}",
    "{{ dict({1: 2}, a=3) }} {{ namespace(d={1: 2}).d[1] }} {{ {1: 2} == {1.0: 2} }} {{ {1: 2} == {'1': 2} }} {{ {-3: 1, 3: 2} | dictsort }}",
    # errors Python raises too
    "{{ raise_exception('bad role') }}",
    "{{ 1 / 0 }}",
    "{{ 'a' < 1 }}",
    "{{ undefined_fn() }}",
    "{% for x in none %}{% endfor %}",
    "{{ 'a' - 1 }}",
    "{{ {1: 1, 'a': 2} | dictsort }}",
    "{{ {'a': 1} | dictsort(by='size') }}",
    "{{ {} | dictsort(by='size') }}",
    "{{ {'a': 1, 'b': 'x'} | dictsort(by='value') }}",
    "{{ {[1]: 2} }}",
    "{{ {1: 1, 'a': 2} | tojson(sort_keys=true) }}",
    "{{ {(1, 2): 1} | tojson }}",
    "{{ [1] in {1: 2} }}",
]


def main():
    e = env()
    out = []
    for t in CASES:
        case = {"template": t}
        try:
            case["output"] = e.from_string(t).render(**CTX)
        except Exception as ex:  # noqa: BLE001 -- any rejection is an expected failure
            case["error"] = type(ex).__name__
        out.append(case)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"context": CTX, "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

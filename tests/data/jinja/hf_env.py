"""The Jinja environment Hugging Face's apply_chat_template renders with
(transformers/utils/chat_template_utils.py): trim_blocks, lstrip_blocks,
loopcontrols, tojson with ensure_ascii=False, raise_exception and
strftime_now. make_cases.py and make_golden.py render with it to produce
the expected outputs the C tests compare against."""
import json
from datetime import datetime

from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                      separators=separators, sort_keys=sort_keys)


def _raise(message):
    raise Exception(message)


class _Generation(Extension):
    """{% generation %}...{% endgeneration %}: transformers' AssistantTracker
    marks assistant text with it; rendering, it is its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    @staticmethod
    def _body(caller):
        return caller()


def env():
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                      extensions=[loopcontrols, _Generation])
    e.filters["tojson"] = _tojson
    e.globals["raise_exception"] = _raise
    e.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return e

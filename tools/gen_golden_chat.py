#!/usr/bin/env python3
"""Golden outputs for nib's chat templates, rendered by the reference: jinja2
configured exactly as Hugging Face transformers' apply_chat_template does it
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its
tojson override, raise_exception and strftime_now globals; variables
messages, add_generation_prompt, bos/eos tokens, tools=None, documents=None).

Writes into tests/golden/chat/ (tests/test_chat_template.c reads them):
  <template>.jinja          the templates (input; smollm2's is re-extracted
                            from its GGUF when the model file is present)
  templates.txt             name, bos and eos token of each template, and the
                            fixed strftime_now time
  cases.txt                 the conversations (length-prefixed records)
  <template>.<case>.txt     expected output, byte for byte
  <template>.<case>.err     or: jinja2 raised; its message (nib must fail too)
  micro.txt                 small feature templates and their outputs/errors

Usage: python3 tools/gen_golden_chat.py   (needs jinja2: pip install jinja2;
       the gguf package only to refresh smollm2.jinja from the model)
"""
import json
import os
import sys
from datetime import datetime, timezone

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "golden", "chat")
NOW = 1736899200  # 2025-01-15 00:00:00 UTC: the clock strftime_now sees

# name, bos_token, eos_token (the models' special tokens)
TEMPLATES = [
    ("smollm2", "<|im_start|>", "<|im_end|>"),
    ("qwen2.5", "", "<|im_end|>"),
    ("qwen3", "", "<|im_end|>"),
    ("llama3.2", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3.3", "<|begin_of_text|>", "<|eot_id|>"),
    ("gemma3", "<bos>", "<eos>"),
    ("builtin_chatml", "", "<|im_end|>"),
    ("builtin_gemma", "<bos>", "<eos>"),
    ("builtin_llama3", "<|begin_of_text|>", "<|eot_id|>"),
]

CONVERSATIONS = [
    ("user1", [("user", "Hello!")]),
    ("sys_user", [("system", "You are a helpful assistant."), ("user", "What is the capital of France?")]),
    ("multi", [("system", "You are terse."), ("user", "Hi"), ("assistant", "Hello! How can I help?"),
               ("user", "Tell me a joke.")]),
    ("multi_nosys", [("user", "2+2?"), ("assistant", "4"), ("user", "And 3+3?")]),
    ("special", [("system", "  Be careful with \"quotes\" and 'apostrophes'.\n"),
                 ("user", "Line one\nLine two\n\ttabbed \\ backslash {{ not a tag }} {% neither %}"),
                 ("assistant", "Unicode: é ü ñ 日本語 🙂 — “curly”\r\nCRLF"),
                 ("user", "   padded   ")]),
    ("think", [("user", "Solve x+1=2"), ("assistant", "<think>\nx = 1 because 1+1=2.\n</think>\n\nx = 1"),
               ("user", "Thanks! And x+2=5?")]),
    ("assistant_last", [("user", "hi"), ("assistant", "  hello  ")]),
    ("empty_content", [("user", "")]),
    ("system_only", [("system", "Only a system prompt.")]),
    ("no_messages", []),
    ("not_alternating", [("user", "a"), ("user", "b")]),
]


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag, minus the index bookkeeping: the
    body renders as a call block, unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    """transformers.utils.chat_template_utils._compile_jinja_template's setup."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW, tz=timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, messages, add_generation_prompt, bos, eos):
    """(output, None) or (None, error message)."""
    try:
        t = env.from_string(source)
        out = t.render(messages=messages, add_generation_prompt=add_generation_prompt, bos_token=bos,
                       eos_token=eos, tools=None, documents=None)
        return out, None
    except Exception as e:  # noqa: BLE001 - any failure is a golden "err"
        return None, f"{type(e).__name__}: {e}"


def record(tag, data):
    b = data.encode("utf-8")
    return f"{tag} {len(b)}\n".encode() + b + b"\n"


# Small templates, one feature (or one corner of jinja2 semantics) each.
MICRO = [
    # whitespace control, trim_blocks, lstrip_blocks, comments, raw
    "a  {%- if true %} b {% endif -%}  c",
    "  {% if true %}\n  x\n  {% endif %}\n  y",
    "a\n  {#- c #}\n  b",
    "a\n  {# c #}\n  b\n",
    "{% if true +%}\nkeep{%+ endif %}|",
    "a {{- ' b ' -}} c",
    "x\n{{ 1 }}\ny\n\n",
    "{% raw %}{{ not evaluated }}{% endraw %}",
    "line\r\nnext\rlast\n",
    "{#- lead #}\n{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n",
    # literals and printing
    "{{ 'a\\tb\\n\\x41\\u00e9\\\\\\'' }}|{{ \"dq\" 'sq' }}",
    "{{ 1 }} {{ -2 }} {{ 1.5 }} {{ 2.0 }} {{ 1e20 }} {{ 1e-7 }} {{ 0.1 + 0.2 }} {{ 1_000 }} {{ 123456789.123 }}",
    "{{ true }} {{ false }} {{ none }} {{ True }} {{ None }}",
    "{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v', 'n': [1]} }} {{ (1, 'x') }} {{ (1,) }} {{ [] }} {{ {} }}",
    "{{ ['it\\'s', \"q\\\"\", 'tab\\t', 'é'] }}",
    # arithmetic and operators
    "{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}",
    "{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} {{ [1] + [2, 3] }} {{ [0] * 3 }} {{ 1 + 2 * 3 - 4 }}",
    "{{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 5 }} {{ 'abc' < 'abd' }} {{ [1, 2] < [1, 3] }}",
    "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ not 1 in [1] }}",
    "{{ 1 and 'x' }}|{{ 0 and 'x' }}|{{ '' or 'y' }}|{{ none or 0 }}|{{ not '' }}",
    "{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'x' if false }}]",
    "{{ -(3) }} {{ +4 }} {{ -1.5 | abs }} {{ (1 + 2) * 3 }}",
    # variables, attributes, items, slices
    "{{ messages[0].role }} {{ messages[0]['content'] }} {{ messages[-1].role }} [{{ messages[9] }}] [{{ messages[0].nope }}]",
    "{{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ 'hello'[-2:] }} {{ [1,2,3,4][::2] }} {{ [1,2,3][5:] }} {{ 'héllo'[1] }} {{ 'héllo'[:2] }}",
    "{{ messages[1:] | length }} {{ messages[::-1][0].role }} {{ (1,2,3)[1:] }}",
    "[{{ undefined_var }}] {{ undefined_var is defined }} {{ undefined_var | default('dflt') }}",
    "{{ undefined_var.attr }}",
    "{{ none.attr is defined }} {{ 5.x is defined }}",
    # statements
    "{% for m in messages %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}{% if not loop.last %}, {% endif %}{% endfor %}",
    "{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.index0 }}{{ loop.revindex }}{% else %}none{% endfor %}",
    "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}",
    "{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }};{% endfor %}{% for k in {'x': 1} %}{{ k }}{% endfor %}",
    "{% for c in 'hé!' %}[{{ c }}]{% endfor %}",
    "{% for i in range(3) %}{% for j in range(2) %}{{ i }}{{ j }}{{ loop.depth }} {% endfor %}{% endfor %}",
    "{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}|{{ loop.cycle('a', 'b') }} {% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
    "{% for i in range(3) %}{% if i == 0 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}",
    "{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (3, 4) %}{% set c, d = t %}{{ c }}{{ d }}",
    "{% set block %}inside {{ 1 + 1 }}{% endset %}[{{ block }}]",
    "{% if false %}a{% elif 0 %}b{% elif 'x' %}c{% else %}d{% endif %}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', punct='?') }} {{ greet(name='Cy') }}",
    "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(4) }}",
    "{% generation %}gen {{ 1 }}{% set inner = 1 %}{% endgeneration %}[{{ inner }}]",
    # filters
    "[{{ '  x y  ' | trim }}] [{{ 'xxhixx' | trim('x') }}] [{{ none | trim }}] {{ 'abc' | upper }} {{ 'ÀBÇ' | lower }} {{ 'hello world' | capitalize }} {{ 'hello big-world (x)' | title }}",
    "{{ 'abc' | length }} {{ 'héllo' | length }} {{ [1, 2] | count }} {{ {'a': 1} | length }} {{ undefined_var | length }}",
    "{{ [3, 1, 2] | first }} {{ [3, 1, 2] | last }} {{ 'xyz' | first }} [{{ [] | first }}] {{ [1, 2, 3] | join(', ') }} {{ ['a', 'b'] | join }}",
    "{{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '.') }} {{ 42 | string }} {{ [1] | string }}",
    "{{ x | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }} {{ none | d('d', boolean=true) }}",
    "{{ {'b': 1, 'a': [1, 2.5, 'é\"\\n'], 'c': none, 'd': true} | tojson }}",
    "{{ [1, {'a': [], 'b': {}}, 'x'] | tojson(indent=2) }}",
    "{{ messages | tojson }}",
    "{{ 'x' | tojson }} {{ 1.0 | tojson }} {{ none | tojson }} {{ (1, 2) | tojson }}",
    "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}",
    "{{ [1, 2, 2, 'a', 'A'] | unique | list }} {{ [1, 5, 3] | max }} {{ [4, 2, 8] | min }} {{ [1, 2, 3] | sum }}",
    "{{ messages | map(attribute='role') | join(',') }} {{ ['a', 'b'] | map('upper') | list }}",
    "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('odd') | list }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}",
    "{{ ['a', 'code_interpreter', 'b'] | reject('equalto', 'code_interpreter') | join(', ') }}",
    "{{ '3' | int + 1 }} {{ '2.5' | float }} {{ 'x' | int }} {{ 3.9 | int }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 2.1 | round(method='ceil') }}",
    "{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'x\\n' | indent }}",
    "{{ {'b': 2, 'a': 1} | dictsort }} {{ {'a': 1} | items | list }} {{ 'ab' | list }}",
    # tests
    "{{ 1 is number }} {{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 'a' is sequence }} {{ none is none }}",
    "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(2) }} {{ 'a' is in 'abc' }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 1 is lt(0) }}",
    "{{ 'abc' is lower }} {{ 'ABC' is upper }} {{ x is undefined }} {{ 1 is not none }} {{ true is sameas true }} {{ range is callable }}",
    "{{ strftime_now is defined }} {{ raise_exception is defined }} {{ tools is none }} {{ documents is none }} {{ bos_token }}|{{ eos_token }}",
    # methods
    "[{{ '  a b  '.strip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '  a'.lstrip() }}] [{{ 'a\\n\\n'.rstrip('\\n') }}]",
    "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'a'.endswith('abc') }}",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  a  b  '.rsplit(none, 1) }}",
    "{{ '<think>x</think>\\n\\nanswer'.split('</think>')[-1].lstrip('\\n') }}|{{ 'a</think>b'.split('</think>')[0] }}",
    "{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'a-b'.replace('-', '_') }}",
    "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }}",
    "{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b') }} {{ {'a': 1}.get('b', 2) }} {{ {'a': 1, 'b': 2}.items() | list }} {{ {'a': 1}.keys() | list }} {{ {'a': 1}.values() | list }}",
    "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ '  '.isspace() }} {{ 'x1'.isalnum() }} {{ [1, 2, 1].count(1) }} {{ [5, 6].index(6) }}",
    "{{ 'prefix-x'.removeprefix('prefix-') }} {{ 'x.txt'.removesuffix('.txt') }}",
    # functions
    "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    "{{ strftime_now('%Y-%m-%d %H:%M') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %B %j') }}",
    # errors (jinja2 fails; nib must too)
    "{{ 'a' + 1 }}",
    "{{ 1 / 0 }}",
    "{{ undefined_var + 1 }}",
    "{{ raise_exception('custom failure') }}",
    "{% if true %}unclosed",
    "{% endif %}",
    "{{ x | nosuchfilter }}",
    "{% if false %}{{ x | nosuchfilter }}{{ x is nosuchtest }}{% endif %}ok",
    "{{ x | nosuchfilter if false else 1 }} {{ 2 if true else x | nosuchfilter }}",
    "{% if true %}{{ x | nosuchfilter }}{% endif %}",
    "{% for i in [] %}{{ x | nosuchfilter }}{% endfor %}ok",
    "{% if 1 if true else 0 %}x{% endif %}",
    "{% if false %}{% for i in [] %}{{ x | nosuchfilter }}{% endfor %}{% endif %}ok",
    "{% if false %}{% for i in [] %}{% else %}{{ x | nosuchfilter }}{% endfor %}{% endif %}ok",
    "{{ 2.0 is even }} {{ 3.0 is odd }} {{ true | round }} {{ 7 | round(1) }}",
    "{% set x = 1.5 %}{{ x[1:] }}",
    "{{ none | select | list }} {{ '' | map('upper') | list }}",
    "{{ x is nosuchtest }}",
    "{% nosuchtag %}",
    "{{ 'abc'.nosuchmethod() }}",
    "{{ (1, 2",
    "{{ 1 }",
    "{% for %}",
    "{% set ns = namespace(a=1) %}{% set other = 1 %}{% set other.a = 2 %}",
    "{{ 1 < 'a' }}",
    "{{ nosuchfunc(1) }}",
    "{% break %}",
    "{{ 'unterminated }}",
]


def main():
    os.makedirs(OUT, exist_ok=True)
    env = make_env()

    smol_gguf = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if os.path.exists(smol_gguf):
        try:
            import gguf  # only to refresh the SmolLM2 template from the model file
            r = gguf.GGUFReader(smol_gguf)
            f = r.fields["tokenizer.chat_template"]
            with open(os.path.join(OUT, "smollm2.jinja"), "wb") as fh:
                fh.write(bytes(f.parts[f.data[0]]))
        except ImportError:
            print("gguf package missing: keeping smollm2.jinja as is", file=sys.stderr)

    with open(os.path.join(OUT, "templates.txt"), "w") as fh:
        fh.write("# generated by tools/gen_golden_chat.py; do not edit\n")
        fh.write(f"now\t{NOW}\n")
        for name, bos, eos in TEMPLATES:
            fh.write(f"{name}\t{bos}\t{eos}\n")

    with open(os.path.join(OUT, "cases.txt"), "wb") as fh:
        fh.write(b"# generated by tools/gen_golden_chat.py; do not edit\n")
        fh.write(b"# case NAME ADD_GENERATION_PROMPT N_MESSAGES, then per message: role LEN, content LEN\n")
        for conv, msgs in CONVERSATIONS:
            for gp in (0, 1):
                fh.write(f"case {conv}.{'gp' if gp else 'nogp'} {gp} {len(msgs)}\n".encode())
                for role, content in msgs:
                    fh.write(record("role", role))
                    fh.write(record("content", content))

    # stale outputs from removed cases must not linger
    for fn in os.listdir(OUT):
        if fn.endswith(".txt") and fn.count(".") >= 2 or fn.endswith(".err"):
            if fn not in ("templates.txt", "cases.txt", "micro.txt"):
                os.remove(os.path.join(OUT, fn))

    n_ok = n_err = 0
    for name, bos, eos in TEMPLATES:
        with open(os.path.join(OUT, name + ".jinja"), encoding="utf-8") as fh:
            source = fh.read()
        for conv, msgs in CONVERSATIONS:
            for gp in (0, 1):
                case = f"{conv}.{'gp' if gp else 'nogp'}"
                messages = [{"role": r, "content": c} for r, c in msgs]
                out, err = render(env, source, messages, bool(gp), bos, eos)
                base = os.path.join(OUT, f"{name}.{case}")
                if err is None:
                    with open(base + ".txt", "wb") as fh:
                        fh.write(out.encode("utf-8"))
                    n_ok += 1
                else:
                    with open(base + ".err", "wb") as fh:
                        fh.write(err.encode("utf-8") + b"\n")
                    n_err += 1

    sys_user = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is the capital of France?"}]
    with open(os.path.join(OUT, "micro.txt"), "wb") as fh:
        fh.write(b"# generated by tools/gen_golden_chat.py; do not edit\n")
        fh.write(b"# tmpl LEN / out LEN or err LEN; rendered with the sys_user messages, "
                 b"add_generation_prompt=true, bos_token=<s>, eos_token=</s>\n")
        for src in MICRO:
            out, err = render(env, src, sys_user, True, "<s>", "</s>")
            fh.write(record("tmpl", src))
            fh.write(record("out", out) if err is None else record("err", err))
    print(f"{n_ok} outputs, {n_err} expected errors, {len(MICRO)} micro cases -> {OUT}")


if __name__ == "__main__":
    main()

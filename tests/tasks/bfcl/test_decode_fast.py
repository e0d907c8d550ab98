"""The exact shortcuts of the Python prompt decoder (``decode_python.fast_decode_python`` and
``decode_python.holds_no_call``) against the general path (the stdlib parser) and the official
decoder, on fuzzed texts built around the edges of the shortcuts' grammar."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import official_oracle as oracle  # noqa: E402
from bfcl_prompt_text import calls_to_prompt_text  # noqa: E402
from test_decode import PY_AST, RELEVANCE, canon, gt_calls, ours  # noqa: E402

from assay.tasks.bfcl import decode as D  # noqa: E402
from assay.tasks.bfcl import decode_python as P  # noqa: E402

needs_oracle = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


def general(text: str) -> tuple[bool, Any]:
    """The decoder without its shortcuts: bracketing, the parser, the resolution rules."""
    try:
        return True, P.decode_python(D._bracketed(text))
    except Exception:  # decode_prompt turns every failure of this path into DecodeError
        return False, None


def path_of(text: str) -> str:
    """Which way decode_prompt decides ``text``: "fast", "no_call" or "parser"."""
    source = D._bracketed(text)
    if P.fast_decode_python(source) is not None:
        return "fast"
    return "no_call" if P.holds_no_call(source) else "parser"


def compare(texts: list[str]) -> dict[str, int]:
    """Every text decodes the same three ways; returns how many each path decided."""
    bad = []
    paths = {"fast": 0, "no_call": 0, "parser": 0}
    for text in texts:
        path = path_of(text)
        paths[path] += 1
        mine, slow = ours(text, "python"), general(text)
        theirs = oracle.official_decode_raw(text, "python")
        got = [(ok, canon(value) if ok else None) for ok, value in (mine, slow, theirs)]
        if not got[0] == got[1] == got[2]:
            bad.append(f"{text!r} [{path}]: ours={mine} parser={slow} official={theirs}")
    assert not bad, f"{len(bad)}/{len(texts)} disagree, e.g.\n" + "\n".join(bad[:10])
    return paths


# --------------------------------------------------------------------------------------
# pieces: mostly inside the shortcut grammar, some just outside it

NAMES = ["f", "get_weather", "a.b", "a.b.c", "math.factorial", "_x1", "A_B", "f1", "print"]
ODD_NAMES = ["match", "type", "_", "__debug__", "if", "True", "None", "a.if", "a.True",
             "caf\u00e9", "a..b", "a.", "1f", "a .b", "a. b", "lambda", "x.await"]
KEYS = ["a", "x", "base", "unit", "a1", "_k"]
ODD_KEYS = ["if", "None", "True", "class", "__debug__", "match", "\u00e9", "_", "1a", "a b"]
SCALARS = ["1", "0", "-1", "-0", "10", "1.5", "-2.25", "0.0", "-0.0", "123", "True", "False",
           "None", "'x'", '"y"', "''", '""', "'a b, c'", "'\u00e9\u65e5\u672c'", "'#'", "'('",
           "')'", "'])'", "'='", "'tab\there'", "'\x1a'", "'\x7f'", '"it\'s"', "'say \"hi\"'"]
ODD_SCALARS = ["00", "01", "+5", "- 5", "--1", "1.", ".5", "1e5", "1_000", "1j", "0x1F",
               "123456789012345678", "1234567890123456789", "12345678901234567890123",
               "1.12345678901234567", "1.123456789012345678", "00.5", "-True", "not True",
               "...", "'it''s'", "'a\\'b'", "'\\d'", "'\\n'", "'nl\nx'", "'cr\rx'",
               "'nul\x00'", "'\ud800'", "u'x'", "b'x'", "f'x'", "r'x'", "'''x'''", "'x' 'y'",
               "x", "g()", "g(b=1)", "x[0]", "'open", "1if 1 else 2", "True1", "1 .5"]
CONTAINERS = ["[]", "[1, 2]", "[1,]", "['a', \"b\", None]", "[-1, -2.5]", "{}", "{'k': 1}",
              "{'k': 1,}", "{1: 'a', True: 'b'}", "{'a': 1, 'a': 2}", "[ 1 ,\n 2 ]",
              "{ 'k' :\t'v' }", "{1.0: 'x', 1: 'y'}", "[True, False, 0, -0.0]", "{None: None}"]
ODD_CONTAINERS = ["[,]", "[1 2]", "[1, [2]]", "{'k': [1]}", "{1}", "{'k'}", "{**x}", "(1, 2)",
                  "()", "[1,,2]", "{'k': 1 'j': 2}", "{'k':}", "[*x]", "{[1]: 2}",
                  "[1, +2]", "{'a': '\\x'}", "[1, 2][0]"]
SPACES = ["", "", "", " ", " ", "\n", "\t", "  "]
ODD_SPACES = ["\r", "\x0c", "\r\n", " \\\n", "\u00a0", " # c\n", "\v"]
PROSE = ["I cannot help with that using these tools.", "No function fits (sorry).",
         "Use #tag (x)", "f(a=1) is the call I would make", "Here: [f(a=1)] done", "",
         "Call f(a=1)", "(f(a=1))", "result = f(a=1)", "[f(a=1)] # done", "`f(a=1)`",
         "I'd rather not.", "The answer is 42", "f(a=1)\\", "f(a=1),", "f(a=1);", "[]",
         "[ ]", "[\n]", "[{}]", "()", "f(a=1)\n", "#", "\\", "[f(a=1)]]", "[[f(a=1)]"]


def pick(rng: random.Random, usual: list[str], odd: list[str], p_odd: float) -> str:
    return rng.choice(odd if rng.random() < p_odd else usual)


def fuzz_call(rng: random.Random, p_odd: float) -> str:
    ws = lambda: pick(rng, SPACES, ODD_SPACES, p_odd / 2)  # noqa: E731
    args = []
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4])):
        roll = rng.random()
        value = (pick(rng, CONTAINERS, ODD_CONTAINERS, p_odd) if roll < 0.25
                 else pick(rng, SCALARS, ODD_SCALARS, p_odd))
        if rng.random() < p_odd / 3:
            args.append(rng.choice([value, "**x", "*y"]))  # positional or unpacked
        else:
            args.append(f"{pick(rng, KEYS, ODD_KEYS, p_odd / 2)}{ws()}={ws()}{value}")
    body = rng.choice([",", ", ", " , ", ",\n"]).join(args)
    if args and rng.random() < 0.15:
        body += ","
    if rng.random() < p_odd / 4:
        body = rng.choice([",", ",,", body + ",,", body + " x"])
    return f"{pick(rng, NAMES, ODD_NAMES, p_odd / 2)}{ws()}({ws()}{body}{ws()})"


def fuzz_text(rng: random.Random) -> str:
    p_odd = rng.choice([0.0, 0.0, 0.05, 0.2])
    ws = lambda: pick(rng, SPACES, ODD_SPACES, p_odd / 2)  # noqa: E731
    calls = [fuzz_call(rng, p_odd) for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))]
    sep = rng.choice([", ", ",", " ,\n", ",\t"]) if rng.random() > p_odd else rng.choice(
        ["", " ", ",,", "\n", ";"])
    inner = ws() + sep.join(calls) + (rng.choice([",", " , "]) if rng.random() < 0.1 else "")
    text = f"[{inner}{ws()}]"
    roll = rng.random()
    if roll < 0.08:
        text = inner
    elif roll < 0.16:
        text = rng.choice(PROSE)
    elif roll < 0.16 + p_odd:
        text = rng.choice(["Sure: {t}", "{t} Done.", "{t})", "{t} # c", "{t}#", "{t}\\",
                           "({t})", "{t}]", "[{t}", "{t}\n{t}", "'{t}'", "```\n{t}\n```",
                           "{i} (ok)", "{t}[0]", "{t} + {t}"]).format(t=text, i=inner)
    return text


@needs_oracle
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
def test_shortcuts_agree_with_parser_and_official_on_fuzzed_texts() -> None:
    rng = random.Random(20260324)
    texts = [fuzz_text(rng) for _ in range(8000)]
    paths = compare(texts)
    # each way is exercised, so a shortcut that silently stopped working would show here
    assert paths["fast"] > 2500 and paths["no_call"] > 500 and paths["parser"] > 1500, paths


MUTATION_CHARS = "()[]{},:=.'\"\\#-+ \t\n\r\x0c\x000123456789abefjxTNFu_\u00e9\ud800"


def mutate(rng: random.Random, text: str) -> str:
    """``text`` with one to three characters inserted, deleted or replaced."""
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        roll = rng.random()
        if roll < 0.4 or i == len(text):
            text = text[:i] + rng.choice(MUTATION_CHARS) + text[i:]
        elif roll < 0.7:
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + rng.choice(MUTATION_CHARS) + text[i + 1:]
    return text


@needs_oracle
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
def test_shortcuts_agree_on_mutated_texts() -> None:
    """Texts of the fast grammar, each changed by a character or three (mostly out of it)."""
    rng = random.Random(5)
    seeds = [t for t in (fuzz_text(rng) for _ in range(3000)) if path_of(t) == "fast"]
    texts = [mutate(rng, rng.choice(seeds)) for _ in range(8000)]
    paths = compare(texts)
    assert min(paths.values()) > 800, paths


TABLE = [
    # inside the fast grammar
    ("[f(a=1)]", "fast"), ("f(a=1), g(b='x')", "fast"), ("[]", "fast"), ("", "fast"),
    ("[ \t\n]", "fast"), ("[f()]", "fast"), ("[f(a=1,)]", "fast"), ("[f(), ]", "fast"),
    ("[a.b.c (x = -0.0)]", "fast"), ("[f(a=[1, 'x', None,], b={1: 'a', True: 'b'})]", "fast"),
    ("[f(a=1, a=2)]", "fast"), ("[f(__debug__=1)]", "fast"), ("[match(case=1)]", "fast"),
    ("[f(a='\u00e9 #(')]", "fast"), ("[f(a=123456789012345678)]", "fast"),
    # outside it: the parser decides
    ("[f(a='\\d')]", "parser"), ("[f(a=+5)]", "parser"), ("[f(a=1e5)]", "parser"),
    ("[f(a=1)\r]", "parser"), ("[f(a=1) # c\n]", "parser"), ("[f(a=1) \\\n]", "parser"),
    ("[if(a=1)]", "parser"), ("[f(if=1)]", "parser"), ("[a.True(x=1)]", "parser"),
    ("[caf\u00e9(a=1)]", "parser"), ("[f(a='\ud800')]", "parser"), ("[f(a='\x00')]", "parser"),
    ("[f(1, a=2)]", "parser"), ("[f(**{'a': 1})]", "parser"), ("[f(a=x)]", "parser"),
    ("[f(a=1234567890123456789)]", "parser"), ("[\r]", "parser"), ("[\\\n]", "parser"),
    ("[f(a=1)g()]", "parser"), ("[f(a={'k': [1]})]", "parser"),
    ("Call (x)", "parser"), ("[f(a=1)]#", "parser"),
    # cannot hold a call: no parser needed
    ("I cannot help with that.", "no_call"), ("Sorry (no tool fits).", "no_call"),
    ("[f(a=1)] Done.", "no_call"), ("[f(a=1)]\n[g(b=2)]", "parser"), ("[x]", "no_call"),
    ("[f(a=1);]", "no_call"), ("'[f(a=1)]'", "no_call"), ("[f(a=1)]]", "no_call"),
    ("[f(a=1), ,]", "no_call"), ("[f(), g(]", "no_call"), ("[{}]", "no_call"), ("```python\n[f(a=1)]\n```", "parser"),
]


@needs_oracle
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
@pytest.mark.parametrize(("text", "path"), TABLE)
def test_shortcut_table(text: str, path: str) -> None:
    assert path_of(text) == path
    compare([text])


@needs_oracle
def test_ground_truth_texts_take_the_fast_path() -> None:
    """Ground-truth answers rendered as prompt text: same decode, mostly without a parse."""
    texts = []
    for category in PY_AST:
        for entry in oracle.entries(category)[1] or []:
            for k in range(2):
                texts.append(calls_to_prompt_text(gt_calls(entry["ground_truth"], k), "python"))
    paths = compare(texts)
    assert paths["fast"] > 0.8 * len(texts), paths


@needs_oracle
def test_relevance_prose_needs_no_parse() -> None:
    """The user turns of the relevance entries, taken as model output: none decodes."""
    texts = []
    for category in RELEVANCE:
        for q in oracle.entries(category)[0]:
            texts += [m["content"] for m in q["question"][0] if m["role"] == "user"]
    paths = compare(texts)
    assert paths["no_call"] > 0.6 * len(texts), paths


def test_no_call_shortcut_claims_only_failures() -> None:
    rng = random.Random(7)
    for text in [fuzz_text(rng) for _ in range(3000)] + PROSE:
        if P.holds_no_call(D._bracketed(text)):
            assert not general(text)[0], text


def test_long_texts() -> None:
    """Long inputs stay inside the grammar or leave it without backtracking blow-ups."""
    many = ", ".join(f"f{n}(a=[1, 'x', -2.5], b={{'k': None}}, c='{n}')" for n in range(3000))
    assert ours(f"[{many}]", "python") == general(f"[{many}]")
    assert path_of(f"[{many}]") == "fast"
    for broken in (f"[{many}, g(a=1]", f"[{many} x]", f"[{many}, g(a=[1, 2, 3" + " " * 5000 + "]"):
        assert ours(broken, "python") == general(broken) == (False, None)
    spaces = "[f(a=" + " " * 20000 + "1" + " " * 20000 + ", b=" + "\n" * 20000 + "2)]"
    assert ours(spaces, "python") == general(spaces) == (True, [{"f": {"a": 1, "b": 2}}])
    wide = "[f(a=[" + "1, " * 20000 + "]" + ", " * 3 + ")]"
    assert ours(wide, "python") == general(wide)

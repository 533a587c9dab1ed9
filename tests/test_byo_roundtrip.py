"""Round trip: random documents of known structure, written to MyST and to reStructuredText by
the small writer below, parse back to the same title, sections and paragraph texts (fast;
seeded, 40 documents per format)."""

from __future__ import annotations

import random

import pytest

from structablate.corpus.files import DocumentFile
from structablate.corpus.myst import parse_myst
from structablate.corpus.rst import parse_rst
from structablate.corpus.verify import verify_document

WORDS = ("alpha beta gamma delta model index query corpus token vector layer batch score "
         "rank graph node edge parse chunk span label field value table row column text "
         "window").split()


def _words(rng: random.Random, lo: int, hi: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]


# A paragraph is a list of runs (kind, text[, target]); each kind has a MyST and an rst form
# and one rendered text.
def _run(rng: random.Random):
    kind = rng.choice(["plain"] * 4 + ["emph", "strong", "code", "ref", "func"])
    w = " ".join(_words(rng, 1, 3))
    if kind == "ref":
        return kind, w, rng.choice(WORDS) + "-" + rng.choice(WORDS)
    if kind in ("func", "code"):
        return kind, rng.choice(WORDS) + "." + rng.choice(WORDS), None
    return kind, w, None


def _render(run) -> str:
    kind, text, _ = run
    return text + "()" if kind == "func" else text


def _myst_run(run) -> str:
    kind, text, target = run
    return {"plain": text, "emph": f"*{text}*", "strong": f"**{text}**",
            "code": f"`{text}`", "ref": f"{{ref}}`{text} <{target}>`",
            "func": f"{{py:func}}`{text}`"}[kind]


def _rst_run(run) -> str:
    kind, text, target = run
    return {"plain": text, "emph": f"*{text}*", "strong": f"**{text}**",
            "code": f"``{text}``", "ref": f":ref:`{text} <{target}>`",
            "func": f":func:`{text}`"}[kind]


def _wrap(rng: random.Random, text: str, indent: str = "") -> str:
    """Break a line at random spaces outside markup (a source's hard wraps)."""
    out, depth = [], 0
    for ch in text:
        if ch == "`":
            depth ^= 1
        out.append("\n" + indent if ch == " " and not depth and rng.random() < 0.15 else ch)
    return "".join(out)


def random_document(seed: int):
    """``(title, sections, blocks)``: sections as ``(path, [paragraph texts])`` in order, and
    the blocks to write (``("heading", level, title)``, ``("para", runs)``,
    ``("item", runs)``, ``("note", runs)``, ``("code", text)``)."""
    rng = random.Random(seed)
    title = " ".join(_words(rng, 1, 3)).capitalize()
    blocks: list[tuple] = []
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    path: list[str] = []
    for _ in range(rng.randint(1, 6)):
        level = rng.randint(1, min(len(path) + 1, 3))
        path = path[: level - 1] + [" ".join(_words(rng, 1, 3)).capitalize()]
        blocks.append(("heading", level, path[-1]))
        texts: list[str] = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(["para", "para", "para", "item", "note", "code"])
            if kind == "code":
                code = " ".join(_words(rng, 1, 4)).replace(" ", "_") + "()"
                blocks.append(("code", code))
                texts.append(code)
                continue
            runs = [_run(rng) for _ in range(rng.randint(1, 6))]
            runs[0] = ("plain", rng.choice(WORDS).capitalize(), None)
            blocks.append((kind, runs))
            if kind == "note":
                texts.append("Note")
            texts.append(" ".join(_render(r) for r in runs) + ".")
        sections.append((tuple(path), texts))
    return title, sections, blocks


def write_myst(title: str, blocks, rng: random.Random) -> str:
    out = [f"(top-{rng.randint(0, 99)})=", "% written by the round-trip test", f"# {title}", ""]
    for b in blocks:
        if b[0] == "heading":
            if rng.random() < 0.3:
                out += [f"({b[2].lower().replace(' ', '-')})=", ""]
            out += ["#" * (b[1] + 1) + " " + b[2], ""]
        elif b[0] == "code":
            out += ["```{code-block} python", b[1], "```", ""]
        else:
            text = _wrap(rng, " ".join(_myst_run(r) for r in b[1]) + ".")
            if b[0] == "item":
                out += ["- " + text.replace("\n", "\n  "), ""]
            elif b[0] == "note":
                out += [":::{note}", text, ":::", ""]
            else:
                out += [text, ""]
    return "\n".join(out)


def write_rst(title: str, blocks, rng: random.Random) -> str:
    chars = list("=-~^\"'+")
    rng.shuffle(chars)  # any adornment order: levels follow the order met in the file
    top = chars[0]
    out = [f".. _top-{rng.randint(0, 99)}:", "", ".. written by the round-trip test", "",
           top * (len(title) + 2), f" {title}", top * (len(title) + 2), ""]
    for b in blocks:
        if b[0] == "heading":
            if rng.random() < 0.3:
                out += [f".. _{b[2].lower().replace(' ', '-')}:", ""]
            out += [b[2], chars[b[1]] * len(b[2]), ""]
        elif b[0] == "code":
            out += [".. code-block:: python", "", "   " + b[1], ""]
        else:
            text = " ".join(_rst_run(r) for r in b[1]) + "."
            if b[0] == "item":
                out += ["- " + _wrap(rng, text, "  "), ""]
            elif b[0] == "note":
                out += [".. note::", "", "   " + _wrap(rng, text, "   "), ""]
            else:
                out += [_wrap(rng, text), ""]
    return "\n".join(out)


def _merge(sections):
    """Consecutive sections with one path are one gold section (the builder's rule)."""
    out: list[tuple[tuple[str, ...], list[str]]] = []
    for path, texts in sections:
        if out and out[-1][0] == path:
            out[-1][1].extend(texts)
        else:
            out.append((path, list(texts)))
    return out


@pytest.mark.parametrize("fmt", ["myst", "rst"])
def test_random_documents_round_trip(fmt):
    for seed in range(40):
        title, sections, blocks = random_document(seed)
        rng = random.Random(1000 + seed)
        if fmt == "myst":
            doc = parse_myst(write_myst(title, blocks, rng),
                             DocumentFile("d", "stem", "/nowhere/d.md"))
        else:
            src = write_rst(title, blocks, rng)
            doc = parse_rst(src, DocumentFile("d", "stem", "/nowhere/d.rst"))
        assert verify_document(doc) == []
        got = [(s.path, [doc.paragraph_text(i) for i in range(s.para_start, s.para_end)])
               for s in doc.sections]
        assert (doc.title, got) == (title, _merge(sections)), (fmt, seed)
        assert doc.meta["markup"] == {}, (fmt, seed)

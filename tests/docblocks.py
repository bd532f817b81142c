"""The code blocks of a documentation page that a test runs: each is marked by an HTML comment on
the line above its fence, ``<!-- test: WHAT -->`` (invisible on the site), which says what to do
with it, e.g. ``append src/rankstudy/losses/baseline.py``, ``entry LOSSES src/...``, ``write
config/studies/huber.yaml``, ``run``, ``shows results/...``, ``metric``. The tests of the pages
(tests/test_docs_examples.py, tests/test_docs_tutorial_e2e.py) read them from here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^<!-- test: (?P<what>.+?) -->\n```(?P<lang>\w+)(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$",
                   re.S | re.M)


@dataclass(frozen=True)
class Block:
    what: str  # the marker's words: "append src/rankstudy/losses/baseline.py"
    lang: str
    title: str  # the fence's title="..." (the file it belongs in, as the page shows it), or ""
    code: str

    @property
    def action(self) -> str:
        return self.what.split()[0]

    @property
    def args(self) -> list[str]:
        return self.what.split()[1:]


def blocks(page: str) -> list[Block]:
    """The marked blocks of ``docs/{page}``, in order."""
    text = (DOCS / page).read_text()
    found = []
    for m in BLOCK.finditer(text):
        title = re.search(r'title="([^"]*)"', m["info"])
        found.append(Block(m["what"].strip(), m["lang"], title[1] if title else "", m["code"]))
    assert len(found) == len(re.findall(r"^<!-- test:", text, re.M)), f"docs/{page}: a <!-- test: ... --> marker not right above a fence"
    return found


def one(page: str, what: str) -> Block:
    """The one block of ``docs/{page}`` whose marker is ``what``."""
    [block] = [b for b in blocks(page) if b.what == what]
    return block


def registry_line(code: str) -> tuple[str, str]:
    """``(name, expression)`` of a registry entry block (``"name": expression,``; comments skipped)."""
    line = next(line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    name, expression = re.fullmatch(r'\s*"(\w+)":\s*(.+?),\s*', line).groups()
    return name, expression

"""The README a newcomer reads in five minutes, and the text of the docs: the README stays short,
shows the two quick-start commands as CI and the guide run them, links only to files that exist,
and its tour's loss and study are the tutorial's (which tests/test_docs_examples.py and
tests/test_docs_tutorial_e2e.py run); every file path the docs name exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
COMMANDS = ("python3 workflow/bootstrap.py run", "python3 workflow/bootstrap.py test")
# files the tutorial and the extending page have the reader create
CREATED = {"config/studies/huber.yaml", "src/rankstudy/rankers/my_ranker.py"}


def fenced(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block."""
    return re.findall(r"^```(\w*)[^\n]*\n(.*?)^```", text, re.S | re.M)


def test_the_readme_is_at_most_250_lines():
    assert len(README.read_text().splitlines()) <= 250


def test_the_readme_shows_the_two_quick_start_commands():
    shell = [line for lang, code in fenced(README.read_text()) if lang == "sh" for line in code.splitlines()]
    for command in COMMANDS:
        assert any(re.fullmatch(rf"{re.escape(command)}(\s+#.*)?", line) for line in shell), command


def test_the_readmes_links_lead_to_files():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not re.match(r"\w+://", link)]
    assert local and all((REPO / link).exists() for link in local), [link for link in local if not (REPO / link).exists()]


def test_the_readmes_loss_and_study_are_the_tutorials():
    """Every line of the tour's code (bar the comments naming a file) is a line of docs/tutorial.md."""
    readme = README.read_text()
    tour = readme[readme.index("### Add a loss"):readme.index("### Open the runs")]
    tutorial = set((REPO / "docs" / "tutorial.md").read_text().splitlines())
    code = [line for lang, block in fenced(tour) if lang in ("python", "yaml") for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("# ")]
    assert code and [line for line in code if line not in tutorial] == []


def test_the_files_the_docs_name_exist():
    """A path in backquotes (`src/...`, `workflow/...`, `config/...`, `tests/...`, `benchmarks/...`)
    in the README, docs/ or the READMEs the site includes names a file or folder of the project.
    The dated pages under docs/results/ keep the paths of their day."""
    pages = [README, REPO / "config" / "README.md", REPO / "benchmarks" / "README.md",
             *(p for p in (REPO / "docs").rglob("*.md") if "results" not in p.relative_to(REPO / "docs").parts)]
    missing = [(page.relative_to(REPO).as_posix(), path) for page in pages
               for path in re.findall(r"`((?:src|workflow|config|tests|benchmarks|docs)/[\w./-]+)`", page.read_text())
               if path not in CREATED and not (REPO / path).exists()]
    assert missing == []

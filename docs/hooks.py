"""MkDocs hook (mkdocs.yml ``hooks:``): the pages generated at build time, so they cannot go stale.

* ``reference/*.md``: what a config can name, one page per section of ``python -m rankstudy
  list`` (:data:`rankstudy.pipeline.catalog.SECTIONS`, read from the registries themselves);
* ``config-keys.md``: ``config/README.md``, every configuration key (one source, shown here too);
* ``benchmark-scripts.md``: ``benchmarks/README.md``, every benchmark script and its figures.

Nothing is written into ``docs/``: the pages exist only in the build (``mkdocs build --strict``,
``tests/test_docs_build.py``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]

# section of `rankstudy list` -> (page title, what it lists)
TITLES = {
    "methods": ("Method kinds", "Every ranker kind a method's `kind` can name, with each parameter, its default "
                "and what it may be (`methods.NAME.params`, `methods.NAME.grid`)."),
    "losses": ("Losses", "Every loss a `loss` parameter can name, what it needs of a solver and its options "
               "(`loss_params`)."),
    "scorers": ("Scorers", "Every scorer a neural method's `scorer` parameter can name, with its parameters."),
    "solvers": ("Solvers", "Every solver a `solver` parameter can name, with its settings (a `linear` or "
                "`separate` method sets them in `solver_params`, e.g. `{learning_rate: 0.01}` for adam)."),
    "metrics": ("Metrics", "Every metric `evaluation.metrics`, `report.metrics` and a selection or training "
                "metric can name; see [Metrics and conventions](../metrics.md) for their exact definitions."),
    "conventions": ("Evaluation conventions", "The named evaluation conventions a study's `paper.convention` can "
                    "name (LETOR's evaluation scripts); see [Metrics and conventions](../metrics.md)."),
    "datasets": ("Data sets", "Every data set of the shipped registry (`config/datasets.yaml`) that `datasets` can "
                 "name; see [Data sets](../datasets.md) for adding your own."),
    "studies": ("Studies", "Every study config under `config/studies/`, run with `--configfile`; see "
                "[Studies and the scorecard](../studies.md)."),
}
PARAM = re.compile(r"^ {2,5}\w+ = ")  # a parameter's line under its method kind or scorer


def _text(text: str) -> str:
    """Catalog text (docstring sentences) as safe Markdown table text."""
    return text.replace("|", r"\|").replace("*", r"\*").replace("<", "&lt;")


def _entries(lines: list[str]) -> list[dict]:
    """The catalog's lines as entries: ``name: description`` (continued on more indented lines),
    then its parameters, one ``    name = default  (what it may be); tuned: space  # help`` each."""
    entries: list[dict] = []
    for line in lines:
        if not line.startswith(" ") or not entries:
            name, _, description = line.partition(": ")
            entries.append({"name": name, "text": [description], "params": []})
        elif PARAM.match(line):
            entries[-1]["params"].append([line])
        elif entries[-1]["params"]:  # a parameter's line continued
            entries[-1]["params"][-1].append(line)
        else:  # the description continued
            entries[-1]["text"].append(line)
    return entries


def _joined(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines)


def _param(text: str) -> dict | None:
    """``name = default  (what it may be, ...; L's own default: x)`` as its parts, or None."""
    m = re.fullmatch(r"(\w+) = (.*?)(?:  \((.*)\))?", text)
    if not m:
        return None
    library = re.search(r"; (\w+)'s own default: (.*)$", m[3] or "")
    may_be = (m[3] or "")[:library.start()] if library else (m[3] or "")
    return {"parameter": f"`{m[1]}`", "default": f"`{_text(m[2])}`", "may be": _text(may_be),
            "library": f"{library[1]}: {_text(library[2])}" if library else ""}


def _param_table(params: list[str]) -> list[str]:
    """A kind's parameters; with a column of the wrapped library's own defaults where it has any
    (LightGBM's, XGBoost's, CatBoost's: rankstudy's may differ)."""
    rows = [_param(p) for p in params]
    if not all(rows):
        return ["```text", *params, "```"]
    if any(r["library"] for r in rows):
        return (["| parameter | default | the library's own default | what it may be |", "|---|---|---|---|"]
                + [f"| {r['parameter']} | {r['default']} | {r['library'] or '–'} | {r['may be']} |" for r in rows])
    return (["| parameter | default | what it may be |", "|---|---|---|"]
            + [f"| {r['parameter']} | {r['default']} | {r['may be']} |" for r in rows])


def reference_page(section: str, lines: list[str]) -> str:
    title, intro = TITLES.get(section, (section.capitalize(), ""))
    out = [f"# {title}", "", intro, "",
           f"Generated from the registries when the site is built; the same list: "
           f"`python -m rankstudy list {section}`.", ""]
    entries = _entries(lines)
    if any(e["params"] for e in entries):  # a heading and a table of parameters per entry
        for e in entries:
            out += [f"## `{e['name']}`", "", _text(_joined(e["text"])), ""]
            if e["params"]:
                out += _param_table([_joined(p) for p in e["params"]])
            out.append("")
    else:
        out += ["| name | what |", "|---|---|"]
        out += [f"| `{e['name']}` | {_text(_joined(e['text']))} |" for e in entries]
        out.append("")
    return "\n".join(out)


def catalog() -> dict[str, list[str]]:
    """Every section of ``python -m rankstudy list``, its lines unwrapped (a page wraps its own)."""
    from rankstudy.pipeline import catalog as c

    if hasattr(c, "WIDTH"):
        c.WIDTH = 10**6
    return {section: render(True) for section, render in c.SECTIONS.items()}


def reference_index(sections: list[str]) -> str:
    out = ["# Reference", "",
           "What a config can name, read from the registries when the site is built (so these pages cannot "
           "drift from the code). `python -m rankstudy list [SECTION]` prints the same on the terminal.", "",
           "| page | command |", "|---|---|", "| [Command line](cli.md) | `python -m rankstudy --help` |"]
    out += [f"| [{TITLES.get(s, (s,))[0]}]({s}.md) | `python -m rankstudy list {s}` |" for s in sections]
    return "\n".join(out) + "\n"


def included(path: Path, title: str) -> str:
    """A README of the repository as a page: its first heading becomes ``title``."""
    text = path.read_text()
    lead = f"*This page is `{path.relative_to(REPO)}`, included when the site is built.*\n"
    return re.sub(r"\A# .*\n", f"# {title}\n\n{lead}", text, count=1)


def _sections() -> list[str]:
    from rankstudy.pipeline.catalog import SECTIONS

    return list(SECTIONS)


def on_config(config):
    """The Reference section of the navigation: its index, then one page per catalog section (so a
    section added to the catalog gets its page and its place without an edit here)."""
    for item in config["nav"] or []:
        if isinstance(item, dict) and "Reference" in item:
            item["Reference"] = ["reference/index.md", {"Command line": "reference/cli.md"}] + [
                {TITLES.get(s, (s.capitalize(),))[0]: f"reference/{s}.md"} for s in _sections()]
    return config


def _help(argv: list[str]) -> str:
    """What ``python -m rankstudy ARGV`` prints (``--help``), run in this process."""
    import contextlib
    import io

    from rankstudy import __main__ as cli

    out, columns = io.StringIO(), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width: the page's is fixed
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            cli.main(argv)
    finally:
        os.environ.pop("COLUMNS") if columns is None else os.environ.update(COLUMNS=columns)
    return out.getvalue().rstrip()


def cli_page() -> str:
    """``python -m rankstudy``'s commands, each with its ``--help``."""
    top = _help(["--help"])
    commands = re.findall(r"^    ([a-z][\w-]*)(?: {2,}|$)", top, re.M)
    out = ["# Command line", "",
           "`python -m rankstudy COMMAND`: the tools beside the pipeline (the pipeline itself is `snakemake`,",
           "[Getting started](../getting-started.md)). Generated from the commands' own `--help` when the site",
           "is built.", "", "```text", top, "```", ""]
    for command in commands:
        out += [f"## `{command}`", "", "```text", _help([command, "--help"]), "```", ""]
    return "\n".join(out)


def on_files(files: Files, config) -> Files:
    sections = catalog()
    pages = {f"reference/{section}.md": reference_page(section, lines) for section, lines in sections.items()}
    pages["reference/index.md"] = reference_index(list(sections))
    pages["reference/cli.md"] = cli_page()
    pages["config-keys.md"] = included(REPO / "config" / "README.md", "Configuration keys")
    pages["benchmark-scripts.md"] = included(REPO / "benchmarks" / "README.md", "Benchmark scripts")
    for uri, content in pages.items():
        files.append(File.generated(config, uri, content=content))
    return files

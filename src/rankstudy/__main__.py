"""``python -m rankstudy <command>``: the tools a user runs beside the pipeline.

* ``list [SECTION] [--example KIND]``: what a config can name (rankstudy.pipeline.catalog);
  ``--example KIND`` prints a method of that kind as a config block.
* ``learn-check STUDY.yaml METHOD``: did a method learn on real data (rankstudy.cli.learn_check).
* ``same-fit``: a method's fitted model and scores on a real fold, or two compared (rankstudy.cli.same_fit).
* ``letor-conventions``: our metrics beside LETOR's evaluation scripts' conventions
  (rankstudy.cli.letor_conventions).

Each tool's module is imported only when its command runs (``list`` needs no numpy).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from rankstudy.pipeline.catalog import SECTIONS, example

# command -> (module under rankstudy.cli with add_arguments(parser) and run(args), one-line help)
TOOLS = {
    "learn-check": ("learn_check", "did a method learn on real data: one method of a study on one fold, "
                                   "beside a random ranking"),
    "same-fit": ("same_fit", "same seed, same model: fit one method of a study on a real fold and save it, or "
                             "compare two such fits (old code against new)"),
    "letor-conventions": ("letor_conventions", "NDCG, P@10, MAP under our metrics beside LETOR's evaluation "
                                               "scripts' conventions, on one fold"),
}


def list_command(args) -> int:
    if args.example:
        from rankstudy.rankers.registry import RANKERS

        if args.example not in RANKERS:
            print(f"unknown method kind {args.example!r}; kinds: {', '.join(sorted(RANKERS))}", file=sys.stderr)
            return 2
        print(example(args.example), end="")
        return 0
    chosen = [args.section] if args.section else list(SECTIONS)
    for name in chosen:
        if len(chosen) > 1:
            print(f"{name}:")
        for line in SECTIONS[name](args.section is not None):
            print(("  " if len(chosen) > 1 else "") + line)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rankstudy",
                                     description="rankstudy's tools beside the pipeline (each command's --help says more)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    listing = commands.add_parser("list", help="list what a config can name",
                                  description="What a config can name: method kinds with their parameters, "
                                              "scorers, losses, solvers, metrics, conventions, data sets, studies.")
    listing.add_argument("section", nargs="?", choices=list(SECTIONS), help="one section, in full (default: all, briefly)")
    listing.add_argument("--example", metavar="KIND", help="print a method of this kind as YAML for a study's methods:")
    listing.set_defaults(run=list_command)
    argv = sys.argv[1:] if argv is None else argv
    for command, (module, help) in TOOLS.items():
        tool = commands.add_parser(command, help=help, description=help)
        if argv[:1] == [command]:  # only the command run imports its module
            found = importlib.import_module(f"rankstudy.cli.{module}")
            tool.description = found.__doc__.split("\n\n")[0]
            found.add_arguments(tool)
            tool.set_defaults(run=found.run)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `| head` closed the pipe: nothing more to say
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m rankstudy list [SECTION]``: what a config can name (see rankstudy.pipeline.catalog)."""

from __future__ import annotations

import argparse
import sys

from rankstudy.pipeline.catalog import SECTIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rankstudy")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="list what a config can name")
    listing.add_argument("section", nargs="?", choices=sorted(SECTIONS), help="one section (default: all, briefly)")
    args = parser.parse_args(argv)
    chosen = [args.section] if args.section else list(SECTIONS)
    try:
        for name in chosen:
            if len(chosen) > 1:
                print(f"{name}:")
            for line in SECTIONS[name](args.section is not None):
                print(("  " if len(chosen) > 1 else "") + line)
    except BrokenPipeError:  # `| head` closed the pipe: nothing more to say
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Command-line tools beside the pipeline, run as ``python -m rankstudy <command>`` (see
rankstudy.__main__), and investigations run as ``python -m rankstudy.cli.<name>`` whose findings
the docs quote. The top layer: they may use any part of the package, and nothing imports them."""

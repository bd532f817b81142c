"""Snakemake's logger plugin ``rankstudy`` (``--logger rankstudy``; the default profile,
profiles/default/config.yaml, names it): the terminal of a run shown short, one line per
finished job, the time left and the running jobs on each progress line, no line over
rankstudy.pipeline.terminal.LINE_LIMIT characters (the formatting lives there). Snakemake finds
the plugin by this module's name and its complete log keeps every job block."""

from __future__ import annotations

import sys

from snakemake.logging import ColorizingTextHandler, DefaultFilter
from snakemake_interface_logger_plugins.base import LogHandlerBase

from rankstudy.pipeline.terminal import CompactFormatter


class LogHandler(LogHandlerBase, ColorizingTextHandler):
    def __post_init__(self) -> None:
        settings = self.common_settings
        # Snakemake's own stream choice (stdout for a dry run) and colours (errors red on a terminal)
        ColorizingTextHandler.__init__(self, nocolor=settings.nocolor, stream=sys.stdout if settings.stdout else sys.stderr)
        self.setFormatter(CompactFormatter(settings.quiet, settings.show_failed_logs, settings.dryrun))
        self.addFilter(DefaultFilter(settings.quiet, settings.debug_dag, settings.verbose, settings.dryrun,
                                     settings.printshellcmds))

    def emit(self, record) -> None:
        # ColorizingTextHandler's, without the blank line it writes before each job block
        with self._output_lock:
            text = self.format(record)
            if text:
                self.stream.write(self.decorate(record, text) + "\n")
                self.flush()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False

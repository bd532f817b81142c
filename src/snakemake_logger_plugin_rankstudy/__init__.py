"""Snakemake's logger plugin ``rankstudy`` (``--logger rankstudy``; the default profile,
profiles/default/config.yaml, names it): the terminal of a run shown short, one line per
finished job, the time left and the running jobs on each progress line, no line over
rankstudy.pipeline.terminal.LINE_LIMIT characters (the formatting lives there). Snakemake finds
the plugin by this module's name and its complete log keeps every job block.

Snakemake logs progress only when a job ends, so a 7-minute job left the last progress line, its
time so far and the time left standing for 7 minutes. The handler therefore prints the line again
(its times as of then) when jobs run and nothing was printed for ``refresh_seconds``: 30 s on a
terminal, 120 s when Snakemake's stream goes to a file or a pipe (``bootstrap.py run``, which
shows the lines on a terminal, sets the terminal's). A thread of its own does it, through the
logging module's public handler lock; Snakemake's log records are all the plugin reads.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

from snakemake.logging import ColorizingTextHandler, DefaultFilter
from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

from rankstudy.pipeline.terminal import CompactFormatter

TERMINAL_REFRESH, LOG_REFRESH = 30.0, 120.0  # seconds between reprints of the progress line


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    refresh_seconds: Optional[float] = field(default=None, metadata={
        "help": "Print the progress line again while jobs run and nothing else was printed for this "
                f"many seconds (default {TERMINAL_REFRESH:g} on a terminal, {LOG_REFRESH:g} otherwise; "
                "0: only when a job ends).",
        "env_var": True,  # SNAKEMAKE_LOGGER_RANKSTUDY_REFRESH_SECONDS
        "type": float,
    })


class LogHandler(LogHandlerBase, ColorizingTextHandler):
    def __post_init__(self) -> None:
        settings = self.common_settings
        # Snakemake's own stream choice (stdout for a dry run) and colours (errors red on a terminal)
        ColorizingTextHandler.__init__(self, nocolor=settings.nocolor, stream=sys.stdout if settings.stdout else sys.stderr)
        self.setFormatter(CompactFormatter(settings.quiet, settings.show_failed_logs, settings.dryrun))
        self.addFilter(DefaultFilter(settings.quiet, settings.debug_dag, settings.verbose, settings.dryrun,
                                     settings.printshellcmds))
        self.last_written = time.monotonic()
        self.stopped = threading.Event()
        self.refresh_seconds = self.refresh_interval()
        if self.refresh_seconds > 0 and not settings.dryrun:
            threading.Thread(target=self.keep_refreshing, name="rankstudy-progress", daemon=True).start()

    def refresh_interval(self) -> float:
        chosen = getattr(self.settings, "refresh_seconds", None)
        if chosen is not None:
            return max(0.0, float(chosen))
        return TERMINAL_REFRESH if self.is_tty else LOG_REFRESH

    def emit(self, record) -> None:
        # ColorizingTextHandler's, without the blank line it writes before each job block; under
        # the handler's public lock, which logging.Handler.handle holds while it calls emit
        text = self.format(record)
        if text:
            self.write(self.decorate(record, text))

    def write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.flush()
        self.last_written = time.monotonic()

    def refresh(self) -> bool:
        """Print the progress line again if nothing was printed for the refresh interval and jobs
        run; whether it printed. Under the handler's lock, which Snakemake's queue listener holds
        while it hands a record to :meth:`emit` (logging.Handler.handle)."""
        self.acquire()
        try:
            if time.monotonic() - self.last_written < self.refresh_seconds:
                return False
            text = self.formatter.refresh()
            if text:
                self.write(text)
            return bool(text)
        finally:
            self.release()

    def keep_refreshing(self) -> None:
        # look a few times per interval, so a line comes at most a quarter interval late
        while not self.stopped.wait(min(max(self.refresh_seconds / 4, 0.05), 5.0)):
            try:
                self.refresh()
            except Exception:  # a closed stream at exit: the run's own lines matter, not this one
                return

    def close(self) -> None:
        self.stopped.set()  # Snakemake closes its plugin handlers when the run ends
        super().close()

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

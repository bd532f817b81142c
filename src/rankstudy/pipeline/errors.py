"""The errors a user can fix (bad config, bad data, a missing data set), which a job reports
as one line instead of a traceback."""

from __future__ import annotations

from rankstudy.data.download import DownloadError
from rankstudy.data.folds import EmptySplitError
from rankstudy.data.letor import LetorFormatError
from rankstudy.data.qadata import QATableError
from rankstudy.data.registry import RegistryError
from rankstudy.data.splitfiles import DataPathError, DatasetNotFound
from rankstudy.tracking.errors import TrackingUnavailable
from rankstudy.util.atomic import DamagedFile


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


USER_ERRORS = (ConfigError, DatasetNotFound, DataPathError, RegistryError, DownloadError, LetorFormatError,
               QATableError, EmptySplitError, TrackingUnavailable, DamagedFile, FileNotFoundError, PermissionError)

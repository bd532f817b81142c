"""The errors a user can fix (bad config, bad data, a missing data set), which a job reports
as one line instead of a traceback."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


def user_errors() -> tuple[type[BaseException], ...]:
    """The error types a user can fix. Imported when a job fails, not when it starts: the modules
    that define them (the parsers, the downloader) bring pandas and SciPy, which a train or
    evaluate job would otherwise load for nothing."""
    from rankstudy.data.download import DownloadError
    from rankstudy.data.folds import EmptySplitError
    from rankstudy.data.letor import LetorFormatError
    from rankstudy.data.qadata import QATableError
    from rankstudy.data.registry import RegistryError
    from rankstudy.data.splitfiles import DataPathError, DatasetNotFound
    from rankstudy.features.normalize import UnrepresentableValue
    from rankstudy.selection.search import AllDiverged
    from rankstudy.selection.settings import TuningError
    from rankstudy.selection.tuning_storage import StorageError
    from rankstudy.tracking.errors import TrackingUnavailable
    from rankstudy.util.atomic import DamagedFile
    from rankstudy.util.jax_runtime import JaxPlatformError

    return (ConfigError, DatasetNotFound, DataPathError, RegistryError, DownloadError, LetorFormatError,
            QATableError, EmptySplitError, TrackingUnavailable, DamagedFile, FileNotFoundError, PermissionError,
            AllDiverged, StorageError, TuningError, UnrepresentableValue, JaxPlatformError)

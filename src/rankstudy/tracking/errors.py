"""The tracking errors a user can act on, importable without MLflow (every job imports them)."""


class TrackingUnavailable(RuntimeError):
    """The tracking server does not answer; the message says how to start it again."""

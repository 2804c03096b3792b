"""Errors that carry a user-facing reason."""


class DataRejected(Exception):
    """Input that no retry can fix (a bad file, a failed data-quality rule). `str()` is the reason."""

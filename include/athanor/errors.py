"""Errors that carry a user-facing reason."""


class DataRejected(Exception):
    """Input that no retry can fix (a bad file, a failed data-quality rule). `str()` is the reason."""


class UnknownParams(DataRejected):
    """A run's conf naming a key its DAG does not declare (a misspelt `dryrun`): no retry fixes it."""

"""Errors that carry a user-facing reason."""


class DataRejected(Exception):
    """Input that no retry can fix (a bad file, a failed data-quality rule). `str()` is the reason."""


class UnknownParams(DataRejected):
    """A run's conf naming a key its DAG does not declare (a misspelt `dryrun`): no retry fixes it."""


class DataErrorExit(SystemExit):
    """How an Airflow task ends on bad data: its one-line reason, no traceback, no retry.

    Airflow 3.3's task runner logs every exception it catches with its traceback
    (`log.exception`), AirflowFailException raised `from None` included (it drops the chained
    cause, not the dozen frames between the runner and the raise); a SystemExit alone it logs
    in one line, 'Task exited' with its code, here the reason. A SystemExit would be retried:
    the DAGs' retry policy (dags/athanor_common.py) fails this one at once.
    """

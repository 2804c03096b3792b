"""Athanor: GPU cloud-bill analytics. Airflow-free logic shared by the DAGs and the `athanor` CLI."""

import os

# OpenBLAS's threaded kernels made the small dense algebra of the duration fits 10-50x
# slower on a busy 2-core machine (measured); one thread per process is faster here.
# Set before numpy is first imported, which happens after this package is.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

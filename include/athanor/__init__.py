"""Athanor: GPU cloud-bill analytics. Airflow-free logic shared by the DAGs and the `athanor` CLI."""

__version__ = "0.1.0"

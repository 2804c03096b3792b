"""Every `athanor` failure an operator can meet is one line on stderr and exit code 1.

`cli.main` maps what commands raise (odd bucket names, a missing file, a full disk, a lock
held by another process, anything unforeseen) to one line; `--debug`, before or after the
command, prints the traceback as well.
"""

from __future__ import annotations

import errno
import gzip
from datetime import date
from pathlib import Path

import pytest

from athanor import cli
from athanor.cli import main
from athanor.demo.storage import generate_inventory
from tests.adversarial.conftest import JOBS


def one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err.removeprefix("error: ").rstrip("\n")


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_inventory(tmp_path_factory.mktemp("inventory"), date(2026, 11, 30), seed=7)


@pytest.mark.parametrize("bucket", ["Bad Bucket!", "s3://athanor-demo-checkpoints/prefix", "../etc"])
def test_an_odd_bucket_name_for_lifecycle_apply(home: Path, capsys, inventory: Path, bucket: str) -> None:
    # botocore refuses the name before any request is made.
    assert one_line(capsys, ["lifecycle", str(inventory), "--apply", "--bucket", bucket]) == (
        f"invalid bucket name {bucket!r}: a bucket name is 3 to 63 lowercase letters, digits, "
        "dots and hyphens (no s3://, no prefix)"
    )


def test_a_missing_file(home: Path, capsys) -> None:
    assert one_line(capsys, ["lifecycle-restore", "athanor-demo-checkpoints", "no-such-backup.json"]) == (
        "no such file or folder: no-such-backup.json"
    )


@pytest.mark.slow
def test_a_full_disk(home: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    # The demo's bills are written through gzip; the disk fills up on the first block.
    def no_space(self: gzip.GzipFile, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gzip.GzipFile, "write", no_space)
    assert one_line(capsys, ["demo", "--out", str(home / "exports")]) == (
        "no space left on device (free some space, then run again)"
    )


def test_a_warehouse_held_by_another_process(home: Path, capsys, monkeypatch, writer) -> None:
    monkeypatch.setenv("ATHANOR_WRITER_WAIT_S", "0")  # where a bounded wait exists, do not wait
    warehouse = home / "held.duckdb"
    with writer(warehouse) as proc:
        message = one_line(capsys, ["ingest", str(JOBS), "--warehouse", str(warehouse)])
    assert str(warehouse.name) in message and f"PID {proc.pid}" in message


def test_the_unforeseen_is_one_line_too(home: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args, settings) -> int:
        raise RuntimeError("the first line\nand a second one")

    monkeypatch.setattr(cli, "_cmd_quarantine", broken)
    assert one_line(capsys, ["quarantine", "list"]) == (
        "RuntimeError: the first line and a second one (run with --debug for the traceback)"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--debug", "lifecycle-restore", "b", "no-such-backup.json"],
        ["lifecycle-restore", "b", "no-such-backup.json", "--debug"],
    ],
    ids=["before the command", "after the command"],
)
def test_debug_adds_the_traceback(home: Path, capsys, argv: list[str]) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "Traceback (most recent call last):"
    assert err[-2:] == [
        "FileNotFoundError: [Errno 2] No such file or directory: 'no-such-backup.json'",
        "error: no such file or folder: no-such-backup.json",
    ]

"""`athanor quarantine release` touches one quarantined delivery and nothing else.

It accepts only `<quarantine>/<run>/<delivery>` entries (the path resolved, symlinks
included), puts the files back in the folder or bucket they came from, never overwrites, and
refuses anything else with one line and exit code 1, leaving every file where it was.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from athanor.cli import main
from athanor.quality.quarantine import ReleaseRefused, quarantine, release

BILL = "BillingAccountId,BilledCost\n123,=1+1\n"


def tree(root: Path) -> dict[str, str]:
    """Every file and link under `root` with its content hash (a link: where it points)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def held(home: Path, *names: str, folder: str = "billing/focus/acct-1/billing_period=2026-11") -> Path:
    """A delivery of `names` landed in `landing/<folder>/`, rejected and quarantined by run-1."""
    origin = home / "landing" / folder
    origin.mkdir(parents=True)
    files = []
    for name in names:
        (origin / name).write_text(BILL)
        files.append(origin / name)
    return quarantine(files, f"{names[0]} row 1: no billing columns", home / "quarantine", "run-1")


def one_line_refusal(capsys, argv: list[str]) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    return captured.err.removeprefix("error: ").rstrip("\n")


# ----------------------------------------------------------------------- put back where it was


def test_release_puts_the_file_back_in_the_folder_it_came_from(home: Path, capsys) -> None:
    entry = held(home, "focus-2026-11.csv")
    origin = home / "landing" / "billing" / "focus" / "acct-1" / "billing_period=2026-11"

    assert main(["quarantine", "release", str(entry)]) == 0

    assert capsys.readouterr().out == f"released 1 file(s) to {origin}; the next run loads them\n"
    assert (origin / "focus-2026-11.csv").read_text() == BILL
    assert not (home / "landing" / "focus-2026-11.csv").exists()  # not the landing root
    assert not (home / "quarantine").exists() or not any((home / "quarantine").iterdir())


def test_a_multi_file_delivery_goes_back_into_its_own_folder(home: Path, capsys) -> None:
    folder = "cur/report/20261101-20261201/abc"
    entry = held(home, "report-1.csv.gz", "report-2.csv.gz", folder=folder)

    assert main(["quarantine", "release", str(entry)]) == 0

    assert sorted(p.name for p in (home / "landing" / folder).iterdir()) == [
        "report-1.csv.gz",
        "report-2.csv.gz",
    ]
    assert tree(home / "landing") == {
        f"{folder}/report-1.csv.gz": hashlib.sha256(BILL.encode()).hexdigest(),
        f"{folder}/report-2.csv.gz": hashlib.sha256(BILL.encode()).hexdigest(),
    }
    assert not entry.exists()


def test_release_never_overwrites_and_moves_nothing_when_refused(home: Path, capsys) -> None:
    entry = held(home, "a.csv", "b.csv", folder="drop")
    (home / "landing" / "drop" / "b.csv").write_text("a newer delivery\n")
    before = tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(entry)])

    assert (
        message
        == f"{home / 'landing' / 'drop' / 'b.csv'} exists: release would overwrite it, nothing released"
    )
    assert tree(home) == before


def test_an_entry_without_its_origin_is_refused_with_where_to_copy_by_hand(home: Path, capsys) -> None:
    entry = held(home, "old.csv")
    manifest = json.loads((entry / "manifest.json").read_text())
    for item in manifest["files"]:
        del item["origin"]  # as quarantined before the origin was recorded
    (entry / "manifest.json").write_text(json.dumps(manifest))
    before = tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(entry)])

    assert message == (
        f"{entry}: the manifest does not say where its files came from (quarantined by an earlier "
        f"version); copy them by hand into the landing folder they came from, then delete {entry}"
    )
    assert tree(home) == before


def test_a_manifest_naming_a_path_instead_of_a_file_is_refused(home: Path, capsys) -> None:
    entry = held(home, "x.csv")
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"][0]["original_name"] = "../../../../tmp/planted.csv"
    (entry / "manifest.json").write_text(json.dumps(manifest))
    before = tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(entry)])

    assert (
        message
        == f"{entry}: the manifest names a file '../../../../tmp/planted.csv' that is not a plain file name"
    )
    assert tree(home) == before


# ------------------------------------------------------------------ nothing outside the quarantine


@pytest.fixture
def victim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the quarantine that looks like an entry: a manifest.json and a file."""
    folder = tmp_path_factory.mktemp("outside") / "precious"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work\n")
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "run_id": "x",
                "delivery": "precious",
                "files": [{"name": "thesis.tex", "original_name": "thesis.tex"}],
            }
        )
    )
    return folder


def test_a_folder_outside_the_quarantine_is_refused_and_kept(home: Path, victim: Path, capsys) -> None:
    held(home, "a.csv")
    before, kept = tree(victim), tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(victim)])

    assert message == f"{str(victim)!r} is outside the quarantine {home / 'quarantine'}: nothing released"
    assert tree(victim) == before and tree(home) == kept


@pytest.mark.parametrize("path", ["../../../../etc", "/etc", "quarantine/../landing"])
def test_paths_that_climb_out_are_one_line(home: Path, capsys, path: str) -> None:
    held(home, "a.csv")
    before = tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", path])

    assert message == f"{path!r} is outside the quarantine {home / 'quarantine'}: nothing released"
    assert tree(home) == before


def test_a_symlink_inside_the_quarantine_to_a_folder_outside_is_refused(
    home: Path, victim: Path, capsys
) -> None:
    held(home, "a.csv")
    link = home / "quarantine" / "run-1" / "innocent"
    link.symlink_to(victim, target_is_directory=True)
    before, kept = tree(victim), tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(link)])

    assert message == f"{str(link)!r} is outside the quarantine {home / 'quarantine'}: nothing released"
    assert tree(victim) == before and tree(home) == kept


@pytest.mark.parametrize("where", ["quarantine", "quarantine/run-1", "quarantine/run-1/nothing-here"])
def test_only_a_delivery_entry_is_released(home: Path, capsys, where: str) -> None:
    held(home, "a.csv")
    before = tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(home / where)])

    assert message == (
        f"{str(home / where)!r} is not a quarantined delivery (<quarantine>/<run>/<delivery>, "
        "see `athanor quarantine list`): nothing released"
    )
    assert tree(home) == before


# ---------------------------------------------------------------------------- a bucket landing

BUCKET, KEY = "landing-bucket", "billing/focus/acct-1/focus-2026-11.csv"


@pytest.fixture
def bucket_entry(home: Path, monkeypatch: pytest.MonkeyPatch):
    """A bucket landing: the nightly run mirrored s3://landing-bucket/<KEY> into .cache/landing/
    and quarantined the mirrored copy."""
    monkeypatch.setenv("ATHANOR_LANDING", f"s3://{BUCKET}")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        mirrored = home / ".cache" / "landing" / BUCKET / KEY
        mirrored.parent.mkdir(parents=True)
        mirrored.write_text(BILL)
        entry = quarantine([mirrored], "focus-2026-11.csv row 1: bad", home / "quarantine", "run-1")
        yield s3, entry


@pytest.mark.slow
def test_a_bucket_delivery_goes_back_into_the_bucket(home: Path, capsys, bucket_entry) -> None:
    s3, entry = bucket_entry

    assert main(["quarantine", "release", str(entry)]) == 0

    assert capsys.readouterr().out == (
        f"released 1 file(s) to s3://{BUCKET}/billing/focus/acct-1; the next run loads them\n"
    )
    assert s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read().decode() == BILL
    assert not entry.exists()
    # Never a local folder named after the URL (`./s3:/landing-bucket/...`).
    assert not any("s3:" in str(p) for p in home.rglob("*"))


def test_a_bucket_object_still_there_with_the_same_bytes_is_left_as_it_is(
    home: Path, capsys, bucket_entry
) -> None:
    s3, entry = bucket_entry
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=BILL.encode())
    etag = s3.head_object(Bucket=BUCKET, Key=KEY)["ETag"]

    assert main(["quarantine", "release", str(entry)]) == 0

    assert s3.head_object(Bucket=BUCKET, Key=KEY)["ETag"] == etag
    assert not entry.exists() and not any("s3:" in str(p) for p in home.rglob("*"))


def test_a_bucket_object_that_changed_since_is_not_overwritten(home: Path, capsys, bucket_entry) -> None:
    s3, entry = bucket_entry
    s3.put_object(Bucket=BUCKET, Key=KEY, Body=b"the corrected delivery\n")
    before = tree(home)

    message = one_line_refusal(capsys, ["quarantine", "release", str(entry)])

    assert message == f"s3://{BUCKET}/{KEY} exists and differs: release would overwrite it, nothing released"
    assert s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read() == b"the corrected delivery\n"
    assert tree(home) == before


def test_a_bucket_delivery_without_an_s3_client_is_refused(home: Path, bucket_entry) -> None:
    _, entry = bucket_entry
    before = tree(home)
    with pytest.raises(ReleaseRefused, match="came from a bucket and no S3 client is configured"):
        release(entry, home / "quarantine", bucket_mirror=home / ".cache" / "landing")
    assert tree(home) == before

"""The demo's bill, storage inventories and EBS listings describe one fleet: the buckets the bill
charges are the buckets inventoried, byte for byte; the volumes and snapshots it charges are the
ones listed; in-use volumes hang on instances the bill shows running."""

from __future__ import annotations

import json
from datetime import date

import pytest

from athanor.demo import fleet as demo
from athanor.demo.lines import QTY
from athanor.demo.storage import GB, fleet_bucket, generate_storage
from athanor.ingest.inventory import read_ebs, read_inventories
from athanor.recommend.lifecycle import resource_key

CFG = demo.DemoConfig(end_date=date(2026, 11, 20), days=30)
EARLY = date(2026, 11, 10)


@pytest.fixture(scope="module")
def delivered(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out: dict = {}
    for day in (CFG.end_date, EARLY):
        root = tmp_path_factory.mktemp(f"demo-{day}")
        written = generate_storage(root, CFG, day)
        lines = demo.billing_lines(CFG, day).to_pandas()
        out[day] = {"root": root, "written": written, "lines": lines}
    return out


def _last_day(lines, resource_type: str):
    rows = lines[lines["resource_type"] == resource_type]
    return rows[rows["charge_start"] == rows["charge_start"].max()]


@pytest.mark.slow
def test_the_bill_charges_the_buckets_the_inventories_list_byte_for_byte(delivered: dict) -> None:
    day = delivered[CFG.end_date]
    inventory = read_inventories([day["root"] / "inventory"])
    teams = sorted(t.name for t in CFG.teams)
    assert sorted(inventory["bucket"].unique()) == [fleet_bucket(t) for t in teams]
    last = _last_day(day["lines"], "Bucket")
    assert sorted(last["resource_id"].unique()) == sorted(inventory["bucket"].unique())
    # GB-months of the day x days in the month = GB stored that day; every version is billed.
    days = (last["billing_period_end"] - last["billing_period_start"]).dt.days
    billed_gib = (last["quantity_e10"] * days / QTY).groupby(last["resource_id"]).sum()
    stored_gib = inventory.groupby("bucket")["size_bytes"].sum() / GB
    for bucket, gib in stored_gib.items():
        assert billed_gib[bucket] == pytest.approx(gib, abs=1e-6), bucket


@pytest.mark.slow
def test_an_earlier_delivery_lists_what_existed_then_and_the_bill_agrees(delivered: dict) -> None:
    early, late = delivered[EARLY], delivered[CFG.end_date]
    inventory = read_inventories([early["root"] / "inventory"])
    later = read_inventories([late["root"] / "inventory"])
    assert set(inventory["version_id"]) < set(later["version_id"])
    assert inventory["last_modified"].max() < later["last_modified"].max()
    last = _last_day(early["lines"], "Bucket")
    days = (last["billing_period_end"] - last["billing_period_start"]).dt.days
    billed_gib = (last["quantity_e10"] * days / QTY).sum()
    assert billed_gib == pytest.approx(inventory["size_bytes"].sum() / GB, abs=1e-6)
    # One latest row per key: a delete marker written after the day no longer hides its key.
    latest = inventory[inventory["is_latest"]]
    assert not latest.duplicated(["bucket", "key"]).any()
    assert set(latest[["bucket", "key"]].itertuples(index=False)) == set(
        inventory[["bucket", "key"]].itertuples(index=False)
    )


def test_the_bill_charges_the_listed_volumes_and_snapshots(delivered: dict) -> None:
    day = delivered[CFG.end_date]
    volumes_path, snapshots_path = day["written"]["ebs"]
    ebs = read_ebs(volumes_path, snapshots_path)
    lines = day["lines"]
    volume_lines = lines[lines["resource_type"] == "Volume"]
    snapshot_lines = lines[lines["resource_type"] == "Snapshot"]
    assert set(volume_lines["resource_id"]) == set(ebs.volumes["volume_id"])
    assert {resource_key(r) for r in snapshot_lines["resource_id"]} == set(ebs.snapshots["snapshot_id"])
    last = _last_day(lines, "Volume")
    days = (last["billing_period_end"] - last["billing_period_start"]).dt.days
    billed = dict(zip(last["resource_id"], last["quantity_e10"] * days / QTY, strict=True))
    assert billed == pytest.approx(dict(zip(ebs.volumes["volume_id"], ebs.volumes["size_gib"], strict=True)))
    # Each snapshot and volume is billed to its team's account, as the listing's owner says.
    accounts = {t.usage_account_id for t in CFG.teams}
    assert {s["OwnerId"] for s in json.loads(snapshots_path.read_text())["Snapshots"]} <= accounts
    assert set(snapshot_lines["usage_account_id"]) <= accounts


def test_in_use_volumes_hang_on_instances_the_bill_shows_running(delivered: dict) -> None:
    day = delivered[CFG.end_date]
    volumes = json.loads(day["written"]["ebs"][0].read_text())["Volumes"]
    lines = day["lines"]
    instances = lines[lines["resource_type"] == "Instance"]
    running = set(instances.loc[instances["charge_end"] == instances["charge_end"].max(), "resource_id"])
    attached = [a["InstanceId"] for v in volumes for a in v["Attachments"]]
    assert attached and set(attached) <= running
    assert all(v["Attachments"] for v in volumes if v["State"] == "in-use")


def test_every_storage_line_is_priced_at_list_prices(delivered: dict) -> None:
    lines = delivered[CFG.end_date]["lines"]
    storage = lines[lines["resource_type"].isin(["Bucket", "Volume", "Snapshot"])]
    assert (storage["billed_micro"] == storage["effective_micro"]).all()
    rate = {"Volume": {0.08, 0.10}, "Snapshot": {0.05}}
    for kind, prices in rate.items():
        assert set(storage.loc[storage["resource_type"] == kind, "rate_micro"] / 1e6) <= prices

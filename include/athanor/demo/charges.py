"""The demo bill's lines that are no instance-hours: commitment fees and unused commitment,
checkpoint-bucket storage, EBS volumes, data transfer, and each month's tax and credit.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa

from athanor.demo.config import REGION_NAMES, REGION_PREFIX, DemoConfig, TeamSpec
from athanor.demo.lines import EC2_INSTANCE_PRODUCT, MICRO, QTY, Invoice, Rows
from athanor.demo.stable import dollars, period_bounds, round_div, sku, to_micro, unit_hash
from athanor.demo.storage import GB as GIB
from athanor.demo.storage import FleetStorage, fleet_bucket, fleet_storage
from athanor.demo.usage import Commitments
from athanor.reference.storage import DEFAULT_PRICES as STORAGE_PRICES
from athanor.reference.storage import StoragePrices


def commitment_lines(
    cfg: DemoConfig,
    rows: Rows,
    com: Commitments,
    use: pd.DataFrame,
    months: list[tuple[date, int, int]],
    cutoff: int,
    invoice: Invoice,
) -> None:
    """Fees (Purchase) and unused commitment per hour (FOCUS Usage rows with status Unused)."""
    first_s = months[0][1]
    used = use.set_index(["commitment", "hour_s"])
    ri_name = f"{cfg.ri_count} x {cfg.ri_instance_type} RI, 1yr No Upfront"
    sp_name = f"Compute Savings Plan ${cfg.sp_commitment_per_h}/h, 1yr No Upfront"
    ri_prefix = REGION_PREFIX[cfg.ri_region]
    r = com.ri_rate_micro
    common_ri = dict(
        payer_account_id=cfg.ri_payer_account_id,
        payer_account_name=cfg.payer_name(cfg.ri_payer_account_id),
        usage_account_id=cfg.ri_payer_account_id,
        usage_account_name=cfg.payer_name(cfg.ri_payer_account_id),
        **EC2_INSTANCE_PRODUCT,
        region_id=cfg.ri_region,
        region_name=REGION_NAMES[cfg.ri_region],
        resource_id=com.ri_arn,
        instance_type=cfg.ri_instance_type,
        normalization_factor=cfg.instance(cfg.ri_instance_type).normalization_factor,
        usage_type=f"{ri_prefix}-HeavyUsage:{cfg.ri_instance_type}",
        operation="RunInstances",
        sku_id=sku(cfg.ri_region, cfg.ri_instance_type, "ri"),
        unit="Hrs",
        commitment_id=com.ri_arn,
        commitment_name=ri_name,
        commitment_type="Reserved Instance",
        commitment_category="Usage",
        commitment_unit="Hours",
        commitment_rate_micro=r,
        commitment_start=com.ri_start,
        commitment_end=com.ri_end,
    )
    common_sp = dict(
        payer_account_id=cfg.sp_payer_account_id,
        payer_account_name=cfg.payer_name(cfg.sp_payer_account_id),
        usage_account_id=cfg.sp_payer_account_id,
        usage_account_name=cfg.payer_name(cfg.sp_payer_account_id),
        product_code="ComputeSavingsPlans",
        service_name="Savings Plans for AWS Compute usage",
        service_category="Compute",
        service_subcategory="Virtual Machines",
        product_family="Savings Plans",
        resource_id=com.sp_arn,
        usage_type="ComputeSP:1yrNoUpfront",
        operation=None,
        sku_id=sku("sp", cfg.sp_commitment_per_h),
        unit="Hrs",
        commitment_id=com.sp_arn,
        commitment_name=sp_name,
        commitment_type="Savings Plan",
        commitment_category="Spend",
        commitment_unit="USD",
        commitment_start=com.sp_start,
        commitment_end=com.sp_end,
    )

    # Reserved instances: the monthly RIFee is billed on the first day for the whole
    # month; its unused fields count every purchased hour not yet used (AWS semantics).
    ri_hours = np.arange(max(first_s, com.ri_start), min(cutoff, com.ri_end), 3600, dtype=np.int64)
    ri_used_s = used.reindex([(com.ri_arn, h) for h in ri_hours])["used_s"].fillna(0).to_numpy(np.int64)
    ri_used_m = used.reindex([(com.ri_arn, h) for h in ri_hours])["used_micro"].fillna(0).to_numpy(np.int64)
    unused_s = cfg.ri_count * 3600 - ri_used_s
    unused_m = cfg.ri_count * r - ri_used_m
    keep = unused_s > 0
    p_start, p_end = period_bounds(ri_hours[keep])
    rows.add(
        int(keep.sum()),
        **common_ri,
        billing_period_start=p_start,
        billing_period_end=p_end,
        charge_start=ri_hours[keep],
        charge_end=ri_hours[keep] + 3600,
        line_type="UnusedCommitment",
        charge_category="Usage",
        charge_frequency="Usage-Based",
        pricing_category="Committed",
        description=f"Unused reservation hours, {cfg.ri_instance_type} (1yr No Upfront)",
        quantity_e10=round_div(unused_s[keep] * QTY, 3600),
        list_rate_micro=None,
        rate_micro=r,
        billed_micro=0,
        effective_micro=unused_m[keep],
        list_micro=0,
        commitment_status="Unused",
        commitment_quantity_e10=round_div(unused_s[keep] * QTY, 3600),
        invoice_id=invoice(p_start, cfg.ri_payer_account_id),
    )
    for _, m_start, m_end in months:
        start, end = max(m_start, com.ri_start), min(m_end, com.ri_end)
        if start >= end:
            continue
        purchased_s = cfg.ri_count * (end - start)
        in_month = (ri_hours >= m_start) & (ri_hours < m_end)
        fee = cfg.ri_count * ((end - start) // 3600) * r
        rows.add(
            1,
            **common_ri,
            billing_period_start=m_start,
            billing_period_end=m_end,
            charge_start=start,
            charge_end=end,
            line_type="RIFee",
            charge_category="Purchase",
            charge_frequency="Recurring",
            description=f"USD {dollars(r)} hourly fee per Linux/UNIX (Amazon VPC), {cfg.ri_instance_type} instance",
            quantity_e10=purchased_s * QTY // 3600,
            list_rate_micro=None,
            rate_micro=r,
            billed_micro=fee,
            effective_micro=0,
            list_micro=fee,
            commitment_quantity_e10=purchased_s * QTY // 3600,
            commitment_count=cfg.ri_count,
            unused_quantity_e10=(purchased_s - int(ri_used_s[in_month].sum())) * QTY // 3600,
            unused_micro=fee - int(ri_used_m[in_month].sum()),
            invoice_id=invoice(np.array([m_start]), cfg.ri_payer_account_id)[0],
        )

    # Savings Plan: the recurring fee is billed every hour; what the hour's usage did not
    # consume is unused commitment.
    sp_hours = np.arange(max(first_s, com.sp_start), min(cutoff, com.sp_end), 3600, dtype=np.int64)
    sp_used_m = used.reindex([(com.sp_arn, h) for h in sp_hours])["used_micro"].fillna(0).to_numpy(np.int64)
    cap = com.sp_commitment_micro
    p_start, p_end = period_bounds(sp_hours)
    inv = invoice(p_start, cfg.sp_payer_account_id)
    rows.add(
        len(sp_hours),
        **common_sp,
        billing_period_start=p_start,
        billing_period_end=p_end,
        charge_start=sp_hours,
        charge_end=sp_hours + 3600,
        line_type="SavingsPlanRecurringFee",
        charge_category="Purchase",
        charge_frequency="Recurring",
        description=f"1 year No Upfront Compute Savings Plan, ${dollars(cap)}/hour commitment",
        quantity_e10=QTY,
        rate_micro=cap,
        billed_micro=cap,
        effective_micro=0,
        list_micro=cap,
        commitment_quantity_e10=cap * (QTY // MICRO),
        commitment_total_micro=cap,
        commitment_used_micro=sp_used_m,
        invoice_id=inv,
    )
    keep = sp_used_m < cap
    rows.add(
        int(keep.sum()),
        **common_sp,
        billing_period_start=p_start[keep],
        billing_period_end=p_end[keep],
        charge_start=sp_hours[keep],
        charge_end=sp_hours[keep] + 3600,
        line_type="UnusedCommitment",
        charge_category="Usage",
        charge_frequency="Usage-Based",
        pricing_category="Committed",
        description="Unused Compute Savings Plan commitment",
        quantity_e10=(cap - sp_used_m[keep]) * (QTY // MICRO),
        billed_micro=0,
        effective_micro=cap - sp_used_m[keep],
        list_micro=0,
        commitment_status="Unused",
        commitment_quantity_e10=(cap - sp_used_m[keep]) * (QTY // MICRO),
        invoice_id=[i for i, k in zip(inv, keep, strict=True) if k],
    )


def bucket_name(team: TeamSpec) -> str:
    return fleet_bucket(team.name)


# How S3 names a storage class (Intelligent-Tiering: its access tier) in a bill line:
# (usage type suffix, operation, price per GB-month).
def _s3_class(prices: StoragePrices, storage_class: str, tier: str) -> tuple[str, str, float]:
    if storage_class == "STANDARD_IA":
        return "TimedStorage-SIA-ByteHrs", "StandardIAStorage", prices.s3_ia_gb_month
    if storage_class == "INTELLIGENT_TIERING":
        return {
            "INFREQUENT": (
                "TimedStorage-INT-IA-ByteHrs",
                "IntelligentTieringIAStorage",
                prices.it_infrequent_gb_month,
            ),
            "ARCHIVE_INSTANT_ACCESS": (
                "TimedStorage-INT-AIA-ByteHrs",
                "IntelligentTieringAIAStorage",
                prices.it_archive_instant_gb_month,
            ),
        }.get(
            tier, ("TimedStorage-INT-FA-ByteHrs", "IntelligentTieringFAStorage", prices.it_frequent_gb_month)
        )
    return "TimedStorage-ByteHrs", "StandardStorage", prices.storage_gb_month(storage_class)


def _bucket_lines(
    cfg: DemoConfig,
    rows: Rows,
    common: dict,
    team: TeamSpec,
    storage: FleetStorage,
    days: np.ndarray,
    days_in_month: np.ndarray,
) -> None:
    """One line per storage class and day: the bytes of every version written by the day's end."""
    bucket = bucket_name(team)
    prefix = REGION_PREFIX["us-east-1"]
    versions = [r for r in storage.objects if r["bucket"] == bucket and r["size"]]
    by_class: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for r in versions:
        when = int(r["last_modified"].timestamp())
        by_class.setdefault((r["storage_class"], r["tier"]), []).append((when, int(r["size"])))
    for (storage_class, tier), items in sorted(by_class.items()):
        usage, operation, price = _s3_class(STORAGE_PRICES, storage_class, tier)
        written = np.array(sorted(items))
        cumulative = np.concatenate([[0], np.cumsum(written[:, 1])]).astype(object)
        stored = [int(cumulative[np.searchsorted(written[:, 0], d + 86400, side="left")]) for d in days]
        keep = np.array([b > 0 for b in stored])
        if not keep.any():
            continue
        stored_b = [b for b, k in zip(stored, keep, strict=True) if k]
        month_days = [int(n) for n, k in zip(days_in_month, keep, strict=True) if k]
        rate = to_micro(Decimal(str(price)))
        cost = np.array(
            [round_div(b * rate, GIB * n) for b, n in zip(stored_b, month_days, strict=True)], dtype=np.int64
        )
        rows.add(
            int(keep.sum()),
            **_subset(common, keep),
            product_code="AmazonS3",
            service_name="Amazon Simple Storage Service",
            service_category="Storage",
            service_subcategory="Object Storage",
            product_family="Storage",
            resource_id=bucket,
            resource_type="Bucket",
            usage_type=f"{prefix}-{usage}",
            operation=operation,
            description=f"${dollars(rate)} per GB-month of {storage_class}"
            + (f" ({tier.lower()} tier)" if storage_class == "INTELLIGENT_TIERING" else "")
            + " storage",
            sku_id=sku("s3", "us-east-1", storage_class, tier),
            unit="GB-Mo",
            quantity_e10=np.array(
                [round_div(b * QTY, GIB * n) for b, n in zip(stored_b, month_days, strict=True)],
                dtype=np.int64,
            ),
            list_rate_micro=rate,
            rate_micro=rate,
            billed_micro=cost,
            effective_micro=cost,
            list_micro=cost,
            tag_team=team.name,
            tag_project="checkpoints",
        )


def _ebs_lines(
    cfg: DemoConfig,
    rows: Rows,
    common: dict,
    team: TeamSpec,
    storage: FleetStorage,
    days: np.ndarray,
    days_in_month: np.ndarray,
) -> None:
    """One line per volume and per snapshot of the team and day, from the day it was created."""
    prefix = REGION_PREFIX["us-east-1"]
    snapshot_gib = storage.snapshot_billed_gib()
    items = []
    for v in storage.volumes:
        if storage.team_of_volume[v["VolumeId"]] != team.name:
            continue
        vtype = v["VolumeType"]
        tags = {t["Key"]: t["Value"] for t in v["Tags"]}
        items.append(
            dict(
                created=v["CreateTime"],
                gib=Decimal(v["Size"]),
                price=STORAGE_PRICES.ebs_volume_gb_month(vtype),
                availability_zone=v["AvailabilityZone"],
                resource_id=v["VolumeId"],
                resource_type="Volume",
                usage_type=f"{prefix}-EBS:VolumeUsage" + ("" if vtype == "standard" else f".{vtype}"),
                operation=f"CreateVolume-{vtype.capitalize()}",
                description=f"per GB-month of {vtype} provisioned storage",
                sku_key=("ebs", "us-east-1", vtype),
                tag_project="checkpoints" if tags.get("Purpose") == "checkpoints" else "datasets",
            )
        )
    for snap in storage.snapshots:
        if storage.team_of_volume[snap["VolumeId"]] != team.name:
            continue
        items.append(
            dict(
                created=snap["StartTime"],
                gib=Decimal(str(round(snapshot_gib[snap["SnapshotId"]], 3))),
                price=STORAGE_PRICES.ebs_snapshot_gb_month,
                availability_zone=None,
                resource_id=f"arn:aws:ec2:us-east-1:{team.usage_account_id}:snapshot/{snap['SnapshotId']}",
                resource_type="Snapshot",
                usage_type=f"{prefix}-EBS:SnapshotUsage",
                operation="CreateSnapshot",
                description="per GB-month of snapshot data stored",
                sku_key=("ebs", "us-east-1", "snapshot"),
                tag_project="backups",
            )
        )
    for item in sorted(items, key=lambda i: i["resource_id"]):
        created = int(datetime.fromisoformat(item["created"].replace("Z", "+00:00")).timestamp())
        keep = days + 86400 > created  # billed from the day it was created
        if not keep.any():
            continue
        rate = to_micro(Decimal(str(item["price"])))
        month_days = days_in_month[keep]
        gib_e3 = int(item["gib"] * 1000)  # snapshot sizes carry three decimals
        rows.add(
            int(keep.sum()),
            **_subset(common, keep),
            product_code="AmazonEC2",
            service_name="Amazon Elastic Compute Cloud",
            service_category="Storage",
            service_subcategory="Block Storage",
            product_family="Storage Snapshot" if item["resource_type"] == "Snapshot" else "Storage",
            availability_zone=item["availability_zone"],
            resource_id=item["resource_id"],
            resource_type=item["resource_type"],
            usage_type=item["usage_type"],
            operation=item["operation"],
            description=f"${dollars(rate)} {item['description']}",
            sku_id=sku(*item["sku_key"]),
            unit="GB-Mo",
            quantity_e10=round_div(np.full(len(month_days), gib_e3) * (QTY // 1000), month_days),
            list_rate_micro=rate,
            rate_micro=rate,
            billed_micro=round_div(np.full(len(month_days), gib_e3) * rate, month_days * 1000),
            effective_micro=round_div(np.full(len(month_days), gib_e3) * rate, month_days * 1000),
            list_micro=round_div(np.full(len(month_days), gib_e3) * rate, month_days * 1000),
            tag_team=team.name,
            tag_project=item["tag_project"],
        )


def _subset(common: dict, keep: np.ndarray) -> dict:
    """The per-day columns of `common` (arrays and lists) cut to the kept days."""
    out = {}
    for key, value in common.items():
        if isinstance(value, np.ndarray):
            out[key] = value[keep]
        elif isinstance(value, list):
            out[key] = [v for v, k in zip(value, keep, strict=True) if k]
        else:
            out[key] = value
    return out


def other_lines(
    cfg: DemoConfig,
    rows: Rows,
    months: list[tuple[date, int, int]],
    cutoff: int,
    first_s: int,
    invoice: Invoice,
    account_names: dict[str, str],
) -> None:
    """Per team and day: its checkpoint bucket, its EBS volumes and snapshots, its data transfer.

    Storage is billed from the fleet's own storage (`athanor.demo.storage.fleet_storage`): the
    bucket the team's inventory lists, byte for byte by storage class, and the volumes and
    snapshots its EBS listing names, from the day each was created.
    """
    days = np.arange(first_s, cutoff, 86400, dtype=np.int64)
    p_start, p_end = period_bounds(days)
    days_in_month = (p_end - p_start) // 86400
    storage = fleet_storage(cfg)
    for team in cfg.teams:
        prefix = REGION_PREFIX["us-east-1"]
        common = dict(
            payer_account_id=team.payer_account_id,
            payer_account_name=cfg.payer_name(team.payer_account_id),
            usage_account_id=team.usage_account_id,
            usage_account_name=account_names[team.usage_account_id],
            billing_period_start=p_start,
            billing_period_end=p_end,
            charge_start=days,
            charge_end=days + 86400,
            line_type="Usage",
            charge_category="Usage",
            charge_frequency="Usage-Based",
            pricing_category="Standard",
            region_id="us-east-1",
            region_name=REGION_NAMES["us-east-1"],
            invoice_id=invoice(p_start, team.payer_account_id),
        )
        _bucket_lines(cfg, rows, common, team, storage, days, days_in_month)
        _ebs_lines(cfg, rows, common, team, storage, days, days_in_month)
        transfers = [("DataTransfer-Out-Bytes", cfg.egress_per_gb, team.egress_gb_per_day, "out")]
        if team.west_share > 0:
            transfers.append(
                ("USW2-AWS-Out-Bytes", cfg.inter_region_per_gb, cfg.inter_region_gb_per_day, "west")
            )
        for usage, price, gb_per_day, kind in transfers:
            # Volumes vary day to day; stable per (seed, team, day), so restatements agree.
            mb = np.array(
                [
                    int(
                        gb_per_day
                        * 1000
                        * math.exp(0.35 * (unit_hash(cfg.seed, team.name, kind, d) - 0.5) * 2)
                    )
                    for d in days
                ],
                dtype=np.int64,
            )
            if kind == "out" and team.name == cfg.spike_team:
                spike_s = np.datetime64(cfg.spike_day, "s").astype(np.int64)
                mb = np.where(days == spike_s, (mb * cfg.spike_factor).astype(np.int64), mb)
            rate = to_micro(price)
            cost = round_div(mb * rate, 1000)
            to_west = kind == "west"
            rows.add(
                len(days),
                **common,
                product_code="AWSDataTransfer",
                service_name="AWS Data Transfer",
                service_category="Networking",
                service_subcategory="Network Connectivity",
                product_family="Data Transfer",
                usage_type=f"{prefix}-{usage}",
                operation="RunInstances",
                description=(
                    f"${dollars(rate)} per GB - US East (N. Virginia) data transfer to US West (Oregon)"
                    if to_west
                    else f"${dollars(rate)} per GB - first 10 TB / month data transfer out beyond the global free tier"
                ),
                sku_id=sku("transfer", kind),
                unit="GB",
                quantity_e10=mb * (QTY // 1000),
                list_rate_micro=rate,
                rate_micro=rate,
                billed_micro=cost,
                effective_micro=cost,
                list_micro=cost,
            )


def tax_and_credit(
    cfg: DemoConfig,
    rows: Rows,
    table: pa.Table,
    payers: list[str],
    months: list[tuple[date, int, int]],
    cutoff: int,
    invoice: Invoice,
) -> pa.Table:
    """One Tax line (on the month's billed charges, to the cent) and one Credit per payer and month."""
    frame = pd.DataFrame(
        {
            "payer": table.column("payer_account_id").to_numpy(zero_copy_only=False),
            "period": table.column("billing_period_start").cast(pa.int64()).to_numpy(),
            "billed": table.column("billed_micro").to_numpy(),
        }
    )
    billed = frame.groupby(["payer", "period"])["billed"].sum()
    extra = Rows()
    for payer in payers:
        for _, m_start, m_end in months:
            base = int(billed.get((payer, m_start), 0))
            tax = (
                int((Decimal(base) * cfg.tax_rate / 10_000).quantize(Decimal(1), rounding="ROUND_HALF_UP"))
                * 10_000
            )
            credit = -to_micro(cfg.credit_per_month)
            for line_type, amount, description in (
                ("Tax", tax, f"Sales tax at {cfg.tax_rate * 100}% on charges of the period"),
                ("Credit", credit, "Promotional credit for ML research"),
            ):
                extra.add(
                    1,
                    payer_account_id=payer,
                    payer_account_name=cfg.payer_name(payer),
                    usage_account_id=payer,
                    usage_account_name=cfg.payer_name(payer),
                    billing_period_start=m_start,
                    billing_period_end=m_end,
                    charge_start=m_start,
                    charge_end=min(m_end, cutoff),
                    line_type=line_type,
                    charge_category=line_type,
                    charge_frequency="One-Time",
                    product_code="AmazonEC2",
                    service_name="Amazon Elastic Compute Cloud",
                    service_category="Compute",
                    service_subcategory="Virtual Machines",
                    product_family=None,
                    description=description,
                    quantity_e10=0,
                    billed_micro=amount,
                    effective_micro=amount,
                    list_micro=amount,
                    invoice_id=invoice(np.array([m_start]), payer)[0],
                )
    return pa.concat_tables([table, extra.table()])

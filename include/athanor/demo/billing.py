"""The demo's canonical line items: instance-hours as Usage / DiscountedUsage /
SavingsPlanCoveredUsage lines, then the fees, storage, transfer, tax and credit lines of
`athanor.demo.charges`, in one table ordered as a bill.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import numpy as np
import pyarrow as pa

from athanor.demo.charges import commitment_lines, other_lines, tax_and_credit
from athanor.demo.config import REGION_NAMES, REGION_PREFIX, DemoConfig
from athanor.demo.jobs import Fleet, cutoff_of, simulate
from athanor.demo.lines import EC2_INSTANCE_PRODUCT, MICRO, QTY, Rows
from athanor.demo.stable import dollars, period_bounds, round_div, sku
from athanor.demo.usage import apply_commitments, billing_months, commitments_of, usage_lines

_LINE_ORDER = {
    "Usage": 0,
    "DiscountedUsage": 1,
    "SavingsPlanCoveredUsage": 2,
    "UnusedCommitment": 3,
    "RIFee": 4,
    "SavingsPlanRecurringFee": 5,
    "Tax": 6,
    "Credit": 7,
}


def billing_lines(cfg: DemoConfig | None = None, as_of: date | None = None) -> pa.Table:
    """The demo's canonical line items (`athanor.demo.lines.LINE_SCHEMA`; both payers, every month)
    as delivered at the end of `as_of`."""
    cfg = cfg or DemoConfig()
    return build_billing_lines(cfg, simulate(cfg), cutoff_of(cfg, as_of))


def build_billing_lines(cfg: DemoConfig, fleet: Fleet, cutoff: int) -> pa.Table:
    com = commitments_of(cfg)
    months = billing_months(cfg, cutoff)
    first_s = months[0][1]
    final_months = {start: end <= cutoff for _, start, end in months}
    usage, commit_use = apply_commitments(cfg, usage_lines(cfg, fleet, cutoff), com)
    rows = Rows()
    payers = sorted({team.payer_account_id for team in cfg.teams})
    account_names = {team.usage_account_id: f"{team.name}-training" for team in cfg.teams}
    nf = {spec.instance_type: spec.normalization_factor for spec in cfg.instances}

    def invoice(period_start: np.ndarray, payer: np.ndarray | str) -> list[str | None]:
        payer_list = [payer] * len(period_start) if isinstance(payer, str) else list(payer)
        return [
            f"{datetime.fromtimestamp(int(s), UTC):%Y%m}{p[:4]}" if final_months[int(s)] else None
            for s, p in zip(period_start, payer_list, strict=True)
        ]

    # Instance hours: the uncovered part as Usage, the covered part as DiscountedUsage /
    # SavingsPlanCoveredUsage (a line the commitment only partly covers becomes two).
    for covered_part in (False, True):
        part = usage[usage["covered_s"] > 0] if covered_part else usage[usage["seconds"] > usage["covered_s"]]
        n = len(part)
        if n == 0:
            continue
        seconds = (part["covered_s"] if covered_part else part["seconds"] - part["covered_s"]).to_numpy()
        start = np.maximum(part["hour_s"], part["start_s"]).to_numpy()
        start = np.where(covered_part, start, start + part["covered_s"].to_numpy())  # uncovered rest follows
        end = start + seconds
        itype = part["instance_type"].to_numpy()
        region = part["region"].to_numpy()
        spot = part["spot"].to_numpy()
        od_rate = part["od_rate"].to_numpy()
        rate = part["rate"].to_numpy()
        list_cost = round_div(seconds * od_rate, 3600)
        prefix = np.array([REGION_PREFIX[r] for r in region], dtype=object)
        usage_type = prefix + np.where(spot, "-SpotUsage:", "-BoxUsage:") + itype
        is_ri = part["commitment"].to_numpy() == com.ri_arn
        p_start, p_end = period_bounds(part["hour_s"])
        if covered_part:
            line_type = np.where(is_ri, "DiscountedUsage", "SavingsPlanCoveredUsage")
            effective = part["covered_cost"].to_numpy()
            billed = np.zeros(n, dtype=np.int64)
            c_rate = np.where(is_ri, com.ri_rate_micro, part["sp_rate"].to_numpy())
            description = [
                f"USD {dollars(com.ri_rate_micro)} hourly fee per Linux/UNIX (Amazon VPC), {t} instance"
                if ri_line
                else f"Compute Savings Plan rate ${dollars(int(r))} per hour for Linux/UNIX {t} in {g}"
                for t, g, r, ri_line in zip(itype, region, c_rate, is_ri, strict=True)
            ]
            commitment = dict(
                commitment_id=part["commitment"].to_numpy(),
                commitment_name=np.where(
                    is_ri,
                    f"{cfg.ri_count} x {cfg.ri_instance_type} RI, 1yr No Upfront",
                    f"Compute Savings Plan ${cfg.sp_commitment_per_h}/h, 1yr No Upfront",
                ),
                commitment_type=np.where(is_ri, "Reserved Instance", "Savings Plan"),
                commitment_category=np.where(is_ri, "Usage", "Spend"),
                commitment_status="Used",
                commitment_unit=np.where(is_ri, "Hours", "USD"),
                # RIs are counted in instance-hours, Savings Plans in dollars of commitment.
                commitment_quantity_e10=np.where(
                    is_ri, round_div(seconds * QTY, 3600), effective * (QTY // MICRO)
                ),
                commitment_rate_micro=c_rate,
                commitment_start=np.where(is_ri, com.ri_start, com.sp_start),
                commitment_end=np.where(is_ri, com.ri_end, com.sp_end),
                pricing_category="Committed",
            )
        else:
            line_type = np.full(n, "Usage")
            effective = billed = round_div(seconds * rate, 3600)
            description = [
                f"${dollars(int(r))} per {'Spot' if s else 'On Demand'} Linux {t} Instance Hour"
                for t, r, s in zip(itype, rate, spot, strict=True)
            ]
            commitment = dict(pricing_category=np.where(spot, "Dynamic", "Standard"))
        payer = part["payer_account_id"].to_numpy()
        job_tag = part["job_id"].where(~part["untagged"].astype(bool), None).to_numpy()
        rows.add(
            n,
            payer_account_id=payer,
            payer_account_name=[cfg.payer_name(p) for p in payer],
            usage_account_id=part["usage_account_id"].to_numpy(),
            usage_account_name=[account_names[a] for a in part["usage_account_id"]],
            billing_period_start=p_start,
            billing_period_end=p_end,
            charge_start=start,
            charge_end=end,
            line_type=line_type,
            charge_category="Usage",
            charge_frequency="Usage-Based",
            **EC2_INSTANCE_PRODUCT,
            region_id=region,
            region_name=[REGION_NAMES[r] for r in region],
            availability_zone=part["availability_zone"].to_numpy(),
            resource_id=part["resource_id"].to_numpy(),
            resource_type="Instance",
            instance_type=itype,
            normalization_factor=[nf[t] for t in itype],
            usage_type=usage_type,
            operation=np.where(spot, "RunInstances:SV001", "RunInstances"),
            description=description,
            sku_id=[sku(r, t, "spot" if s else "od") for r, t, s in zip(region, itype, spot, strict=True)],
            unit="Hrs",
            quantity_e10=round_div(seconds * QTY, 3600),
            list_rate_micro=od_rate,
            rate_micro=rate,
            billed_micro=billed,
            effective_micro=effective,
            list_micro=list_cost,
            invoice_id=invoice(p_start, payer),
            tag_team=part["team"].to_numpy(),
            tag_project=part["project"].to_numpy(),
            tag_model=part["model"].to_numpy(),
            tag_job_id=job_tag,
            **commitment,
        )

    commitment_lines(cfg, rows, com, commit_use, months, cutoff, invoice)
    other_lines(cfg, rows, months, cutoff, first_s, invoice, account_names)
    table = rows.table()
    table = tax_and_credit(cfg, rows, table, payers, months, cutoff, invoice)
    order = pa.array([_LINE_ORDER[t] for t in table.column("line_type").to_pylist()], pa.int8())
    table = table.append_column("_order", order)
    table = table.sort_by(
        [
            ("payer_account_id", "ascending"),
            ("charge_start", "ascending"),
            ("usage_account_id", "ascending"),
            ("_order", "ascending"),
            ("resource_id", "ascending"),
        ]
    )
    return table.drop_columns(["_order"])

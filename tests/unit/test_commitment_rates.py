"""Published commitment rates (athanor.reference.commitment_rates) and how the optimiser prices a
pool with them (athanor.recommend.nightly.pool_offers, athanor.recommend.mix.offers_for).

The recorded price file here is a test fixture with round figures, not quotes: what is checked is
that the rate used is the file's rate, to the cent, and that a pool without one takes the flat
fallback, labelled as assumed.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from athanor.recommend import mix, nightly
from athanor.recommend.commitments import CommitmentOffer
from athanor.reference import commitment_rates
from athanor.reference.commitment_rates import CommitmentRate, load_commitment_rates, unit_rates

HEADER = (
    "provider,instance_type,region,offer,term_months,payment_option,effective_usd_per_h,"
    "on_demand_usd_per_h,source_id,as_of\n"
)
ROWS = (
    "aws,p4d.24xlarge,us-east-1,standard_ri,12,no_upfront,12.00,24.00,fixture,2026-06-01\n"
    "aws,p4d.24xlarge,us-east-1,standard_ri,36,no_upfront,7.20,24.00,fixture,2026-06-01\n"
    "aws,p5.48xlarge,us-east-1,ec2_instance_sp,12,no_upfront,38.50,55.00,fixture,2026-06-01\n"
    "aws,p5.48xlarge,us-east-1,standard_ri,12,no_upfront,33.00,55.00,fixture,2026-06-01\n"
    "aws,p5.48xlarge,us-east-1,standard_ri,36,no_upfront,22.00,55.00,fixture,2026-06-01\n"
    "aws,p5.48xlarge,us-east-1,standard_ri,36,all_upfront,20.00,55.00,fixture,2026-06-01\n"
    "aws,p5.48xlarge,us-east-1,compute_sp,12,no_upfront,30.00,55.00,fixture,2026-06-01\n"
)


def recorded(tmp_path: Path, rows: str = ROWS) -> Path:
    """A recorded price file and its sources.csv beside it (as in reference/data)."""
    (tmp_path / "sources.csv").write_text("source_id,title,url,date,note\nfixture,test figures,,2026,\n")
    path = tmp_path / "commitment_rates.csv"
    path.write_text(HEADER + rows)
    return path


def test_the_shipped_table_loads_and_names_known_sources() -> None:
    for rate in load_commitment_rates():
        assert isinstance(rate, CommitmentRate)
        assert 0 < rate.rate_ratio <= 1


def test_unit_rates_are_the_files_lowest_unit_offer_per_term(tmp_path: Path) -> None:
    path = recorded(tmp_path)
    p4d = unit_rates("p4d.24xlarge", "us-east-1", path=path)
    assert p4d[12].effective_usd_per_h == 12.00 and p4d[12].rate_ratio == pytest.approx(0.5)
    assert p4d[36].effective_usd_per_h == 7.20 and p4d[36].rate_ratio == pytest.approx(0.3)
    p5 = unit_rates("p5.48xlarge", "us-east-1", path=path)
    # 1 year: the RI's 33.00/55.00 = 0.6 beats the instance savings plan's 38.50/55.00 = 0.7; the
    # compute savings plan is a $/h commitment across pools, not a unit offer, and all-upfront
    # rows are another payment option.
    assert (p5[12].offer, p5[12].effective_usd_per_h, p5[12].rate_ratio) == ("standard_ri", 33.00, 0.6)
    assert (p5[36].effective_usd_per_h, p5[36].rate_ratio) == (22.00, pytest.approx(0.4))
    assert unit_rates("g5.48xlarge", "us-east-1", path=path) == {}
    assert unit_rates("p5.48xlarge", "us-west-2", path=path) == {}


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (
            "aws,p5.48xlarge,us-east-1,standard_ri,24,no_upfront,1,2,fixture,2026-06-01",
            "term_months: must be 12 or 36",
        ),
        (
            "aws,p5.48xlarge,us-east-1,spot,12,no_upfront,1,2,fixture,2026-06-01",
            "column offer: must be one of",
        ),
        ("aws,p5.48xlarge,us-east-1,standard_ri,12,no_upfront,3,2,fixture,2026-06-01", "must not exceed"),
        ("aws,p5.48xlarge,us-east-1,standard_ri,12,no_upfront,x,2,fixture,2026-06-01", "must be a number"),
        (
            "aws,p5.48xlarge,us-east-1,standard_ri,12,no_upfront,1,2,nowhere,2026-06-01",
            "source_id: must name",
        ),
        ("aws,p5.48xlarge,us-east-1,standard_ri,12,no_upfront,1,2,fixture,June", "as_of: must be a date"),
    ],
)
def test_a_bad_row_names_file_row_column_and_rule(tmp_path: Path, row: str, words: str) -> None:
    path = recorded(tmp_path, ROWS + row + "\n")
    with pytest.raises(ValueError, match="commitment_rates.csv row 9") as err:
        load_commitment_rates(path)
    assert words in str(err.value)


def test_pools_take_the_published_rate_else_the_labelled_flat_fallback(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(nightly, "unit_rates", partial(commitment_rates.unit_rates, path=recorded(tmp_path)))
    ref = pd.DataFrame(
        {"instance_type": ["p4d.24xlarge", "p5.48xlarge", "g5.48xlarge"]},
        index=pd.Index(["p4d", "p5", "g5"], name="instance_family"),
    )
    a = nightly.PricingAssumptions(commit_discount_1y=0.40, commit_discount_3y=0.60)
    pools = ["p4d/us-east-1", "p5/us-east-1", "g5/us-east-1", "p5/us-west-2"]
    offers, labels = nightly.pool_offers(pools, ref, a)
    ratios = {p: [(o.term_months, round(o.rate_ratio, 6)) for o in offers[p]] for p in pools}
    assert ratios == {
        "p4d/us-east-1": [(12, 0.5), (36, 0.3)],  # 12.00/24.00, 7.20/24.00
        "p5/us-east-1": [(12, 0.6), (36, 0.4)],  # 33.00/55.00, 22.00/55.00
        "g5/us-east-1": [(12, 0.6), (36, 0.4)],  # flat: 1 - 40 %, 1 - 60 %
        "p5/us-west-2": [(12, 0.6), (36, 0.4)],  # no row for the region: flat
    }
    assert labels["p5/us-east-1"][12].startswith("published rate, fixture, 2026-06-01: standard_ri 12-month")
    assert "no_upfront $33/h vs on-demand $55/h (0.6000x)" in labels["p5/us-east-1"][12]
    assert labels["g5/us-east-1"][12].startswith("assumption: flat 40 % 1-year discount (0.60x on-demand")
    assert labels["g5/us-east-1"][36].startswith("assumption: flat 60 % 3-year discount (0.40x on-demand")


def _plan(prices: mix.MixPrices) -> mix.MixRecommendation:
    pools = {"p4d/us-east-1": 10.0, "g5/us-east-1": 4.0}  # on-demand $ per unit-hour
    hours = pd.date_range("2026-11-01", periods=720, freq="h", name="hour")
    demand = pd.concat(
        pd.DataFrame({"hour": hours, "pool": p, "units": np.full(720, 5.0), "on_demand_rate": r})
        for p, r in pools.items()
    )
    jobs = pd.DataFrame(
        [
            {
                "job_class": f"c/{p}",
                "pool": p,
                "gpu_hours": 1.0,
                "jobs": 1,
                "median_duration_h": 4.0,
                "p90_duration_h": 12.0,
                "instance_count": 1,
                "checkpoint_time_h": 0.05,
                "restart_time_h": 0.1,
                "deadline_slack": 2.0,
                "spot_rate": 0.3 * r,
                "on_demand_rate": r,
                "interruption_rate_per_h": 0.0,
                "interruptible": False,
            }  # fmt: skip
            for p, r in pools.items()
        ]
    )
    return mix.recommend_mix(demand, jobs, prices=prices, price_phase_policy=False)


def test_a_pools_own_offers_price_its_commitment_within_its_term_limit() -> None:
    fleet = (CommitmentOffer(12, "no_upfront", 0.6, 0.0), CommitmentOffer(36, "no_upfront", 0.4, 0.0))
    p4d = (CommitmentOffer(12, "no_upfront", 0.5, 0.0), CommitmentOffer(36, "no_upfront", 0.3, 0.0))
    prices = mix.MixPrices(
        offers=fleet,
        offers_by_pool={"p4d/us-east-1": p4d},
        max_term_months_by_pool={"p4d/us-east-1": 12},
        annual_demand_decline=0.0,
    )
    assert mix.offers_for(prices, "p4d/us-east-1") == p4d[:1]
    assert mix.offers_for(prices, "g5/us-east-1") == fleet
    plans = {p.pool: p.plan for p in _plan(prices).pools}
    # Flat 5 units: p4d commits 5 for 1 year (its limit) at 0.5 x $10 = $5.00 a unit-hour; g5
    # commits 5 for 3 years at the fleet's 0.4 x $4 = $1.60.
    assert (plans["p4d/us-east-1"].term_months, plans["p4d/us-east-1"].commit_units) == (12, 5)
    assert plans["p4d/us-east-1"].commit_rate == pytest.approx(5.00)
    assert (plans["g5/us-east-1"].term_months, plans["g5/us-east-1"].commit_rate) == (36, pytest.approx(1.60))


def test_the_shipped_gcp_committed_use_rates_are_the_sources_figures() -> None:
    # pricing.yml @ 0166a59e (sources.csv cyclenerd_gcp_pricing_2025_03): a2-highgpu-8g us-central1
    # hour 29.38708, month_1y 13514.9691136, month_3y 7508.53662384; a3-highgpu-8g us-east4 hour
    # 88.5557561512329, month_1y 44840.32514976, month_3y 28392.60150768 (730-hour months).
    a2 = unit_rates("a2-highgpu-8g", "us-central1")
    assert a2[12].effective_usd_per_h == pytest.approx(13514.9691136 / 730, abs=5e-7)  # 18.513656
    assert a2[36].effective_usd_per_h == pytest.approx(7508.53662384 / 730, abs=5e-7)  # 10.285667
    # 13514.9691136 / 21452.5684 = 0.629993 (about 37 % off); 7508.53662384 / 21452.5684 = 0.350006.
    assert a2[12].rate_ratio == pytest.approx(13514.9691136 / 21452.5684, abs=1e-6)
    assert a2[36].rate_ratio == pytest.approx(7508.53662384 / 21452.5684, abs=1e-6)
    a3 = unit_rates("a3-highgpu-8g", "us-east4")
    assert a3[12].effective_usd_per_h == pytest.approx(44840.32514976 / 730, abs=5e-7)  # 61.425103
    assert a3[36].rate_ratio == pytest.approx(28392.60150768 / 64645.7019904, abs=1e-6)  # 0.4392
    assert a3[12].offer == "gcp_cud" and a3[12].as_of.isoformat() == "2025-03-06"
    # A GCP pool takes them; the label names the source and its date.
    ref = pd.DataFrame({"instance_type": ["a2-highgpu-8g"]}, index=pd.Index(["a2-highgpu"]))
    offers, labels = nightly.pool_offers(["a2-highgpu/us-central1"], ref, nightly.PricingAssumptions())
    assert [round(o.rate_ratio, 4) for o in offers["a2-highgpu/us-central1"]] == [0.63, 0.35]
    assert labels["a2-highgpu/us-central1"][36] == (
        "published rate, cyclenerd_gcp_pricing_2025_03, 2025-03-06: gcp_cud 36-month no_upfront "
        "$10.2857/h vs on-demand $29.3871/h (0.3500x)"
    )

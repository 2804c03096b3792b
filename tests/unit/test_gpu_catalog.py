"""athanor.reference.gpus: the unit cost of dense FP16 compute, by hand and through the catalog.

Expected values are computed by hand from the figures in include/athanor/reference/data/.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from athanor.reference import gpus


def test_unit_cost_is_hourly_price_times_24_over_gpus_times_dense_fp16_tflops() -> None:
    # p4d.24xlarge: 21.96 $/h x 24 / (8 x 312 TFLOPS) = 527.04 / 2,496 = 0.211154 $/TFLOPS-day.
    assert gpus.usd_per_tflops_day(Decimal("21.96"), 8, 312) == pytest.approx(0.2111538, rel=1e-6)
    # p5.48xlarge: 55.04 x 24 / (8 x 989) = 1,320.96 / 7,912 = 0.166956.
    assert gpus.usd_per_tflops_day(55.04, 8, 989) == pytest.approx(0.1669565, rel=1e-6)
    # A GPU without a TFLOPS figure has no unit cost (A10G: none in the stored sources).
    assert gpus.usd_per_tflops_day(5.67, 4, None) is None

    # The catalog computes the same from its files: reference region (first price row) of each type.
    rows = {(r.instance.instance_type, r.price.region): r for r in gpus.catalog() if r.price is not None}
    p4d = rows[("p4d.24xlarge", "us-east-1")]
    assert (p4d.instance.gpu_count, p4d.gpu.fp16_dense_tflops, p4d.price.on_demand_usd_per_h) == (
        8,
        312.0,
        Decimal("21.96"),
    )
    assert p4d.usd_per_tflops_day == pytest.approx(0.2111538, rel=1e-6)
    assert gpus.price("p4d.24xlarge").region == "us-east-1"
    # g2-standard-4: (0.14679 machine + 0.56004 L4) x 24 / (1 x 121) = 16.96392 / 121 = 0.140198.
    assert rows[("g2-standard-4", "us-central1")].usd_per_tflops_day == pytest.approx(0.1401977, rel=1e-6)
    # Azure ND A100 v4 (8 x A100 40GB) in East US: 27.197 x 24 / (8 x 312) = 652.728 / 2,496 = 0.261510.
    assert rows[("Standard_ND96asr_v4", "eastus")].usd_per_tflops_day == pytest.approx(0.2615096, rel=1e-6)
    assert rows[("g5.12xlarge", "us-east-1")].usd_per_tflops_day is None


def test_the_gaps_filled_from_public_sources() -> None:
    rows = {(r.instance.instance_type, r.price.region): r for r in gpus.catalog() if r.price is not None}
    # H100 NVL: NVIDIA's 1,671 TFLOPS with sparsity, halved (sources.csv h100nvl_flops); FP8 still unknown.
    nvl = gpus.gpu("H100-NVL-94GB")
    assert (nvl.fp16_dense_tflops, nvl.fp8_dense_tflops) == (835.5, None)
    # Azure NC40ads H100 v5 (1 x H100 NVL) in East US: 6.98 x 24 / 835.5 = 167.52 / 835.5 = 0.200503.
    assert rows[("Standard_NC40ads_H100_v5", "eastus")].usd_per_tflops_day == pytest.approx(
        0.2005027, rel=1e-6
    )
    # g6e.12xlarge (4 x L40S at 362.05): 10.49264 x 24 / (4 x 362.05) = 251.82336 / 1,448.2 = 0.173887.
    g6e = rows[("g6e.12xlarge", "us-east-1")]
    assert g6e.price.on_demand_usd_per_h == Decimal("10.49264")
    assert g6e.usd_per_tflops_day == pytest.approx(0.1738871, rel=1e-6)
    # The 13 AWS sizes priced from the SkyPilot catalog, us-east-1 first (the reference region), then us-west-2.
    added = {
        "g5.4xlarge": "1.624", "g5.8xlarge": "2.448", "g5.24xlarge": "8.144",
        "g6.2xlarge": "0.9776", "g6.4xlarge": "1.3232", "g6.16xlarge": "3.3968", "g6.24xlarge": "6.6752",
        "g6e.2xlarge": "2.24208", "g6e.12xlarge": "10.49264", "g6e.16xlarge": "7.57719",
        "g6e.24xlarge": "15.06559", "trn1.2xlarge": "1.34375", "trn1n.32xlarge": "24.78",
    }  # fmt: skip
    for instance_type, usd in added.items():
        assert gpus.price(instance_type).region == "us-east-1", instance_type
        for region in ("us-east-1", "us-west-2"):
            price = next(p for p in gpus.prices(instance_type) if p.region == region)
            assert (price.on_demand_usd_per_h, price.on_demand_source) == (Decimal(usd), "skypilot_aws")
    # p5e.48xlarge is sold as capacity blocks: no on-demand price, and none is made up; its
    # block rate is AWS's 6.866 $ per accelerator-hour (from 2026-10-07) x 8 GPUs = 54.928.
    p5e = gpus.price("p5e.48xlarge")
    assert (p5e.on_demand_usd_per_h, p5e.purchase_options) == (None, ("capacity_block",))
    assert p5e.capacity_block_usd_per_h == Decimal("6.866") * 8 and not p5e.sold_on_demand
    # A10G: the public figures disagree and none is NVIDIA's (README): still empty.
    assert gpus.gpu("A10G").fp16_dense_tflops is None

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

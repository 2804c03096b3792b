"""The bridge from warehouse to recommenders: commitments held and their expiry, mix wording."""

from __future__ import annotations

from datetime import datetime

from athanor.recommend.nightly import commitments_held, mix_words


def _reserved_hour(con, hour: int, instance_type: str, end: str | None) -> None:
    con.execute(
        """insert into billing_facts (load_id, source_file, source_row, source_format, billing_account_id,
               billing_currency, billing_period_start, billing_period_end, charge_period_start,
               charge_period_end, charge_category, billed_cost, effective_cost, region_id,
               commitment_discount_id, x_instance_type, x_instance_family, x_pricing_model, x_usage_hours,
               x_commitment_end)
           values ('L', 'f.csv', ?, 'focus', 'a', 'USD', '2026-11-01', '2026-12-01',
                   timestamp '2026-11-01' + to_hours(?), timestamp '2026-11-01' + to_hours(? + 1), 'Usage',
                   0, 13.176, 'us-east-1', 'ri-1', ?, split_part(?, '.', 1), 'reserved', 1,
                   ?)""",
        [hour, hour, hour, instance_type, instance_type, end],
    )


def test_commitments_held_average_units_and_hours_to_expiry(warehouse) -> None:
    # One p4d.24xlarge reserved for 12 of the 24 window hours: 0.5 units on average.
    for hour in range(12):
        _reserved_hour(warehouse, hour, "p4d.24xlarge", "2026-11-03T00:00:00Z")
    held = commitments_held(warehouse, datetime(2026, 11, 1), datetime(2026, 11, 2))
    # Expiry 2026-11-03 00:00 is 24 h after the window's end (2026-11-02 00:00).
    assert held == {"p4d/us-east-1": [(0.5, 24.0)]}


def test_a_commitment_without_end_date_outlasts_the_horizon(warehouse) -> None:
    # g5.12xlarge is a quarter of the g5 reference size (96 / 384 normalisation units).
    for hour in range(24):
        _reserved_hour(warehouse, hour, "g5.12xlarge", None)
    held = commitments_held(warehouse, datetime(2026, 11, 1), datetime(2026, 11, 2))
    assert held == {"g5/us-east-1": [(0.25, 8760.0)]}


def test_mix_words_in_console_order() -> None:
    shares = {"spot": 0.3, "on_demand": 0.04, "reserved": 0.52, "savings_plan": 0.14}
    assert mix_words(shares) == "52 % reserved / 14 % savings plan / 30 % spot / 4 % on-demand"

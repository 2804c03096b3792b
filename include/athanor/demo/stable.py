"""Small exact helpers of the demo generators: calendar steps in UTC seconds, micro-dollar
rounding, and ids and uniform numbers hashed from their parts (the same on every machine).
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import numpy as np
import pandas as pd

from athanor.demo.lines import MICRO


def epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def iso_utc(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def to_micro(amount: Decimal) -> int:
    return int((amount * MICRO).to_integral_value())


def round_div(numerator: np.ndarray | int, denominator: int) -> np.ndarray | int:
    """Half-up rounded integer division of non-negative integers (exact money rounding)."""
    return (numerator * 2 + denominator) // (2 * denominator)


def digest(*parts: object, size: int = 8) -> bytes:
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=size).digest()


def unit_hash(*parts: object) -> float:
    """A uniform number in [0, 1) from the parts (stable across runs and platforms)."""
    return int.from_bytes(digest(*parts), "big") / 2.0**64


def instance_id(*parts: object) -> str:
    return "i-0" + digest(*parts).hex()[:16]


def sku(*parts: object) -> str:
    return base64.b32encode(digest("sku", *parts, size=10)).decode()[:16]


def uuid_of(*parts: object) -> str:
    h = digest(*parts, size=16).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def dollars(micro: int) -> str:
    return format(Decimal(micro).scaleb(-6).normalize(), "f")


def period_bounds(hour_s: np.ndarray | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Billing period (calendar month) start and end, in seconds, of each timestamp."""
    months = pd.to_datetime(np.asarray(hour_s), unit="s").to_numpy().astype("datetime64[M]")
    return months.astype("datetime64[s]").astype(np.int64), (months + 1).astype("datetime64[s]").astype(
        np.int64
    )

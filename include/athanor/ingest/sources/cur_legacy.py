"""AWS legacy Cost and Usage Report: `lineItem/UsageStartDate` headers, CSV or CSV.gz, often multi-part.

Its columns are the CUR 2.0 columns under older names, so it is read under the
CUR 2.0 names (camelCase -> snake_case, the way AWS itself renamed them:
`reservation/ReservationARN` -> `reservation_reservation_a_r_n`) and staged by the
same query. `resourceTags/*` columns become the CUR 2.0 `resource_tags` map.
"""

from __future__ import annotations

import re

from athanor.ingest.sources import BillingFormat, cur2


def snake(name: str) -> str:
    """'lineItem/UsageStartDate' -> 'line_item_usage_start_date' (each capital starts a word)."""
    return re.sub(r"(?<!^)(?<!_)([A-Z])", r"_\1", name.replace("/", "_")).lower()


def resolve(columns: list[str], known: tuple[str, ...]) -> dict[str, str]:
    wanted = set(known)
    found: dict[str, str] = {}
    for raw in columns:
        name = snake(raw)
        if name in wanted and name not in found:
            found[name] = raw
    return found


FORMAT = BillingFormat(
    name="cur_legacy",
    description="AWS legacy CUR",
    signature=frozenset({"bill/PayerAccountId", "lineItem/UsageStartDate", "lineItem/UnblendedCost"}),
    required=cur2.REQUIRED,
    known=cur2.KNOWN,
    money=cur2.MONEY,
    timestamps=cur2.TIMESTAMPS,
    not_null=cur2.REQUIRED,
    currency_column="line_item_currency_code",
    file_total=cur2.FILE_TOTAL,
    periods=cur2.FORMAT.periods,
    resolve=resolve,
    nested=(("resource_tags", "resourceTags/"),),
    maps=cur2.MAPS,
    key_prefixes=cur2.TAG_KEY_PREFIXES,
    keep_extras=False,
    typed_source=True,
    staging="cur2",
)

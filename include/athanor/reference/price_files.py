"""Recorded price files, in each provider's own format, read into commitment-rate rows.

One reader for what a price-list pull returns, so the rows of `data/commitment_rates.csv` are
built by code, not typed in (`python -m athanor.reference.price_files`, `main` below;
`athanor gpu-catalog --refresh` reads list prices only and does not write this table):

- AWS Price List offers: a bulk offer file (``{"products": {sku: ...}, "terms": {"OnDemand":
  {sku: ...}, "Reserved": {sku: ...}}}``) or the Price List Query API's ``PriceList`` items
  (``{"product": ..., "terms": ...}``, boto3 ``pricing.get_products``). On-demand terms give the
  on-demand rate; Reserved terms (``LeaseContractLength`` 1yr/3yr, ``OfferingClass``
  standard/convertible, ``PurchaseOption``) give Standard and Convertible RIs, their upfront fee
  (unit ``Quantity``) amortised over the term's hours plus the hourly fee (unit ``Hrs``).
- AWS Savings Plans rate files (``savingsPlan/v1.0/aws/AWSComputeSavingsPlan/.../index.json``):
  ``products`` (productFamily EC2InstanceSavingsPlans, ComputeSavingsPlans,
  SageMakerSavingsPlans; attributes purchaseOption, purchaseTerm) and ``terms.savingsPlan``
  (rates per discounted usage type: ``BoxUsage:p5.48xlarge`` for EC2, ``Train:ml.p4d.24xlarge``
  and the like for SageMaker). A Savings Plan rate is hourly with no upfront part for No Upfront.
- Azure Retail Prices API pages (``{"Items": [...]}``): ``type`` Consumption (on-demand, and its
  ``savingsPlan`` list of 1- and 3-year rates in API version 2023-01-01-preview) and Reservation
  (``reservationTerm`` "1 Year" / "3 Years", ``retailPrice`` the whole term per VM).

Only Linux, shared-tenancy, used-capacity on-demand products count (a Windows or Capacity Block
row of the same type would corrupt the rate). A commitment rate is kept with the on-demand rate of
the same type and region from the same documents; one without it is a problem, reported with the
file and the item, and left out while the rest load.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from athanor.reference.commitment_rates import COLUMNS, CommitmentRate

log = logging.getLogger(__name__)

TERM_HOURS = {12: 8760, 36: 26280}  # 365 and 1095 days, as AWS and Azure count a term
_AWS_TERMS = {"1yr": 12, "3yr": 36, "1 yr": 12, "3 yr": 36}
_AWS_PAYMENT = {
    "No Upfront": "no_upfront",
    "Partial Upfront": "partial_upfront",
    "All Upfront": "all_upfront",
}
_AWS_RI_CLASS = {"standard": "standard_ri", "convertible": "convertible_ri"}
_SP_FAMILY = {
    "EC2InstanceSavingsPlans": "ec2_instance_sp",
    "ComputeSavingsPlans": "compute_sp",
    "SageMakerSavingsPlans": "sagemaker_sp",
}
_AZURE_TERMS = {"1 Year": 12, "3 Years": 36}
# The AWS region code of a Savings Plans usage-type prefix ('USE1-BoxUsage:...'); no prefix is us-east-1.
_AWS_USAGE_PREFIX = {
    "": "us-east-1", "USE1": "us-east-1", "USE2": "us-east-2", "USW1": "us-west-1", "USW2": "us-west-2",
    "EUC1": "eu-central-1", "EU": "eu-west-1", "EUW1": "eu-west-1", "EUW2": "eu-west-2", "APN1": "ap-northeast-1",
}  # fmt: skip


@dataclass(frozen=True)
class PriceFileProblem:
    """A price item that could not become a row: the file, the item and the rule it broke."""

    file: str
    item: str
    rule: str

    def __str__(self) -> str:
        return f"{self.file} item {self.item}: {self.rule}"


@dataclass
class PriceFileRates:
    """What a set of recorded price files gives: rates, on-demand rates seen, and problems."""

    rates: list[CommitmentRate] = field(default_factory=list)
    on_demand: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (provider, type, region)
    problems: list[PriceFileProblem] = field(default_factory=list)


@dataclass(frozen=True)
class _Pending:
    """A commitment price waiting for the on-demand rate of its type and region."""

    provider: str
    instance_type: str
    region: str
    offer: str
    term_months: int
    payment_option: str
    effective_usd_per_h: float
    file: str
    item: str


def _aws_products(doc: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(product, terms of that product) from a bulk offer file or Query API PriceList items."""
    if isinstance(doc.get("PriceList"), list):
        for item in doc["PriceList"]:
            entry = json.loads(item) if isinstance(item, str) else item
            yield entry.get("product", {}), entry.get("terms", {})
        return
    if "product" in doc:
        yield doc["product"], doc.get("terms", {})
        return
    terms = doc.get("terms", {})
    for sku, product in (doc.get("products") or {}).items():
        yield product, {kind: (by_sku or {}).get(sku, {}) for kind, by_sku in terms.items()}


def is_linux_shared_used(attrs: Mapping[str, Any]) -> bool:
    """An AWS Price List EC2 product that prices a plain instance hour: Linux, shared tenancy, no
    pre-installed software or licence, used capacity (a capacity reservation's unused or allocated
    hours are other products). The market option (on-demand or Capacity Block) is the caller's."""
    return (
        attrs.get("operatingSystem") == "Linux"
        and attrs.get("tenancy", "Shared") == "Shared"
        and attrs.get("preInstalledSw", "NA") == "NA"
        and attrs.get("capacitystatus", "Used") == "Used"
        and attrs.get("licenseModel", "No License required") == "No License required"
    )


class _BadPrice(ValueError):
    """A price field missing or not a number: its item is a problem, the rest of the file loads."""


def _price(item: Mapping[str, Any], *path: str) -> float:
    """The number at `path` in `item` (e.g. pricePerUnit.USD); _BadPrice names the field."""
    value: Any = item
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            raise _BadPrice(f"{'.'.join(path)} missing")
        value = value[key]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _BadPrice(f"{'.'.join(path)} not a number ({value!r})") from None


def _usd(dimension: Mapping[str, Any]) -> float:
    return _price(dimension, "pricePerUnit", "USD")


def _aws_offer(doc: Mapping[str, Any], name: str, out: PriceFileRates, pending: list[_Pending]) -> None:
    for product, terms in _aws_products(doc):
        attrs = product.get("attributes", {})
        itype, region = attrs.get("instanceType"), attrs.get("regionCode")
        on_demand_market = attrs.get("marketoption", "OnDemand") == "OnDemand"
        if not itype or not region or not on_demand_market or not is_linux_shared_used(attrs):
            continue
        sku = str(product.get("sku", "?"))
        for term in (terms.get("OnDemand") or {}).values():
            hourly = [d for d in term.get("priceDimensions", {}).values() if d.get("unit") == "Hrs"]
            if len(hourly) != 1:
                out.problems.append(PriceFileProblem(name, sku, "on-demand term without one hourly price"))
                continue
            try:
                out.on_demand[("aws", itype, region)] = _usd(hourly[0])
            except _BadPrice as e:
                out.problems.append(PriceFileProblem(name, sku, str(e)))
        for code, term in (terms.get("Reserved") or {}).items():
            ta = term.get("termAttributes", {})
            months = _AWS_TERMS.get(ta.get("LeaseContractLength", ""))
            offer = _AWS_RI_CLASS.get(ta.get("OfferingClass", ""))
            payment = _AWS_PAYMENT.get(ta.get("PurchaseOption", ""))
            if months is None or offer is None or payment is None:
                out.problems.append(PriceFileProblem(name, code, f"unknown reserved term {dict(ta)}"))
                continue
            dims = term.get("priceDimensions", {}).values()
            try:
                upfront = sum(_usd(d) for d in dims if d.get("unit") == "Quantity")
                hourly = sum(_usd(d) for d in dims if d.get("unit") == "Hrs")
            except _BadPrice as e:
                out.problems.append(PriceFileProblem(name, code, str(e)))
                continue
            effective = hourly + upfront / TERM_HOURS[months]
            pending.append(_Pending("aws", itype, region, offer, months, payment, effective, name, code))


def _sp_usage(usage_type: str, service: str) -> tuple[str, str] | None:
    """(instance type, region) of a Savings Plans discounted usage type; None if not instance usage.
    EC2: '[PREFIX-]BoxUsage:p5.48xlarge'. SageMaker: '[PREFIX-]Train:ml.p4d.24xlarge',
    'Host:ml...', 'Notebk:ml...', 'Processing:ml...' (the instance type keeps its 'ml.')."""
    head, _, itype = usage_type.partition(":")
    prefix, _, kind = head.rpartition("-")
    if not itype:
        return None
    if service == "AmazonEC2" and kind != "BoxUsage":
        return None
    if service == "AmazonSageMaker" and not itype.startswith("ml."):
        return None
    region = _AWS_USAGE_PREFIX.get(prefix)
    return None if region is None else (itype, region)


def _aws_savings_plans(
    doc: Mapping[str, Any], name: str, pending: list[_Pending], out: PriceFileRates
) -> None:
    products = {str(p.get("sku")): p for p in doc.get("products", [])}
    for term in doc.get("terms", {}).get("savingsPlan", []):
        sku = str(term.get("sku"))
        product = products.get(sku)
        if product is None:
            out.problems.append(PriceFileProblem(name, sku, "savings plan term without its product"))
            continue
        offer = _SP_FAMILY.get(str(product.get("productFamily")))
        attrs = product.get("attributes", {})
        months = _AWS_TERMS.get(str(attrs.get("purchaseTerm", "")))
        payment = _AWS_PAYMENT.get(str(attrs.get("purchaseOption", "")))
        if offer is None or months is None or payment is None:
            out.problems.append(
                PriceFileProblem(name, sku, f"unknown savings plan {product.get('productFamily')}")
            )
            continue
        for rate in term.get("rates", []):
            # Linux only: EC2's Windows and licensed operations are 'RunInstances:0002' and the like.
            service = str(rate.get("discountedServiceCode", ""))
            if service == "AmazonEC2" and rate.get("discountedOperation") != "RunInstances":
                continue
            found = _sp_usage(str(rate.get("discountedUsageType", "")), service)
            if found is None:
                continue
            if rate.get("discountedRate", {}).get("currency") != "USD":
                out.problems.append(PriceFileProblem(name, str(rate.get("rateCode")), "rate not in USD"))
                continue
            try:
                price = _price(rate, "discountedRate", "price")
            except _BadPrice as e:
                out.problems.append(PriceFileProblem(name, str(rate.get("rateCode")), str(e)))
                continue
            pending.append(
                _Pending("aws", *found, offer, months, payment, price, name, str(rate.get("rateCode")))
            )


def _azure_retail(doc: Mapping[str, Any], name: str, out: PriceFileRates, pending: list[_Pending]) -> None:
    for i, item in enumerate(doc.get("Items", []), start=1):
        itype, region = item.get("armSkuName"), item.get("armRegionName")
        where = f"{i} ({itype}, {region}, {item.get('type')}, {item.get('reservationTerm', '')})"
        sku_name, product = str(item.get("skuName", "")), str(item.get("productName", ""))
        # Linux VMs only: Spot, Low Priority and Windows meters of the same size price otherwise.
        if not itype or not region or item.get("serviceName") != "Virtual Machines":
            continue
        if "Spot" in sku_name or "Low Priority" in sku_name or product.endswith("Windows"):
            continue
        if item.get("currencyCode") != "USD":
            out.problems.append(PriceFileProblem(name, where, "currencyCode must be USD"))
            continue
        if item.get("type") == "Consumption":
            if item.get("unitOfMeasure") != "1 Hour":
                out.problems.append(PriceFileProblem(name, where, "a VM's pay-as-you-go unit must be 1 Hour"))
                continue
            try:
                out.on_demand[("azure", itype, region)] = _price(item, "retailPrice")
            except _BadPrice as e:
                out.problems.append(PriceFileProblem(name, where, str(e)))
                continue
            for plan in item.get("savingsPlan") or []:
                months = _AZURE_TERMS.get(str(plan.get("term")))
                if months is not None:  # hourly savings-plan rate
                    try:
                        rate = _price(plan, "retailPrice")
                    except _BadPrice as e:
                        out.problems.append(PriceFileProblem(name, where, f"savingsPlan {e}"))
                        continue
                    pending.append(
                        _Pending(
                            "azure",
                            itype,
                            region,
                            "azure_savings_plan",
                            months,
                            "no_upfront",
                            rate,
                            name,
                            where,
                        )
                    )
        elif item.get("type") == "Reservation":
            months = _AZURE_TERMS.get(str(item.get("reservationTerm")))
            if months is None:  # e.g. '5 Years': no 60-month term here
                log.info("%s item %s: reservation term not 1 or 3 years, skipped", name, where)
                continue
            # The API's unit says '1 Hour' but a reservation's price is the whole term per VM;
            # monthly and upfront payment cost the same, so one row (no_upfront: billed monthly).
            try:
                hourly = _price(item, "retailPrice") / TERM_HOURS[months]
            except _BadPrice as e:
                out.problems.append(PriceFileProblem(name, where, str(e)))
                continue
            pending.append(
                _Pending(
                    "azure", itype, region, "azure_reservation", months, "no_upfront", hourly, name, where
                )
            )


def rates_from_documents(
    documents: Sequence[tuple[str, Mapping[str, Any]]], source_id: str, as_of: date
) -> PriceFileRates:
    """Commitment rates of the named price documents (name, parsed JSON), each with the on-demand
    rate of its type and region found in the same documents; `source_id` and `as_of` stamp every
    row. A rate without an on-demand rate, or above it, is a problem and left out."""
    out, pending = PriceFileRates(), []
    for name, doc in documents:
        if "Items" in doc:
            _azure_retail(doc, name, out, pending)
        elif "savingsPlan" in (doc.get("terms") or {}):
            _aws_savings_plans(doc, name, pending, out)
        elif "products" in doc or "PriceList" in doc or "product" in doc:
            _aws_offer(doc, name, out, pending)
        else:
            out.problems.append(
                PriceFileProblem(name, "-", "not an AWS offer, Savings Plans or Azure Retail Prices document")
            )
    for p in pending:
        # SageMaker's ml.* rates pair with SageMaker's own on-demand rate where the documents give it.
        od = out.on_demand.get((p.provider, p.instance_type, p.region))
        if od is None:
            out.problems.append(
                PriceFileProblem(p.file, p.item, f"no on-demand rate of {p.instance_type} in {p.region}")
            )
        elif p.effective_usd_per_h > od:
            out.problems.append(PriceFileProblem(p.file, p.item, "commitment rate above on-demand"))
        else:
            out.rates.append(
                CommitmentRate(p.provider, p.instance_type, p.region, p.offer, p.term_months, p.payment_option,
                               round(p.effective_usd_per_h, 6), od, source_id, as_of)
            )  # fmt: skip
    for problem in out.problems:
        log.warning("price file rejected: %s", problem)
    log.info(
        "price files: %d documents read, %d rates, %d rejected",
        len(documents),
        len(out.rates),
        len(out.problems),
    )
    return out


def rates_from_files(paths: Iterable[Path], source_id: str, as_of: date) -> PriceFileRates:
    """`rates_from_documents` of JSON files on disk; a file that cannot be read or is not JSON is
    a problem, the others load."""
    documents, unreadable = [], []
    for p in paths:
        try:
            documents.append((p.name, json.loads(p.read_text())))
        except json.JSONDecodeError as e:
            unreadable.append(PriceFileProblem(p.name, "-", f"not JSON: {e}"))
        except (OSError, UnicodeDecodeError) as e:
            unreadable.append(
                PriceFileProblem(p.name, "-", f"cannot be read: {getattr(e, 'strerror', None) or e}")
            )
    out = rates_from_documents(documents, source_id, as_of)
    for problem in unreadable:
        log.warning("price file rejected: %s", problem)
    out.problems[:0] = unreadable
    return out


def _row(r: CommitmentRate) -> dict[str, str]:
    return {
        "provider": r.provider, "instance_type": r.instance_type, "region": r.region, "offer": r.offer,
        "term_months": str(r.term_months), "payment_option": r.payment_option,
        "effective_usd_per_h": f"{r.effective_usd_per_h:.6f}", "on_demand_usd_per_h": f"{r.on_demand_usd_per_h:.6f}",
        "source_id": r.source_id, "as_of": r.as_of.isoformat(),
    }  # fmt: skip


def write_commitment_rates(rates: Iterable[CommitmentRate], path: Path) -> int:
    """Merge rates into a commitment_rates.csv: a row of the same provider, type, region, offer,
    term, payment option and source is replaced, every other row kept; returns rows written."""
    new = [_row(r) for r in rates]

    def key(row: Mapping[str, str]) -> tuple[str, ...]:
        return tuple(
            row[c]
            for c in (
                "provider",
                "instance_type",
                "region",
                "offer",
                "term_months",
                "payment_option",
                "source_id",
            )
        )

    replaced = {key(r) for r in new}
    kept: list[dict[str, str]] = []
    if path.exists():
        with path.open(newline="") as f:
            kept = [row for row in csv.DictReader(f) if key(row) not in replaced]
    rows = kept + new
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def with_source(rates: Iterable[CommitmentRate], source_id: str) -> list[CommitmentRate]:
    """The same rates under another source id (one pull filed under another source)."""
    return [replace(r, source_id=source_id) for r in rates]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m athanor.reference.price_files --source-id ID --as-of DATE FILE...`: read the
    recorded price files and merge their rates into commitment_rates.csv (or --out); prints
    what it wrote and every rejected item, and exits 1 if any was rejected."""
    import argparse

    from athanor.reference.paths import COMMITMENT_RATES_CSV

    parser = argparse.ArgumentParser(prog="python -m athanor.reference.price_files")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--source-id", required=True, help="a source_id of sources.csv beside --out")
    parser.add_argument("--as-of", required=True, type=date.fromisoformat, help="the files' date, YYYY-MM-DD")
    parser.add_argument("--out", type=Path, default=COMMITMENT_RATES_CSV)
    args = parser.parse_args(argv)
    got = rates_from_files(args.files, args.source_id, args.as_of)
    rows = write_commitment_rates(got.rates, args.out)
    print(f"{len(got.rates)} rates from {len(args.files)} files into {args.out.name} ({rows} rows)")
    for problem in got.problems:
        print(f"rejected: {problem}")
    return 1 if got.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

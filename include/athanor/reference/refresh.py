"""`athanor gpu-catalog --refresh`: the price catalogue read again from the providers' price APIs.

Three public APIs, each asked only for the catalogue's own instance types:

- AWS Price List Query API (boto3 ``pricing``, ``get_products`` on ``AmazonEC2`` with the types
  as one ``ANY_OF`` filter, Linux, shared tenancy, no pre-installed software; ``NextToken``
  paging). On-demand hourly prices; a product whose ``marketoption`` is ``CapacityBlock`` means the
  type is sold as EC2 Capacity Blocks there (its usage is listed at $0.00, the block being paid up
  front: the catalogue keeps the block rate of AWS's price page); a Reserved term means the type
  can be reserved. The Price List
  has no spot prices: a row keeps its spot figure and spot option.
- Azure Retail Prices API (``https://prices.azure.com/api/retail/prices`` with an OData
  ``$filter`` on the VM sizes, ``NextPageLink`` paging). Linux pay-as-you-go (``Consumption``),
  ``Spot`` meters, ``Reservation`` terms; Windows and Low Priority meters are not read.
- GCP Cloud Billing Catalog API (``services/6F81-5844-456A/skus``, ``pageToken`` paging; it
  needs an API key, ``ATHANOR_GCP_API_KEY``). A machine's price is its GPU, vCPU and memory SKUs
  summed with its shape (``data/gcp_machine_shapes.csv``); on-demand and Spot (Preemptible);
  committed-use SKUs mean it can be committed. SKUs are generic, so they cannot say that a shape
  is not sold on demand: a row the catalogue marks so (a3-highgpu-1g/2g) stays so.

Every request goes through one small injectable fetcher (``Fetcher``): the network one here,
or ``RecordedFetcher``, which replays responses recorded in the APIs' own shapes (the tests'
``tests/fixtures/price_apis/``). Nothing is written until every provider asked has answered: a
fetch that fails ends the refresh with one line, the catalogue untouched.

The refreshed catalogue is a whole ``prices.csv`` (with the ``sources.csv`` rows it cites) in
the catalogue override folder (``athanor.reference.paths``); the packaged file is never
rewritten. A row the answers leave as it was keeps its date and sources, so a second run with
the same answers writes nothing and says so.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from athanor.reference import gpus as catalog
from athanor.reference.paths import DATA_DIR, catalogue_override_dir
from athanor.reference.price_files import is_linux_shared_used

log = logging.getLogger(__name__)

PROVIDERS = ("aws", "azure", "gcp")
API = {"aws": "aws_pricing", "azure": "azure_retail", "gcp": "gcp_billing"}
API_NAMES = {
    "aws_pricing": "the AWS Price List API",
    "azure_retail": "the Azure Retail Prices API",
    "gcp_billing": "the GCP Cloud Billing Catalog API",
}
AZURE_URL = "https://prices.azure.com/api/retail/prices"
AZURE_API_VERSION = "2023-01-01-preview"
GCP_COMPUTE_SERVICE = "services/6F81-5844-456A"
GCP_URL = f"https://cloudbilling.googleapis.com/v1/{GCP_COMPUTE_SERVICE}/skus"
GCP_KEY_VARIABLE = "ATHANOR_GCP_API_KEY"
GCP_SHAPES_CSV = DATA_DIR / "gcp_machine_shapes.csv"
# A runaway pager (a link that points to itself) stops here rather than looping.
MAX_PAGES = 500
# The options a price API cannot see, kept from the previous row: AWS's Price List has no spot;
# none of the three lists GCP's flex-start.
_UNSEEN = {"aws": {"spot", "flex_start"}, "azure": {"flex_start"}, "gcp": {"flex_start"}}
_PRICE_FIELDS = ("on_demand_usd_per_h", "spot_usd_per_h", "capacity_block_usd_per_h")


class FetchError(RuntimeError):
    """A price API could not be asked: the message is the one line the CLI prints."""


class Fetcher(Protocol):
    """One request to one price API, its JSON answer. ``api`` is one of ``API``'s values."""

    def __call__(self, api: str, request: Mapping[str, Any]) -> Mapping[str, Any]: ...


# --- fetchers ------------------------------------------------------------------------------------


def network_fetcher(*, gcp_api_key: str | None = None, timeout_s: float = 60.0) -> Fetcher:
    """The fetcher that asks the APIs over the network (boto3 for AWS, HTTPS GET for the others)."""
    aws_client: list[Any] = []

    def fetch(api: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            if api == "aws_pricing":
                import botocore.exceptions

                try:
                    if not aws_client:
                        import boto3

                        # The Price List Query API is served from us-east-1 (and ap-south-1) only.
                        aws_client.append(boto3.client("pricing", region_name="us-east-1"))
                    args = {k: v for k, v in request.items() if k != "page"}
                    if request.get("page"):
                        args["NextToken"] = request["page"]
                    return aws_client[0].get_products(**args)
                except botocore.exceptions.NoCredentialsError as e:
                    raise FetchError(f"{API_NAMES[api]} needs AWS credentials: {e}") from None
                except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
                    raise FetchError(f"cannot reach {API_NAMES[api]}: {e}") from None
            url = str(request["url"])
            if api == "gcp_billing":
                if not gcp_api_key:
                    raise FetchError(f"{API_NAMES[api]} needs an API key: set {GCP_KEY_VARIABLE}")
                url += ("&" if "?" in url else "?") + urllib.parse.urlencode({"key": gcp_api_key})
            with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (https only)
                return json.loads(response.read())
        except FetchError:
            raise
        except (OSError, urllib.error.URLError, ValueError) as e:
            raise FetchError(f"cannot reach {API_NAMES[api]}: {e}") from None

    return fetch


@dataclass
class RecordedFetcher:
    """Replays recorded API answers: every ``*.json`` in ``folder`` is
    ``{"api": ..., "page": ..., "response": {...}}`` (``page`` "" for the first page, else the
    NextToken, NextPageLink or pageToken that asks for it). Requests are kept in ``requests``."""

    folder: Path
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._answers: dict[tuple[str, str], Mapping[str, Any]] = {}
        for file in sorted(self.folder.glob("*.json")):
            doc = json.loads(file.read_text())
            self._answers[(doc["api"], doc.get("page") or "")] = doc["response"]

    def __call__(self, api: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        self.requests.append((api, dict(request)))
        key = (api, str(request.get("page") or ""))
        if key not in self._answers:
            raise FetchError(f"cannot reach {API_NAMES[api]}: no recorded answer for page {key[1]!r}")
        return self._answers[key]


# --- what the APIs say ---------------------------------------------------------------------------


@dataclass
class Quote:
    """One instance type in one region as one API priced it."""

    provider: str
    instance_type: str
    region: str
    on_demand: Decimal | None = None
    spot: Decimal | None = None
    capacity_block: Decimal | None = None
    options: set[str] = field(default_factory=set)


def _quote(quotes: dict[tuple[str, str], Quote], provider: str, itype: str, region: str) -> Quote:
    return quotes.setdefault((itype, region), Quote(provider, itype, region))


def _pages(
    fetch: Fetcher, api: str, first: Mapping[str, Any], next_page: Callable[[Mapping[str, Any]], str | None]
) -> Iterator[Mapping[str, Any]]:
    """Each page's answer, following `next_page` until it gives none (at most MAX_PAGES)."""
    page: str | None = ""
    for _ in range(MAX_PAGES):
        answer = fetch(api, {**first, "page": page or ""})
        yield answer
        page = next_page(answer)
        if not page:
            return
    raise FetchError(f"{API_NAMES[api]}: more than {MAX_PAGES} pages, stopped")


def _positive(text: Any) -> Decimal | None:
    value = Decimal(str(text))
    return value if value > 0 else None


def aws_request(types: Sequence[str]) -> dict[str, Any]:
    def term(field_: str, value: str) -> dict[str, str]:
        return {"Type": "TERM_MATCH", "Field": field_, "Value": value}

    return {
        "ServiceCode": "AmazonEC2",
        "FormatVersion": "aws_v1",
        "Filters": [
            {"Type": "ANY_OF", "Field": "instanceType", "Value": ",".join(types)},
            term("operatingSystem", "Linux"),
            term("tenancy", "Shared"),
            term("preInstalledSw", "NA"),
            term("licenseModel", "No License required"),
        ],
    }


def aws_quotes(fetch: Fetcher, types: Sequence[str]) -> dict[tuple[str, str], Quote]:
    wanted = {t.lower(): t for t in types}
    quotes: dict[tuple[str, str], Quote] = {}
    for answer in _pages(fetch, "aws_pricing", aws_request(types), lambda a: a.get("NextToken")):
        for item in answer.get("PriceList", []):
            entry = json.loads(item) if isinstance(item, str) else item
            attrs = entry.get("product", {}).get("attributes", {})
            itype = wanted.get(str(attrs.get("instanceType", "")).lower())
            region = attrs.get("regionCode")
            # Linux, shared tenancy, no pre-installed software, as asked (a recorded answer is held to
            # it too); a capacity reservation's unused or allocated hours are other products.
            if itype is None or not region or not is_linux_shared_used(attrs):
                continue
            terms = entry.get("terms", {})
            hourly = [
                _positive(d["pricePerUnit"]["USD"])
                for t in (terms.get("OnDemand") or {}).values()
                for d in t.get("priceDimensions", {}).values()
                if d.get("unit") == "Hrs" and "USD" in d.get("pricePerUnit", {})
            ]
            price = next((h for h in hourly if h is not None), None)
            q = _quote(quotes, "aws", itype, region)
            if attrs.get("marketoption") == "CapacityBlock":
                # Sold as Capacity Blocks here. The Price List bills a block's instance hours at
                # $0.00 (the block is paid up front at its offering's price): a positive rate is
                # taken, a zero one leaves the catalogue's block rate (AWS's price page) as it is,
                # and is never read as a free on-demand instance.
                q.options.add("capacity_block")
                if price is not None:
                    q.capacity_block = price
            elif price is not None:
                q.on_demand, q.options = price, q.options | {"on_demand"}
            if terms.get("Reserved"):
                q.options.add("reservation")
    return {k: q for k, q in quotes.items() if q.options}


def azure_request(types: Sequence[str]) -> dict[str, Any]:
    sizes = " or ".join(f"armSkuName eq '{t}'" for t in types)
    odata = f"serviceName eq 'Virtual Machines' and ({sizes})"
    query = urllib.parse.urlencode({"api-version": AZURE_API_VERSION, "$filter": odata})
    return {"url": f"{AZURE_URL}?{query}"}


def azure_quotes(fetch: Fetcher, types: Sequence[str]) -> dict[tuple[str, str], Quote]:
    wanted = {t.lower(): t for t in types}
    quotes: dict[tuple[str, str], Quote] = {}
    first = azure_request(types)

    def fetch_page(api: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        # The next page is a whole URL (NextPageLink); the first is the filtered one.
        return fetch(api, {**request, "url": request["page"] or first["url"]})

    for answer in _pages(fetch_page, "azure_retail", first, lambda a: a.get("NextPageLink")):
        for item in answer.get("Items", []):
            itype = wanted.get(str(item.get("armSkuName", "")).lower())
            region = item.get("armRegionName")
            sku, product = str(item.get("skuName", "")), str(item.get("productName", ""))
            if itype is None or not region or item.get("serviceName") != "Virtual Machines":
                continue
            # Linux only (Windows meters add a licence); Low Priority is the retired spot.
            if product.endswith("Windows") or "Low Priority" in sku or item.get("currencyCode") != "USD":
                continue
            q = _quote(quotes, "azure", itype, region)
            kind = item.get("type")
            if kind == "Reservation":
                q.options.add("reservation")
            elif kind == "Consumption" and item.get("unitOfMeasure") == "1 Hour":
                price = _positive(item.get("retailPrice", 0))
                if price is None:
                    continue
                if "Spot" in sku:
                    q.spot, q.options = price, q.options | {"spot"}
                else:
                    q.on_demand, q.options = price, q.options | {"on_demand"}
    return {k: q for k, q in quotes.items() if q.options}


@dataclass(frozen=True)
class GcpShape:
    machine_type: str
    vcpus: int
    memory_gib: Decimal
    gpu_sku: str
    core_sku: str
    ram_sku: str


def gcp_shapes() -> dict[str, GcpShape]:
    with GCP_SHAPES_CSV.open(newline="") as f:
        return {
            r["machine_type"]: GcpShape(
                r["machine_type"],
                int(r["vcpus"]),
                Decimal(r["memory_gib"]),
                r["gpu_sku"],
                r["core_sku"],
                r["ram_sku"],
            )
            for r in csv.DictReader(f)
        }


def gcp_request() -> dict[str, Any]:
    return {"url": f"{GCP_URL}?{urllib.parse.urlencode({'currencyCode': 'USD', 'pageSize': 5000})}"}


_SPOT_WORDS = re.compile(r"^Spot Preemptible |^Preemptible | attached to Spot Preemptible VMs")


def _gcp_unit_price(sku: Mapping[str, Any]) -> Decimal | None:
    for info in sku.get("pricingInfo", [])[:1]:
        rates = info.get("pricingExpression", {}).get("tieredRates", [])
        if rates:
            money = rates[-1].get("unitPrice", {})  # past any free tier: the standard rate
            return Decimal(str(money.get("units") or 0)) + Decimal(int(money.get("nanos") or 0)) / Decimal(
                10**9
            )
    return None


def gcp_quotes(fetch: Fetcher, types: Sequence[str]) -> dict[tuple[str, str], Quote]:
    shapes = {t: s for t, s in gcp_shapes().items() if t in set(types)}
    names = {n for s in shapes.values() for n in (s.gpu_sku, s.core_sku, s.ram_sku)}
    # (what, usage, region) -> $ per hour (GPU, vCPU) or per GiB-hour (memory)
    unit: dict[tuple[str, str, str], Decimal] = {}
    committed: set[str] = set()
    first = gcp_request()

    def fetch_page(api: str, request: Mapping[str, Any]) -> Mapping[str, Any]:
        url = first["url"] + (
            f"&{urllib.parse.urlencode({'pageToken': request['page']})}" if request["page"] else ""
        )
        return fetch(api, {**request, "url": url})

    for answer in _pages(fetch_page, "gcp_billing", first, lambda a: a.get("nextPageToken")):
        for sku in answer.get("skus", []):
            category = sku.get("category", {})
            if category.get("resourceFamily") != "Compute":
                continue
            usage = str(category.get("usageType", ""))
            description = str(sku.get("description", ""))
            if usage.startswith("Commit"):
                committed.update(n for n in names if n in description)
                continue
            what = _SPOT_WORDS.sub("", description).split(" running in ")[0].strip()
            price = _gcp_unit_price(sku)
            if what not in names or usage not in ("OnDemand", "Preemptible") or price is None:
                continue
            for region in sku.get("serviceRegions", []):
                unit[(what, usage, region)] = price
    quotes: dict[tuple[str, str], Quote] = {}
    regions = {r for (_, _, r) in unit}
    for itype, shape in shapes.items():
        gpus = catalog.gpu_instance(itype)
        count = 0 if gpus is None else gpus.gpu_count
        for region in sorted(regions):
            for usage in ("OnDemand", "Preemptible"):
                parts = [unit.get((n, usage, region)) for n in (shape.gpu_sku, shape.core_sku, shape.ram_sku)]
                if any(p is None for p in parts):
                    continue
                gpu, core, ram = parts
                price = gpu * count + core * shape.vcpus + ram * shape.memory_gib  # type: ignore[operator]
                q = _quote(quotes, "gcp", itype, region)
                if usage == "OnDemand":
                    q.on_demand, q.options = price, q.options | {"on_demand"}
                else:
                    q.spot, q.options = price, q.options | {"spot"}
            if (itype, region) in quotes and shape.gpu_sku in committed:
                quotes[(itype, region)].options.add("reservation")
    return quotes


QUOTERS = {"aws": aws_quotes, "azure": azure_quotes, "gcp": gcp_quotes}


# --- merging into the catalogue ------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    kind: str  # changed | added | removed
    provider: str
    instance_type: str
    region: str
    what: str  # the price or 'purchase options'
    old: str
    new: str

    def line(self) -> str:
        where = f"{self.provider} {self.instance_type} {self.region}"
        if self.kind == "changed":
            return f"changed: {where} {self.what}: {self.old or '-'} -> {self.new or '-'}"
        shown = self.new if self.kind == "added" else self.old
        return f"{self.kind}: {where} {self.what} {shown}"


@dataclass
class RefreshResult:
    rows: list[dict[str, str]]
    sources: list[dict[str, str]]
    changes: list[Change]
    checked: int  # catalogue rows the answers covered
    kept: list[str]  # notes: types an API did not list, kept as they were
    written: Path | None = None

    def lines(self) -> list[str]:
        out = [c.line() for c in self.changes] + self.kept
        if not self.changes:
            out.append(
                f"no price changed: {self.checked} type x region rows checked, the catalogue is as the "
                "price APIs answer (nothing written)"
            )
        else:
            counts = {k: sum(c.kind == k for c in self.changes) for k in ("changed", "added", "removed")}
            out.append(
                f"{counts['changed']} changed, {counts['added']} added, {counts['removed']} removed; "
                f"written to {self.written}"
            )
        return out


def _text(value: Decimal | None) -> str:
    return "" if value is None else format(value.normalize(), "f")


def _same(a: str, b: str) -> bool:
    return (Decimal(a) == Decimal(b)) if a and b else a == b


def source_row(provider: str, on: date) -> dict[str, str]:
    api = API[provider]
    url = {
        "aws": "https://pricing.us-east-1.amazonaws.com (boto3 pricing get_products)",
        "azure": AZURE_URL,
        "gcp": GCP_URL,
    }
    return {
        "source_id": f"{api}_{on:%Y_%m_%d}",
        "title": f"{API_NAMES[api][4:]} (athanor gpu-catalog --refresh), fetched {on.isoformat()}",
        "url": url[provider],
        "date": on.isoformat(),
        "note": "Linux list prices of the catalogue's instance types; see athanor.reference.refresh for what is read",
    }


def merge(
    rows: Sequence[Mapping[str, str]],
    quotes: Mapping[str, Mapping[tuple[str, str], Quote]],
    on: date,
) -> tuple[list[dict[str, str]], list[Change], int, list[str]]:
    """The catalogue rows after the answers of the providers in ``quotes`` (the others untouched).

    Rows keep their order: a row the answers price is updated in place, one they no longer list
    is removed; a region the catalogue lacks goes after the type's last row (its reference
    region, the first, stays), a type without any row after its provider's last row.
    """
    changes: list[Change] = []
    unanswered: dict[str, list[str]] = {}
    answered: dict[str, dict[str, Quote]] = {}  # instance type -> region -> quote, still to place
    for by_key in quotes.values():
        for (itype, region), q in by_key.items():
            answered.setdefault(itype, {})[region] = q
    checked = 0
    out: list[dict[str, str]] = []
    # GCP types the catalogue marks as sold, but not on demand (in any of its rows): in every region.
    gcp_not_on_demand = {
        r["instance_type"]
        for r in rows
        if r["provider"] == "gcp"
        and r["purchase_options"]
        and "on_demand" not in r["purchase_options"].split(";")
    }
    for r in rows:
        provider, itype = r["provider"], r["instance_type"]
        if provider not in quotes:
            out.append(dict(r))
            continue
        if itype not in answered:
            if itype not in unanswered.get(provider, []):
                unanswered.setdefault(provider, []).append(itype)
            out.append(dict(r))
            continue
        q = answered[itype].pop(r["region"], None)
        if q is None:
            changes.append(Change("removed", provider, itype, r["region"], "row", _row_text(r), ""))
            continue
        checked += 1
        source_id = source_row(provider, on)["source_id"]
        out.append(_updated(r, q, provider, source_id, on, changes, itype in gcp_not_on_demand))
    # What is left: regions (and types) the catalogue lacks.
    for itype, regions in answered.items():
        if not regions:
            continue
        provider = next(iter(regions.values())).provider
        added = []
        for region in sorted(regions, key=lambda reg: (reg not in _PREFERRED_REGIONS, reg)):
            row = _updated(
                _blank(provider, itype, region),
                regions[region],
                provider,
                source_row(provider, on)["source_id"],
                on,
                [],
                itype in gcp_not_on_demand,
            )
            changes.append(Change("added", provider, itype, region, "row", "", _row_text(row)))
            added.append(row)
        same = [i for i, r in enumerate(out) if r["instance_type"] == itype]
        kin = [i for i, r in enumerate(out) if r["provider"] == provider]
        at = (same or kin or [len(out) - 1])[-1] + 1
        out[at:at] = added
    kept = [
        f"kept: {len(types)} {provider} types {API_NAMES[API[provider]]} did not price, as they were: "
        + ", ".join(types)
        for provider, types in unanswered.items()
    ]
    return out, changes, checked, kept


_PREFERRED_REGIONS = ("us-east-1", "eastus", "us-central1")


def _blank(provider: str, itype: str, region: str) -> dict[str, str]:
    return {h: "" for h in catalog.PRICES_HEADER} | {
        "provider": provider,
        "instance_type": itype,
        "region": region,
    }


def _row_text(r: Mapping[str, str]) -> str:
    prices = ", ".join(f"{f.removesuffix('_usd_per_h')} {r[f]}" for f in _PRICE_FIELDS if r.get(f))
    return f"({prices or 'no price'}; {r.get('purchase_options') or 'no purchase option'})"


def _updated(
    old: Mapping[str, str],
    q: Quote,
    provider: str,
    source_id: str,
    on: date,
    changes: list[Change],
    not_on_demand: bool = False,
) -> dict[str, str]:
    prev_options = [o for o in old.get("purchase_options", "").split(";") if o]
    options = set(q.options) | (set(prev_options) & _UNSEEN[provider])
    if not_on_demand:
        # The catalogue says this GCP shape is not sold on demand (a3-highgpu-1g/2g/4g): generic
        # SKUs price it, they do not make it sold. (AWS and Azure price each size: evidence.)
        options.discard("on_demand")
    new = dict(old)
    new["on_demand_usd_per_h"] = (
        _text(q.on_demand) if q.on_demand is not None else old.get("on_demand_usd_per_h", "")
    )
    if q.spot is not None:
        new["spot_usd_per_h"] = _text(q.spot)
    if q.capacity_block is not None:
        new["capacity_block_usd_per_h"] = _text(q.capacity_block)
    new["purchase_options"] = ";".join(o for o in catalog.PURCHASE_OPTIONS if o in options)
    moved = False
    for f in _PRICE_FIELDS:
        if not _same(old.get(f, ""), new[f]):
            moved = True
            what = f.removesuffix("_usd_per_h").replace("_", "-")
            changes.append(
                Change("changed", provider, q.instance_type, q.region, what, old.get(f, ""), new[f])
            )
    if new["purchase_options"] != old.get("purchase_options", ""):
        moved = True
        changes.append(
            Change(
                "changed", provider, q.instance_type, q.region, "purchase options",
                old.get("purchase_options", ""), new["purchase_options"],
            )
        )  # fmt: skip
    if not moved:
        return dict(old)  # the same answer: its date and sources stay, the file does not change
    if q.on_demand is not None:
        new["on_demand_source"] = source_id
    if q.spot is not None:
        new["spot_source"] = source_id
    kept_sources = [s for s in old.get("options_source", "").split(";") if s and s != source_id]
    new["options_source"] = ";".join([source_id, *kept_sources]) if old.get("options_source") else source_id
    new["as_of"] = on.isoformat()
    return new


def current_rows() -> list[dict[str, str]]:
    """The catalogue's price rows as the loaders read them now (refreshed copy or packaged)."""
    with catalog.prices_file().open(newline="") as f:
        return [{k: v or "" for k, v in r.items()} for r in csv.DictReader(f)]


def refresh(
    fetch: Fetcher,
    *,
    on: date,
    providers: Iterable[str] = PROVIDERS,
    out_dir: Path | None = None,
) -> RefreshResult:
    """Ask every provider's API, then (only if all answered) write the catalogue if it changed."""
    wanted = list(providers)
    answers: dict[str, dict[tuple[str, str], Quote]] = {}
    for provider in wanted:
        types = [i.instance_type for i in catalog.gpu_instances(provider)]
        log.info(
            "price refresh: asking %s for %d %s instance types",
            API_NAMES[API[provider]],
            len(types),
            provider,
        )
        answers[provider] = QUOTERS[provider](fetch, types)
        log.info("price refresh: %s priced %d type x region rows", provider, len(answers[provider]))
    rows, changes, checked, kept = merge(current_rows(), answers, on)
    used = {
        s
        for r in rows
        for col in ("on_demand_source", "spot_source", "options_source")
        for s in r[col].split(";")
    }
    sources = [source_row(p, on) for p in wanted if source_row(p, on)["source_id"] in used]
    previous = _override_sources(out_dir)
    sources = [
        s
        for s in previous
        if s["source_id"] in used and s["source_id"] not in {x["source_id"] for x in sources}
    ] + sources
    result = RefreshResult(rows, sources, changes, checked, kept)
    if changes:
        result.written = write(rows, sources, out_dir)
        log.info("price refresh: wrote %d rows to %s (%d changes)", len(rows), result.written, len(changes))
    else:
        log.info("price refresh: nothing changed, nothing written")
    return result


def _override_sources(out_dir: Path | None) -> list[dict[str, str]]:
    path = (out_dir or catalogue_override_dir()) / catalog.SOURCES_CSV.name
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Mapping[str, str]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(header), lineterminator="\n")
        writer.writeheader()
        writer.writerows({h: r.get(h, "") for h in header} for r in rows)
    os.replace(tmp, path)  # a reader sees the old file or the new one, never half of one


def write(
    rows: Sequence[Mapping[str, str]], sources: Sequence[Mapping[str, str]], out_dir: Path | None = None
) -> Path:
    folder = out_dir or catalogue_override_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # Sources first: the prices file cites them, and the loaders read both.
    _write_csv(folder / catalog.SOURCES_CSV.name, catalog.SOURCES_HEADER, sources)
    path = folder / catalog.PRICES_CSV.name
    _write_csv(path, catalog.PRICES_HEADER, rows)
    return path

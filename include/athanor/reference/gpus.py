"""The GPU catalog: datasheet figures per GPU, GPU instance types of AWS, Azure and GCP, their
on-demand prices by region, and the grid carbon intensity and PUE that turn GPU-hours into CO2e.

Five files under ``data/`` (column by column, with the gaps, in ``data/README.md``):

- ``gpus.csv``: one row per GPU model: memory, dense FP16/BF16 tensor TFLOPS (and FP8 where the
  GPU has it), memory bandwidth, interconnect, board power; each figure names its source.
- ``instances.csv``: one row per instance type: provider, GPU model and count, GPU memory per GPU
  as the provider reports it (GiB), AWS's normalisation factor.
- ``prices.csv``: on-demand (and, where taken, spot and capacity-block) $ per instance-hour by
  region, the purchase options the type is sold under there (``on_demand``, ``spot``,
  ``capacity_block``, ``reservation``, ``flex_start``) and the date the figures were read
  (``as_of``). The first row of a type is its reference region, the one a plan prices the type in.
  A refreshed copy (``athanor gpu-catalog --refresh``, ``athanor.reference.paths.effective``)
  replaces the packaged file when present.
- ``grid_intensity.csv`` and ``pue.csv``: gCO2e/kWh per region with its year, PUE per provider.
- ``sources.csv``: every source id the other files cite, with its title, address and date.

A missing figure stays missing (``None``): nothing here is filled in by rule of thumb.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cache
from pathlib import Path
from types import MappingProxyType

from athanor.reference.paths import DATA_DIR, catalogue_override_dir, effective

GPUS_CSV = DATA_DIR / "gpus.csv"
INSTANCES_CSV = DATA_DIR / "instances.csv"
PRICES_CSV = DATA_DIR / "prices.csv"
GRID_INTENSITY_CSV = DATA_DIR / "grid_intensity.csv"
PUE_CSV = DATA_DIR / "pue.csv"
SOURCES_CSV = DATA_DIR / "sources.csv"

PROVIDERS = ("aws", "azure", "gcp")
# Accelerators in the instance list that are not GPUs: no datasheet row, never a GPU candidate.
NON_GPU_ACCELERATORS = frozenset({"Trainium"})
# Without a provider (or for one pue.csv lacks), the highest of the three published averages:
# a carbon figure errs high rather than low.
DEFAULT_PUE = 1.135
HOURS_PER_DAY = 24
# How an instance type can be bought in a region (prices.csv `purchase_options`): on demand, as
# spot, as an EC2 Capacity Block for ML (a reservation of fixed dates, paid up front), under a
# reservation or committed-use discount, or as GCP's flex-start (Dynamic Workload Scheduler).
PURCHASE_OPTIONS = ("on_demand", "spot", "capacity_block", "reservation", "flex_start")
PRICES_HEADER = (
    "provider",
    "instance_type",
    "region",
    "on_demand_usd_per_h",
    "spot_usd_per_h",
    "capacity_block_usd_per_h",
    "on_demand_source",
    "spot_source",
    "options_source",
    "purchase_options",
    "as_of",
)
SOURCES_HEADER = ("source_id", "title", "url", "date", "note")

_GPU_FIGURES = ("memory", "tflops", "bandwidth", "interconnect", "power")


@dataclass(frozen=True)
class Source:
    source_id: str
    title: str
    url: str
    date: str
    note: str


@dataclass(frozen=True)
class Gpu:
    """Datasheet figures of one GPU model; ``None`` where no stored source gave the figure."""

    gpu_model: str
    architecture: str
    memory_gb: float | None  # as the datasheet states it (decimal GB)
    fp16_dense_tflops: float | None  # tensor cores, without sparsity; BF16 is the same figure
    fp8_dense_tflops: float | None  # None: no FP8 on this GPU, or no source
    memory_bandwidth_gbps: float | None
    interconnect: str
    board_power_w: float | None
    sources: tuple[tuple[str, str], ...]  # (figure, source id): memory, tflops, bandwidth, ...

    def source_of(self, figure: str) -> Source | None:
        """The source of one figure ('memory', 'tflops', 'bandwidth', 'interconnect', 'power')."""
        ids = dict(self.sources)
        if figure not in ids:
            raise KeyError(f"{figure!r} is not one of {_GPU_FIGURES}")
        return source(ids[figure]) if ids[figure] else None


@dataclass(frozen=True)
class GpuInstance:
    provider: str  # aws | azure | gcp
    instance_type: str
    instance_family: str
    gpu_model: str
    gpu_count: int  # accelerators per instance (Trainium: chips)
    gpu_memory_gib: float | None  # per GPU, as the provider reports it (AWS: DescribeInstanceTypes)
    normalization_factor: float | None  # AWS Reserved Instance size flexibility units; None elsewhere
    spec_source: str
    memory_source: str

    @property
    def total_gpu_memory_gib(self) -> float | None:
        return None if self.gpu_memory_gib is None else self.gpu_memory_gib * self.gpu_count


@dataclass(frozen=True)
class Price:
    provider: str
    instance_type: str
    region: str
    on_demand_usd_per_h: Decimal | None
    spot_usd_per_h: Decimal | None  # typical, not a quote; only where the file has one
    on_demand_source: str
    spot_source: str
    capacity_block_usd_per_h: Decimal | None = None  # an EC2 Capacity Block's hourly rate
    purchase_options: tuple[str, ...] = ("on_demand",)
    options_source: tuple[str, ...] = ()  # the sources of the purchase options and block rate
    as_of: date | None = None  # the day the figures were read (a refresh: the day it fetched)

    @property
    def sold_on_demand(self) -> bool:
        """Whether anyone can run this type here on demand (not only spot, blocks or flex-start)."""
        return "on_demand" in self.purchase_options and self.on_demand_usd_per_h is not None


@dataclass(frozen=True)
class GridIntensity:
    provider: str
    region: str
    gco2e_per_kwh: float
    year: int | None  # the data year; None where the source does not state it
    source: str


@dataclass(frozen=True)
class CatalogRow:
    """One instance type priced in one region (``price`` is None for a type without any price)."""

    instance: GpuInstance
    gpu: Gpu | None
    price: Price | None

    @property
    def usd_per_tflops_day(self) -> float | None:
        if self.price is None or self.price.on_demand_usd_per_h is None or self.gpu is None:
            return None
        return usd_per_tflops_day(
            self.price.on_demand_usd_per_h, self.instance.gpu_count, self.gpu.fp16_dense_tflops
        )


def usd_per_tflops_day(
    hourly_usd: Decimal | float, gpus: int, fp16_dense_tflops_per_gpu: float | None
) -> float | None:
    """Unit cost of dense FP16 compute: hourly price x 24 / (GPUs x dense FP16 TFLOPS per GPU).

    None when the GPU has no TFLOPS figure: a price per unknown compute is not a unit cost.
    """
    if fp16_dense_tflops_per_gpu is None or gpus <= 0 or fp16_dense_tflops_per_gpu <= 0:
        return None
    return float(hourly_usd) * HOURS_PER_DAY / (gpus * fp16_dense_tflops_per_gpu)


# --- reading the files -------------------------------------------------------------------------


def _rows(path: Path, header: tuple[str, ...]) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != header:
            raise ValueError(f"{path.name}: header {reader.fieldnames} is not {list(header)}")
        return [{k: (v or "").strip() for k, v in row.items()} for row in reader]


def _float(text: str) -> float | None:
    return float(text) if text else None


def _decimal(text: str) -> Decimal | None:
    return Decimal(text) if text else None


def _unique(path: Path, keys: Iterable[object]) -> None:
    seen: set[object] = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"{path.name}: {key} is listed twice")
        seen.add(key)


def _version(path: Path) -> tuple[str, int, int]:
    """A file's identity for the caches: a refresh rewriting it is read again."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return (str(path), 0, 0)
    return (str(path), st.st_mtime_ns, st.st_size)


def _sources() -> Mapping[str, Source]:
    return _sources_at(_version(catalogue_override_dir() / SOURCES_CSV.name))


@cache
def _sources_at(override: tuple[str, int, int]) -> Mapping[str, Source]:
    rows = _rows(SOURCES_CSV, SOURCES_HEADER)
    _unique(SOURCES_CSV, (r["source_id"] for r in rows))
    out = {r["source_id"]: Source(**r) for r in rows}
    extra = Path(override[0])
    if override[1] and extra.is_file():
        # A refresh's own sources (one per API and fetch day); a packaged id keeps its row.
        for r in _rows(extra, SOURCES_HEADER):
            out.setdefault(r["source_id"], Source(**r))
    return MappingProxyType(out)


def _cited(path: Path, what: str, source_id: str) -> str:
    if source_id and source_id not in _sources():
        raise ValueError(f"{path.name}: {what} cites source {source_id!r}, which sources.csv lacks")
    return source_id


@cache
def _gpus() -> Mapping[str, Gpu]:
    header = (
        "gpu_model",
        "architecture",
        "memory_gb",
        "fp16_dense_tflops",
        "fp8_dense_tflops",
        "memory_bandwidth_gbps",
        "interconnect",
        "board_power_w",
        *(f"{figure}_source" for figure in _GPU_FIGURES),
    )
    rows = _rows(GPUS_CSV, header)
    _unique(GPUS_CSV, (r["gpu_model"] for r in rows))
    out: dict[str, Gpu] = {}
    for r in rows:
        model = r["gpu_model"]
        out[model] = Gpu(
            gpu_model=model,
            architecture=r["architecture"],
            memory_gb=_float(r["memory_gb"]),
            fp16_dense_tflops=_float(r["fp16_dense_tflops"]),
            fp8_dense_tflops=_float(r["fp8_dense_tflops"]),
            memory_bandwidth_gbps=_float(r["memory_bandwidth_gbps"]),
            interconnect=r["interconnect"],
            board_power_w=_float(r["board_power_w"]),
            sources=tuple((f, _cited(GPUS_CSV, f"{model} {f}", r[f"{f}_source"])) for f in _GPU_FIGURES),
        )
    return MappingProxyType(out)


def _key(instance_type: str) -> str:
    # SageMaker's ml.* types are the EC2 hardware; Azure and GCP names arrive in any case.
    return instance_type.strip().lower().removeprefix("ml.")


@cache
def _instances() -> Mapping[str, GpuInstance]:
    header = (
        "provider",
        "instance_type",
        "instance_family",
        "gpu_model",
        "gpu_count",
        "gpu_memory_gib",
        "normalization_factor",
        "spec_source",
        "memory_source",
    )
    rows = _rows(INSTANCES_CSV, header)
    _unique(INSTANCES_CSV, (_key(r["instance_type"]) for r in rows))
    out: dict[str, GpuInstance] = {}
    for r in rows:
        name = r["instance_type"]
        if r["provider"] not in PROVIDERS:
            raise ValueError(f"{INSTANCES_CSV.name}: {name} has provider {r['provider']!r}")
        if r["gpu_model"] not in _gpus() and r["gpu_model"] not in NON_GPU_ACCELERATORS:
            raise ValueError(f"{INSTANCES_CSV.name}: {name} has GPU {r['gpu_model']!r}, which gpus.csv lacks")
        out[_key(name)] = GpuInstance(
            provider=r["provider"],
            instance_type=name,
            instance_family=r["instance_family"],
            gpu_model=r["gpu_model"],
            gpu_count=int(r["gpu_count"]),
            gpu_memory_gib=_float(r["gpu_memory_gib"]),
            normalization_factor=_float(r["normalization_factor"]),
            spec_source=_cited(INSTANCES_CSV, name, r["spec_source"]),
            memory_source=_cited(INSTANCES_CSV, name, r["memory_source"]),
        )
    return MappingProxyType(out)


def catalogue_version() -> tuple[tuple[str, int, int], tuple[str, int, int]]:
    """What the price catalogue is read from now (for callers that cache what they derive)."""
    return _version(prices_file()), _version(catalogue_override_dir() / SOURCES_CSV.name)


def prices_file() -> Path:
    """The price file the catalogue reads: a refreshed copy when one exists, else the packaged one."""
    return effective(PRICES_CSV)


def _prices() -> tuple[Price, ...]:
    return _prices_at(*catalogue_version())


def _options(path: Path, what: str, text: str) -> tuple[str, ...]:
    options = tuple(o.strip() for o in text.split(";") if o.strip())
    unknown = [o for o in options if o not in PURCHASE_OPTIONS]
    if unknown:
        raise ValueError(
            f"{path.name}: {what}: purchase option {unknown[0]!r} is not one of {', '.join(PURCHASE_OPTIONS)}"
        )
    return options


@cache
def _prices_at(version: tuple[str, int, int], _sources_version: tuple[str, int, int]) -> tuple[Price, ...]:
    path = Path(version[0])
    rows = _rows(path, PRICES_HEADER)
    _unique(path, ((_key(r["instance_type"]), r["region"]) for r in rows))
    out = []
    for line, r in enumerate(rows, start=2):
        what = f"row {line}, {r['instance_type']} in {r['region']}"
        known = _instances().get(_key(r["instance_type"]))
        if known is None:
            raise ValueError(f"{path.name}: {what}: the type is not in {INSTANCES_CSV.name}")
        if known.provider != r["provider"]:
            raise ValueError(f"{path.name}: {what}: provider {r['provider']} is not {known.provider}")
        options = _options(path, what, r["purchase_options"])
        if "on_demand" in options and not r["on_demand_usd_per_h"]:
            raise ValueError(f"{path.name}: {what}: sold on demand without an on_demand_usd_per_h")
        out.append(
            Price(
                provider=r["provider"],
                instance_type=known.instance_type,
                region=r["region"],
                on_demand_usd_per_h=_decimal(r["on_demand_usd_per_h"]),
                spot_usd_per_h=_decimal(r["spot_usd_per_h"]),
                on_demand_source=_cited(path, what, r["on_demand_source"]),
                spot_source=_cited(path, what, r["spot_source"]),
                capacity_block_usd_per_h=_decimal(r["capacity_block_usd_per_h"]),
                purchase_options=options,
                options_source=tuple(
                    _cited(path, what, s.strip()) for s in r["options_source"].split(";") if s.strip()
                ),
                as_of=date.fromisoformat(r["as_of"]) if r["as_of"] else None,
            )
        )
    return tuple(out)


@cache
def _grid() -> Mapping[tuple[str, str], GridIntensity]:
    rows = _rows(GRID_INTENSITY_CSV, ("provider", "region", "gco2e_per_kwh", "year", "source"))
    _unique(GRID_INTENSITY_CSV, ((r["provider"], r["region"]) for r in rows))
    return MappingProxyType(
        {
            (r["provider"], r["region"]): GridIntensity(
                provider=r["provider"],
                region=r["region"],
                gco2e_per_kwh=float(r["gco2e_per_kwh"]),
                year=int(r["year"]) if r["year"] else None,
                source=_cited(GRID_INTENSITY_CSV, f"{r['provider']} {r['region']}", r["source"]),
            )
            for r in rows
        }
    )


@cache
def _pue() -> Mapping[str, tuple[float, str]]:
    rows = _rows(PUE_CSV, ("provider", "pue", "source"))
    _unique(PUE_CSV, (r["provider"] for r in rows))
    return MappingProxyType(
        {r["provider"]: (float(r["pue"]), _cited(PUE_CSV, r["provider"], r["source"])) for r in rows}
    )


# --- the public reads --------------------------------------------------------------------------


def sources() -> tuple[Source, ...]:
    return tuple(_sources().values())


def source(source_id: str) -> Source:
    try:
        return _sources()[source_id]
    except KeyError:
        raise KeyError(f"{source_id!r} is not in {SOURCES_CSV.name}") from None


def gpus() -> tuple[Gpu, ...]:
    """Every GPU model, in the file's order."""
    return tuple(_gpus().values())


def gpu(gpu_model: str) -> Gpu | None:
    """Datasheet figures of one GPU model; None for an accelerator without a row (Trainium)."""
    found = _gpus().get(gpu_model)
    if found is None and gpu_model not in NON_GPU_ACCELERATORS:
        raise KeyError(f"{gpu_model!r} is not in {GPUS_CSV.name}")
    return found


def gpu_instances(provider: str | None = None) -> tuple[GpuInstance, ...]:
    """Every instance type (of one provider), in the file's order."""
    return tuple(i for i in _instances().values() if provider is None or i.provider == provider)


def gpu_instance(instance_type: str) -> GpuInstance | None:
    """One instance type; case, spaces and SageMaker's ``ml.`` prefix ignored. None if unknown."""
    return _instances().get(_key(instance_type))


def prices(instance_type: str | None = None) -> tuple[Price, ...]:
    """Price rows (of one instance type), reference region first."""
    if instance_type is None:
        return _prices()
    key = _key(instance_type)
    return tuple(p for p in _prices() if _key(p.instance_type) == key)


def price(instance_type: str, region: str | None = None) -> Price | None:
    """The price of a type in a region (default: its reference region); None where none was taken."""
    rows = prices(instance_type)
    if region is None:
        return rows[0] if rows else None
    return next((p for p in rows if p.region == region), None)


def reference_region(instance_type: str) -> str | None:
    first = price(instance_type)
    return None if first is None else first.region


def grid_intensity(provider: str, region: str) -> GridIntensity | None:
    return _grid().get((provider, region))


def grid_intensities() -> tuple[GridIntensity, ...]:
    return tuple(_grid().values())


def pue(provider: str | None) -> float:
    """Power usage effectiveness of a provider's data centres (DEFAULT_PUE when not in pue.csv)."""
    found = _pue().get(provider or "")
    return DEFAULT_PUE if found is None else found[0]


def catalog(provider: str | None = None, *, all_regions: bool = True) -> tuple[CatalogRow, ...]:
    """Instance types joined with their GPU and prices: one row per (type, priced region), or per
    type at its reference region (``all_regions=False``). A type without any price appears once,
    with ``price`` None."""
    out = []
    for inst in gpu_instances(provider):
        g = _gpus().get(inst.gpu_model)
        rows = prices(inst.instance_type)
        if not rows:
            out.append(CatalogRow(inst, g, None))
        for p in rows if all_regions else rows[:1]:
            out.append(CatalogRow(inst, g, p))
    return tuple(out)


def catalog_records(provider: str | None = None, *, all_regions: bool = False) -> list[dict[str, object]]:
    """The catalog as plain rows (what `athanor gpu-catalog` prints), cheapest unit cost first;
    types without a unit cost (no price, or no TFLOPS figure) last, by name."""
    out = []
    for row in catalog(provider, all_regions=all_regions):
        inst, g, p = row.instance, row.gpu, row.price
        unit = row.usd_per_tflops_day
        out.append(
            {
                "provider": inst.provider,
                "instance_type": inst.instance_type,
                "region": None if p is None else p.region,
                "gpu_model": inst.gpu_model,
                "gpus": inst.gpu_count,
                "gpu_memory_gib": inst.gpu_memory_gib,
                "fp16_dense_tflops": None if g is None else g.fp16_dense_tflops,
                "fp8_dense_tflops": None if g is None else g.fp8_dense_tflops,
                "memory_bandwidth_gbps": None if g is None else g.memory_bandwidth_gbps,
                "interconnect": None if g is None else g.interconnect,
                "board_power_w": None if g is None else g.board_power_w,
                "on_demand_usd_per_h": None if p is None else p.on_demand_usd_per_h,
                "usd_per_tflops_day": None if unit is None else round(unit, 4),
                "purchase_options": None if p is None else ";".join(p.purchase_options),
                "capacity_block_usd_per_h": None if p is None else p.capacity_block_usd_per_h,
                "as_of": None if p is None else p.as_of,
            }
        )
    return sorted(
        out,
        key=lambda r: (
            r["usd_per_tflops_day"] is None,
            r["usd_per_tflops_day"] or 0.0,
            r["provider"],
            r["instance_type"],
            r["region"] or "",
        ),
    )


@dataclass(frozen=True)
class PriceAge:
    """How old the catalogue's prices are on a day: the oldest and newest ``as_of`` of its rows."""

    oldest: date | None
    newest: date | None
    on: date
    rows: int
    undated: int  # rows without a date
    refreshed: bool  # read from a refreshed copy (athanor gpu-catalog --refresh)
    file: str

    @property
    def days_old(self) -> int | None:
        return None if self.oldest is None else (self.on - self.oldest).days

    def headline(self) -> str:
        """'prices as of 2026-06-01, 188 days old': the oldest row's date and its age."""
        if self.oldest is None:
            return "prices undated"
        return f"prices as of {self.oldest.isoformat()}, {self.days_old} days old"

    def sentence(self) -> str:
        """'prices as of 2026-06-01, 188 days old (...)' as the report and the CLI print it."""
        if self.oldest is None:
            return f"prices undated ({self.rows} rows in {self.file})"
        span = "" if self.newest in (None, self.oldest) else f" to {self.newest.isoformat()}"
        kind = "refreshed from the providers' price APIs" if self.refreshed else "the packaged catalogue"
        undated = f"; {self.undated} rows undated" if self.undated else ""
        return (
            f"prices as of {self.oldest.isoformat()}{span}, {self.days_old} days old on "
            f"{self.on.isoformat()} ({kind}, {self.rows} type x region rows{undated})"
        )


def price_age(on: date) -> PriceAge:
    """The age of the prices the plan reads, on ``on`` (the report's as-of day)."""
    rows = _prices()
    dates = [p.as_of for p in rows if p.as_of is not None]
    path = prices_file()
    return PriceAge(
        oldest=min(dates, default=None),
        newest=max(dates, default=None),
        on=on,
        rows=len(rows),
        undated=len(rows) - len(dates),
        refreshed=path != PRICES_CSV,
        file=path.name if path == PRICES_CSV else str(path),
    )

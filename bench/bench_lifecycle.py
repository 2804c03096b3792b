"""Checkpoint lifecycle benchmark: the demo bucket's 12-month cost before/after, and how fast a
1M-object S3 Inventory delivery is read, indexed and priced.

    .venv/bin/python bench/bench_lifecycle.py [--objects 1000000]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from athanor.demo.storage import CSV_SCHEMA, generate_ebs, generate_inventory
from athanor.ingest.checkpoints import index_checkpoints
from athanor.recommend.lifecycle import read_ebs, read_inventory, recommend_lifecycle

AS_OF = date(2026, 12, 1)


def demo_table(tmp: Path) -> None:
    manifest = generate_inventory(tmp / "demo", AS_OF, seed=7)
    vols, snaps = generate_ebs(tmp / "ebs", AS_OF, seed=7)
    inventory = read_inventory(manifest)
    t0 = time.perf_counter()
    rec = recommend_lifecycle(inventory, read_ebs(vols, snaps), as_of=AS_OF, keep_last=3)
    elapsed = time.perf_counter() - t0
    print(f"demo inventory: {len(inventory):,} rows, recommend_lifecycle {elapsed:.2f} s\n")
    table = rec.format_table().split("\nEBS actions:")[0]
    print(table)
    print("\n12-month cost per candidate, nlp/ prefix (USD):")
    plan = next(p for p in rec.prefixes if p.prefix == "nlp/")
    ranked = sorted(plan.candidates, key=lambda c: c.cost.total)
    for c in ranked[:8] + [plan.candidate("do-nothing")]:
        flag = "" if c.allowed else f"  (not allowed: {c.reason})"
        print(f"  {c.name:<62} {c.cost.total:>10,.0f}{flag}")


def synthetic_delivery(tmp: Path, n: int, files: int = 10) -> Path:
    """n object versions in `files` gzipped CSV files, AWS's format, checkpoint-shaped keys."""
    rng = np.random.default_rng(1)
    run = rng.integers(0, 2000, n)
    step = rng.integers(1, 400, n) * 500
    shard = rng.integers(1, 9, n)
    keys = [
        f"team{r % 7}/team{r % 7}-model-{r:04d}/checkpoint-{s}/model-{h:05d}-of-00008.safetensors"
        for r, s, h in zip(run, step, shard, strict=True)
    ]
    latest = rng.random(n) < 0.8
    sizes = rng.integers(1, 10 * 1024**3, n)
    modified = (
        np.datetime64("2026-12-01T00:00:00") - rng.integers(0, 400 * 86400, n).astype("timedelta64[s]")
    ).astype("datetime64[ms]")
    data_dir = tmp / "big" / "data"
    data_dir.mkdir(parents=True)
    entries = []
    for i, idx in enumerate(np.array_split(np.arange(n), files)):
        table = pa.table(
            {
                "b": pa.array(["big-bucket"] * len(idx)),
                "k": pa.array([keys[j] for j in idx]),
                "v": pa.array([f"v{j:012d}" for j in idx]),
                "l": pa.array(np.where(latest[idx], "true", "false")),
                "d": pa.array(["false"] * len(idx)),
                "s": pa.array(sizes[idx]),
                "t": pa.array(np.datetime_as_string(modified[idx], unit="ms", timezone="UTC")),
                "c": pa.array(["STANDARD"] * len(idx)),
                "a": pa.array([""] * len(idx)),
                "e": pa.array(["0" * 32] * len(idx)),
            }
        )
        buf = io.BytesIO()
        pacsv.write_csv(table, buf, pacsv.WriteOptions(include_header=False, quoting_style="all_valid"))
        raw = gzip.compress(buf.getvalue(), mtime=0)
        path = data_dir / f"part-{i:03d}.csv.gz"
        path.write_bytes(raw)
        entries.append(
            {
                "key": f"big-bucket/data/{path.name}",
                "size": len(raw),
                "MD5checksum": hashlib.md5(raw).hexdigest(),
            }
        )
    manifest = tmp / "big" / "2026-12-01T01-00Z" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "sourceBucket": "big-bucket",
                "destinationBucket": "arn:aws:s3:::inv",
                "version": "2016-11-30",
                "creationTimestamp": "1764550800000",
                "fileFormat": "CSV",
                "fileSchema": CSV_SCHEMA,
                "files": entries,
            }
        )
    )
    return manifest


def speed(tmp: Path, n: int) -> None:
    t0 = time.perf_counter()
    manifest = synthetic_delivery(tmp, n)
    t_gen = time.perf_counter() - t0
    size_mb = sum(p.stat().st_size for p in (tmp / "big" / "data").iterdir()) / 1e6
    t0 = time.perf_counter()
    inventory = read_inventory(manifest)
    t_read = time.perf_counter() - t0
    t0 = time.perf_counter()
    idx = index_checkpoints(inventory, AS_OF, keep_last=3)
    t_index = time.perf_counter() - t0
    t0 = time.perf_counter()
    rec = recommend_lifecycle(inventory, as_of=AS_OF, keep_last=3)
    t_rec = time.perf_counter() - t0
    print(f"\n{'step':<44} {'seconds':>8} {'rows/s':>12}")
    print(f"{'write synthetic delivery (' + f'{size_mb:.0f} MB gz)':<44} {t_gen:>8.2f}")
    print(f"{'read_inventory (MD5 + DuckDB + validate)':<44} {t_read:>8.2f} {n / t_read:>12,.0f}")
    print(f"{'index_checkpoints':<44} {t_index:>8.2f} {n / t_index:>12,.0f}")
    n_cands = len(rec.prefixes[0].candidates)
    print(
        f"{f'recommend_lifecycle ({n_cands} candidates x 7 prefixes)':<44} {t_rec:>8.2f} {n / t_rec:>12,.0f}"
    )
    print(
        f"rows {len(inventory):,}; checkpoints {len(idx.checkpoints):,}; runs {len(idx.runs):,}; "
        f"rules {len(rec.configs['big-bucket']['Rules'])}; deferred {sum(p.deferred_checkpoints for p in rec.prefixes):,}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        demo_table(Path(d))
        speed(Path(d), args.objects)


if __name__ == "__main__":
    main()

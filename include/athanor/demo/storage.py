"""A realistic demo checkpoint bucket, delivered as S3 Inventory, plus EBS listings. Deterministic.

Several teams write checkpoints in the layouts their frameworks use (Hugging Face Trainer,
one file per step, PyTorch Lightning, DeepSpeed). Run ids are `<team>-<model>-<nnnn>`, the same
shape as job ids in the job-run files, so runs can be joined to jobs. The costly habits are there
on purpose: every checkpoint kept forever, a `best/` model overwritten again and again (noncurrent
versions), hand-deleted checkpoints in a versioned bucket (delete markers hiding billed versions),
runs resumed over their own checkpoints, and stray small temp files.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq

from athanor.demo.config import DemoConfig
from athanor.demo.stable import unit_hash
from athanor.ingest.inventory import write_csv_gz

GB = 1024**3
CSV_SCHEMA = (
    "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, StorageClass, "
    "IntelligentTieringAccessTier, ETag"
)
PARQUET_SCHEMA = (
    "message s3.inventory { required binary bucket (STRING); required binary key (STRING); "
    "optional binary version_id (STRING); optional boolean is_latest; optional boolean is_delete_marker; "
    "optional int64 size; optional int64 last_modified_date (TIMESTAMP(MILLIS,true)); "
    "optional binary storage_class (STRING); optional binary intelligent_tiering_access_tier (STRING); "
    "optional binary e_tag (STRING);}"
)
ROWS_PER_FILE = 20_000


@dataclass(frozen=True)
class _Model:
    team: str
    name: str  # no dashes: run ids split on them
    layout: str  # hf | file | lightning | deepspeed
    checkpoint_gb: tuple[float, float]  # range of one checkpoint's size
    runs: int
    steps: tuple[int, int]  # checkpoints per run
    step_every: int  # training steps between checkpoints


_MODELS = (
    _Model("nlp", "llama8b", "hf", (90, 110), 8, (12, 40), 500),
    _Model("nlp", "llama70b", "hf", (240, 300), 3, (8, 20), 250),
    _Model("vision", "vitl16", "file", (1, 5), 8, (20, 60), 1000),
    _Model("vision", "sdxl", "file", (12, 16), 5, (10, 30), 2000),
    _Model("speech", "whisperl", "lightning", (5, 7), 7, (15, 45), 1500),
    _Model("recsys", "dlrm", "deepspeed", (30, 60), 6, (10, 30), 5000),
)


def _vid(rng: random.Random) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz._"
    return "".join(rng.choice(alphabet) for _ in range(32))


def _etag(rng: random.Random, size: int) -> str:
    digest = hashlib.md5(str(rng.random()).encode(), usedforsecurity=False).hexdigest()
    parts = size // (512 * 1024**2) + 1  # multipart uploads in 512 MiB parts carry "-<parts>"
    return f"{digest}-{parts}" if size > 5 * GB else digest


def _checkpoint_files(
    model: _Model, run: str, step: int, epoch: int, total_bytes: int
) -> list[tuple[str, int]]:
    """(key suffix under the team's prefix, size) of one checkpoint in the model's layout."""
    if model.layout == "hf":
        shard = 10 * GB
        weights = total_bytes // 3
        n = max(1, -(-weights // shard))
        base = f"{run}/checkpoint-{step}/"
        files = [(f"{base}model-{i + 1:05d}-of-{n:05d}.safetensors", weights // n) for i in range(n)]
        return files + [
            (f"{base}optimizer.pt", total_bytes - weights),
            (f"{base}trainer_state.json", 18_000 + step),
            (f"{base}rng_state.pth", 14_503),
            (f"{base}scheduler.pt", 1_064),
            (f"{base}config.json", 1_912),
        ]
    if model.layout == "file":
        return [(f"{run}/step_{step}.pt", total_bytes)]
    if model.layout == "lightning":
        return [(f"{run}/epoch={epoch}-step={step}.ckpt", total_bytes)]
    base = f"{run}/global_step{step}/"  # DeepSpeed: 8 ranks of optimizer state + model states
    files = [
        (f"{base}bf16_zero_pp_rank_{r}_mp_rank_00_optim_states.pt", total_bytes * 2 // 3 // 8)
        for r in range(8)
    ]
    return [*files, (f"{base}mp_rank_00_model_states.pt", total_bytes // 3)]


def _one_bucket(bucket: str) -> Callable[[_Model], tuple[str, str, str]]:
    """Every team under its own prefix of one bucket, runs named after the storage teams."""
    return lambda model: (bucket, f"{model.team}/", model.team)


def _rows(as_of: date, seed: int, place: Callable[[_Model], tuple[str, str, str]]) -> list[dict]:
    """Every object version (and delete marker) of the demo's checkpoint runs, as of `as_of`.

    `place(model)` says where a model's runs live: (bucket, key prefix, team in the run id).
    """
    rng = random.Random(seed)
    now = datetime(as_of.year, as_of.month, as_of.day, tzinfo=UTC)
    rows: list[dict] = []
    bucket = ""

    def put(
        key: str,
        size: int,
        when: datetime,
        versions: list[tuple[int, datetime]] = (),
        storage_class: str = "STANDARD",
        tier: str = "",
        deleted_at: datetime | None = None,
    ) -> None:
        """One key: older versions (noncurrent), the newest one, optionally a delete marker on top."""
        history = sorted([*versions, (size, when)], key=lambda t: t[1])
        top = len(history) - 1
        for i, (sz, ts) in enumerate(history):
            rows.append(
                {
                    "bucket": bucket,
                    "key": key,
                    "version_id": _vid(rng),
                    "is_latest": i == top and deleted_at is None,
                    "is_delete_marker": False,
                    "size": sz,
                    "last_modified": ts,
                    "storage_class": storage_class,
                    "tier": tier if storage_class == "INTELLIGENT_TIERING" else "",
                    "etag": _etag(rng, sz),
                }
            )
        if deleted_at is not None:
            rows.append(
                {
                    "bucket": bucket,
                    "key": key,
                    "version_id": _vid(rng),
                    "is_latest": True,
                    "is_delete_marker": True,
                    "size": None,
                    "last_modified": deleted_at,
                    "storage_class": "",
                    "tier": "",
                    "etag": "",
                }
            )

    run_no = 0
    for model in _MODELS:
        for _ in range(model.runs):
            run_no += 1
            bucket, prefix, run_team = place(model)
            run = f"{run_team}-{model.name}-{rng.randint(1, 9999):04d}"
            n_steps = rng.randint(*model.steps)
            active = run_no % 6 == 0  # about one run in six is still training
            hours_between = rng.choice([2, 3, 4, 6, 8, 12])
            span = timedelta(hours=hours_between * n_steps)
            end = (
                now - timedelta(hours=rng.uniform(1, 20))
                if active
                else now - timedelta(days=rng.uniform(3, 420))
            )
            start = end - span
            size_total = int(rng.uniform(*model.checkpoint_gb) * GB)
            # Older vision runs were moved to Standard-IA by hand; one recsys run sits in Intelligent-Tiering.
            age_days = (now - end).days
            sc = "STANDARD_IA" if model.team == "vision" and age_days > 200 else "STANDARD"
            if model.team == "recsys" and run_no % 2 == 1:
                sc = "INTELLIGENT_TIERING"
            resumed_from = rng.randint(1, n_steps - 1) if rng.random() < 0.3 and n_steps > 4 else None
            deleted_upto = rng.randint(1, n_steps // 2) if rng.random() < 0.35 else 0
            best_versions: list[tuple[int, datetime]] = []
            for i in range(1, n_steps + 1):
                step = i * model.step_every
                when = start + span * (i / n_steps)
                epoch = (i * 3) // n_steps
                for suffix, size in _checkpoint_files(model, run, step, epoch, size_total):
                    # A resumed run wrote these steps twice: the first write is a noncurrent version.
                    older = []
                    if resumed_from is not None and i >= resumed_from and i <= resumed_from + 3:
                        older = [(size, when - timedelta(hours=hours_between * 2.5))]
                    gone = when + timedelta(days=rng.uniform(1, 30)) if i <= deleted_upto else None
                    if gone is not None and gone > now:
                        gone = now - timedelta(hours=1)
                    tier = rng.choice(["FREQUENT", "INFREQUENT", "ARCHIVE_INSTANT_ACCESS"])
                    put(prefix + suffix, size, when, older, sc, tier, gone)
                if i % 3 == 0:
                    best_versions.append((size_total // 3, when + timedelta(minutes=20)))
            # best/ is overwritten each time eval improves: many noncurrent full-size versions.
            if best_versions:
                (bsize, bwhen), older_best = best_versions[-1], best_versions[:-1]
                put(f"{prefix}{run}/best/model.safetensors", bsize, bwhen, older_best)
                put(f"{prefix}{run}/best/config.json", 1_912, bwhen)
            if run_no % 5 == 0:
                put(
                    f"{prefix}{run}/released/{model.name}-v1/model.safetensors",
                    size_total // 3,
                    end + timedelta(days=1),
                )
            put(f"{prefix}{run}/logs/train log.txt", rng.randint(200_000, 9_000_000), end)
            # Stray bits of uploads that crashed half-way.
            for _ in range(rng.randint(0, 3)):
                put(
                    f"{prefix}{run}/tmp/upload-{rng.getrandbits(48):012x}.part",
                    rng.randint(1_024, 64 * 1024),
                    start + span * rng.random(),
                )
    return rows


def _iso_ms(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def generate_inventory(
    out_dir: str | Path,
    as_of: date,
    seed: int = 7,
    bucket: str = "athanor-demo-checkpoints",
    *,
    file_format: str = "CSV",
) -> Path:
    """Write an S3 Inventory delivery of the demo bucket; returns the manifest.json path.

    Layout as AWS delivers it: `<out_dir>/<bucket>/<as_of>T01-00Z/manifest.json`, data files in
    `<out_dir>/<bucket>/data/` (CSV: gzipped, header-less, keys URL-encoded; or Parquet).
    """
    return _write_inventory(
        Path(out_dir), as_of, bucket, _rows(as_of, seed, _one_bucket(bucket)), file_format, seed + 1
    )


def _write_inventory(
    out: Path, as_of: date, bucket: str, rows: list[dict], file_format: str, names_seed: int | str
) -> Path:
    rows = sorted(rows, key=lambda r: (r["key"], r["last_modified"]))
    stamp = f"{as_of.isoformat()}T01-00Z"
    manifest_dir = out / bucket / stamp
    data_dir = out / bucket / "data"
    manifest_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(names_seed)
    files = []
    for start in range(0, len(rows), ROWS_PER_FILE):
        chunk = rows[start : start + ROWS_PER_FILE]
        name = f"{rng.getrandbits(128):032x}"
        if file_format == "CSV":
            path = data_dir / f"{name}.csv.gz"
            write_csv_gz(
                path,
                [
                    [
                        r["bucket"],
                        quote_plus(r["key"], safe="/"),
                        r["version_id"],
                        "true" if r["is_latest"] else "false",
                        "true" if r["is_delete_marker"] else "false",
                        "" if r["size"] is None else r["size"],
                        _iso_ms(r["last_modified"]),
                        r["storage_class"],
                        r["tier"],
                        r["etag"],
                    ]
                    for r in chunk
                ],
            )
        elif file_format == "Parquet":
            path = data_dir / f"{name}.parquet"
            table = pa.table(
                {
                    "bucket": [r["bucket"] for r in chunk],
                    "key": [r["key"] for r in chunk],
                    "version_id": [r["version_id"] for r in chunk],
                    "is_latest": [r["is_latest"] for r in chunk],
                    "is_delete_marker": [r["is_delete_marker"] for r in chunk],
                    "size": pa.array([r["size"] for r in chunk], pa.int64()),
                    "last_modified_date": pa.array(
                        [r["last_modified"] for r in chunk], pa.timestamp("ms", tz="UTC")
                    ),
                    "storage_class": [r["storage_class"] or None for r in chunk],
                    "intelligent_tiering_access_tier": [r["tier"] or None for r in chunk],
                    "e_tag": [r["etag"] or None for r in chunk],
                }
            )
            buf = io.BytesIO()
            pq.write_table(table, buf)
            path.write_bytes(buf.getvalue())
        else:
            raise ValueError(f"file_format must be CSV or Parquet, not {file_format!r}")
        data = path.read_bytes()
        files.append(
            {
                "key": f"{bucket}/data/{path.name}",
                "size": len(data),
                "MD5checksum": hashlib.md5(data, usedforsecurity=False).hexdigest(),
            }
        )
    created = datetime(as_of.year, as_of.month, as_of.day, 1, tzinfo=UTC)
    manifest = {
        "sourceBucket": bucket,
        "destinationBucket": "arn:aws:s3:::athanor-demo-inventory",
        "version": "2016-11-30",
        "creationTimestamp": str(int(created.timestamp() * 1000)),
        "fileFormat": file_format,
        "fileSchema": CSV_SCHEMA if file_format == "CSV" else PARQUET_SCHEMA,
        "files": files,
    }
    path = manifest_dir / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2))
    return path


def generate_ebs(out_dir: str | Path, as_of: date, seed: int = 7) -> tuple[Path, Path]:
    """Write `volumes.json` and `snapshots.json` as `aws ec2 describe-volumes/-snapshots` prints them."""
    volumes, snapshots = _ebs_listing(as_of, seed)
    return _write_ebs(Path(out_dir), volumes, snapshots)


def _write_ebs(out: Path, volumes: list[dict], snapshots: list[dict]) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    vpath, spath = out / "volumes.json", out / "snapshots.json"
    vpath.write_text(json.dumps({"Volumes": volumes}, indent=2))
    spath.write_text(json.dumps({"Snapshots": snapshots}, indent=2))
    return vpath, spath


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _ebs_listing(
    as_of: date,
    seed: int,
    team_of: Callable[[str], str] = lambda team: team,
    owner_of: Callable[[str], str] = lambda team: "123456789012",
) -> tuple[list[dict], list[dict]]:
    """Volumes and snapshots as DescribeVolumes / DescribeSnapshots list them on `as_of`.

    `team_of` names a storage team as the fleet knows it; `owner_of(team)` is the account a
    snapshot of that team's volume belongs to ('' for a volume no team owns).
    """
    rng = random.Random(seed)
    now = datetime(as_of.year, as_of.month, as_of.day, tzinfo=UTC)
    volumes = []
    team_of_volume: dict[str, str] = {}

    def volume(size: int, state: str, age_days: float, tags: dict[str, str], vtype: str = "gp3") -> str:
        vid = f"vol-{rng.getrandbits(68):017x}"
        created = now - timedelta(days=age_days)
        attach = []
        if state == "in-use":
            attach = [
                {
                    "AttachTime": _iso(created + timedelta(minutes=3)),
                    "Device": "/dev/sdf",
                    "InstanceId": f"i-{rng.getrandbits(68):017x}",
                    "State": "attached",
                    "VolumeId": vid,
                    "DeleteOnTermination": False,
                }
            ]
        team_of_volume[vid] = tags.get("team", "")
        volumes.append(
            {
                "Attachments": attach,
                "AvailabilityZone": "us-east-1a",
                "CreateTime": _iso(created),
                "Encrypted": True,
                "Size": size,
                "SnapshotId": "",
                "State": state,
                "VolumeId": vid,
                "Iops": 3000,
                "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
                "VolumeType": vtype,
                "MultiAttachEnabled": False,
                "Throughput": 125,
            }
        )
        return vid

    teams = [team_of(t) for t in ("nlp", "vision", "speech", "recsys")]
    ckpt_volumes = []
    for i in range(6):
        team = teams[i % len(teams)]
        ckpt_volumes.append(
            volume(
                rng.choice([4000, 8000, 12000, 16000]),
                "in-use",
                rng.uniform(60, 400),
                {"Name": f"{team}-ckpt-{i:02d}", "Purpose": "checkpoints", "team": team},
            )
        )
    for i in range(5):
        volume(
            rng.choice([500, 1000, 2000]),
            "in-use",
            rng.uniform(10, 300),
            {"Name": f"dataset-cache-{i:02d}", "Purpose": "data"},
        )
    for i in range(7):
        team = teams[i % len(teams)]
        age = [3, 12, 45, 80, 150, 240, 400][i]
        tags = {"Name": f"{team}-scratch-{i:02d}", "team": team}
        if i == 5:
            tags["athanor-keep"] = "true"  # someone's dataset they asked us not to touch
        volume(rng.choice([1000, 2000, 4000]), "available", age, tags, vtype="gp3" if i % 3 else "gp2")

    snapshots = []
    for vid in [v["VolumeId"] for v in volumes] + [f"vol-{rng.getrandbits(68):017x}" for _ in range(3)]:
        size = next((v["Size"] for v in volumes if v["VolumeId"] == vid), 2000)
        for _ in range(rng.randint(0, 4)):
            started = now - timedelta(days=rng.uniform(1, 500))
            snapshots.append(
                {
                    "Description": f"nightly {vid}",
                    "Encrypted": True,
                    "OwnerId": owner_of(team_of_volume.get(vid, "")),
                    "Progress": "100%",
                    "SnapshotId": f"snap-{rng.getrandbits(68):017x}",
                    "StartTime": _iso(started),
                    "State": "completed",
                    "VolumeId": vid,
                    "VolumeSize": size,
                    "StorageTier": "standard",
                    "Tags": [{"Key": "Name", "Value": f"backup-{vid[-6:]}"}],
                }
            )
    return volumes, snapshots


# ---------------------------------------------------------------- the demo fleet's storage

# The storage story's teams as the fleet names them (its language-model team is `llm`).
FLEET_TEAMS = {"nlp": "llm"}
# What one snapshot bills, as a share of its volume's size: the first holds the data written so
# far, the later ones only the blocks changed since (DescribeSnapshots shows neither).
FIRST_SNAPSHOT_SHARE = 0.5
LATER_SNAPSHOT_SHARE = 0.08


def fleet_team(team: str) -> str:
    return FLEET_TEAMS.get(team, team)


def fleet_bucket(team: str) -> str:
    """The checkpoint bucket of a fleet team: the one its bill charges and its inventory lists."""
    return f"demo-{team}-checkpoints"


def _fleet_place(model: _Model) -> tuple[str, str, str]:
    team = fleet_team(model.team)
    return fleet_bucket(team), f"{model.name}/", team


@dataclass(frozen=True)
class FleetStorage:
    """The fleet's checkpoint buckets and EBS volumes and snapshots as they stand at the end of
    the demo (`DemoConfig.end_date`); `as_of` cuts them to what existed by a delivery's cutoff."""

    objects: tuple[dict, ...]  # inventory rows of every team bucket
    volumes: tuple[dict, ...]  # DescribeVolumes items, each tagged with its team
    snapshots: tuple[dict, ...]  # DescribeSnapshots items
    team_of_volume: dict[str, str]  # volume id -> fleet team (snapshots bill to their volume's team)

    def objects_as_of(self, cutoff: datetime) -> list[dict]:
        """The inventory a delivery at `cutoff` lists: versions written before it, the newest of
        each key (or its delete marker) marked latest."""
        kept = [dict(r) for r in self.objects if r["last_modified"] < cutoff]
        newest: dict[tuple[str, str], dict] = {}
        for r in sorted(kept, key=lambda r: r["last_modified"]):
            newest[(r["bucket"], r["key"])] = r
        for r in kept:
            r["is_latest"] = newest[(r["bucket"], r["key"])] is r
        return kept

    def listing_as_of(self, cutoff: datetime) -> tuple[list[dict], list[dict]]:
        stamp = _iso(cutoff)
        volumes = [v for v in self.volumes if v["CreateTime"] < stamp]
        snapshots = [s for s in self.snapshots if s["StartTime"] < stamp]
        return volumes, snapshots

    def snapshot_billed_gib(self) -> dict[str, float]:
        """GiB each snapshot bills: the oldest of a volume holds its data, later ones the changes."""
        out: dict[str, float] = {}
        seen: set[str] = set()
        for snap in sorted(self.snapshots, key=lambda s: (s["VolumeId"], s["StartTime"])):
            share = LATER_SNAPSHOT_SHARE if snap["VolumeId"] in seen else FIRST_SNAPSHOT_SHARE
            seen.add(snap["VolumeId"])
            out[snap["SnapshotId"]] = snap["VolumeSize"] * share
        return out


def fleet_storage(cfg: DemoConfig) -> FleetStorage:
    """The storage of the demo fleet: one checkpoint bucket per team, EBS owned by the teams."""
    objects = _rows(cfg.end_date, cfg.seed, _fleet_place)
    accounts = {t.name: t.usage_account_id for t in cfg.teams}
    teams = [t.name for t in cfg.teams]
    volumes, snapshots = _ebs_listing(
        cfg.end_date, cfg.seed, team_of=fleet_team, owner_of=lambda team: accounts.get(team, "")
    )
    team_of_volume: dict[str, str] = {}
    for i, v in enumerate(volumes):
        tags = {t["Key"]: t["Value"] for t in v["Tags"]}
        if "team" not in tags:  # shared dataset caches: each billed to one team, tagged so
            v["Tags"].append({"Key": "team", "Value": teams[i % len(teams)]})
            tags["team"] = teams[i % len(teams)]
        team_of_volume[v["VolumeId"]] = tags["team"]
    for s in snapshots:
        if s["VolumeId"] not in team_of_volume:  # a snapshot of a volume deleted long ago
            team_of_volume[s["VolumeId"]] = teams[int(unit_hash(cfg.seed, s["VolumeId"]) * len(teams))]
        s["OwnerId"] = accounts[team_of_volume[s["VolumeId"]]]
    return FleetStorage(tuple(objects), tuple(volumes), tuple(snapshots), team_of_volume)


def _attach_to_running(volumes: list[dict], running: list[tuple[str, str]], team_of: dict[str, str]) -> None:
    """Attach each in-use volume to an instance of the bill running at the cutoff, its team's
    where it has one: (instance id, team) pairs, in a stable order."""
    if not running:
        return
    by_team: dict[str, list[str]] = {}
    for instance, team in running:
        by_team.setdefault(team, []).append(instance)
    for i, v in enumerate(v for v in volumes if v["Attachments"]):
        pool = by_team.get(team_of.get(v["VolumeId"], ""), [r for r, _ in running])
        v["Attachments"][0]["InstanceId"] = pool[i % len(pool)]


def generate_storage(
    out_dir: str | Path, cfg: DemoConfig, as_of: date | None = None, *, file_format: str = "CSV"
) -> dict[str, list[Path]]:
    """Write the fleet's storage deliveries as of the end of `as_of` (default cfg.end_date): one
    S3 Inventory per team bucket under `inventory/`, the EBS listings under `ebs/`.

    They describe what the bill charges (`athanor.demo.charges`): the same buckets, bytes and
    storage classes, the same volumes and snapshots; in-use volumes are attached to instances
    the bill shows running at the cutoff.
    """
    from athanor.demo.jobs import cutoff_of, simulate
    from athanor.demo.usage import usage_lines

    out = Path(out_dir)
    day = as_of or cfg.end_date
    cutoff_s = cutoff_of(cfg, as_of)
    cutoff = datetime.fromtimestamp(cutoff_s, UTC)
    storage = fleet_storage(cfg)
    objects = storage.objects_as_of(cutoff)
    manifests = [
        _write_inventory(
            out / "inventory",
            day,
            bucket,
            [r for r in objects if r["bucket"] == bucket],
            file_format,
            f"{cfg.seed}:{bucket}",
        )
        for bucket in sorted({r["bucket"] for r in objects})
    ]
    usage = usage_lines(cfg, simulate(cfg), cutoff_s)
    last_hour = usage[(usage["end_s"] >= cutoff_s) & (usage["region"] == "us-east-1")]  # the volumes' region
    running = sorted(set(zip(last_hour["resource_id"], last_hour["team"], strict=True)))
    volumes, snapshots = storage.listing_as_of(cutoff)
    volumes = json.loads(json.dumps(volumes))  # attachments are per delivery: leave `storage` as it is
    _attach_to_running(volumes, running, storage.team_of_volume)
    listings = _write_ebs(out / "ebs", volumes, snapshots)
    return {"inventory": manifests, "ebs": list(listings)}

"""Checkpoint-storage inventories in one canonical shape.

S3 Inventory deliveries (manifest.json + gzipped header-less CSV or Parquet data files), a live
`ListObjectVersions` listing, and EBS `DescribeVolumes` / `DescribeSnapshots` JSON as the AWS CLI
prints it. One row per object version (delete markers included) in `INVENTORY_COLUMNS`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from athanor.ingest import sniff
from athanor.land.names import shown
from athanor.reference import IT_ACCESS_TIERS, S3_STORAGE_CLASSES

INVENTORY_COLUMNS = [
    "bucket",
    "key",
    "version_id",
    "is_latest",
    "is_delete_marker",
    "size_bytes",
    "last_modified",
    "storage_class",
    "it_access_tier",
    "etag",
]

# Manifest field name (as in fileSchema) -> canonical column. Matching is on the name lower-cased
# with underscores and spaces removed, so CSV's "LastModifiedDate" and Parquet's
# "last_modified_date" land on the same column.
_FIELD_TO_COLUMN = {
    "bucket": "bucket",
    "key": "key",
    "versionid": "version_id",
    "islatest": "is_latest",
    "isdeletemarker": "is_delete_marker",
    "size": "size_bytes",
    "lastmodifieddate": "last_modified",
    "storageclass": "storage_class",
    "intelligenttieringaccesstier": "it_access_tier",
    "etag": "etag",
}
REQUIRED_FIELDS = ("Bucket", "Key", "Size", "LastModifiedDate", "StorageClass")


class InventoryError(ValueError):
    """An inventory delivery that cannot be trusted; names file, row, column and rule."""

    def __init__(
        self,
        file: str | Path,
        rule: str,
        *,
        row: int | None = None,
        column: str | None = None,
        value: object = None,
    ) -> None:
        self.file, self.rule, self.row, self.column, self.value = str(file), rule, row, column, value
        where = shown(self.file)
        if row is not None:
            where += f": row {row}"
        if column is not None:
            where += f", column {column}" if row is not None else f": column {column}"
        super().__init__(f"{where}: {rule}" + (f" (got {value!r})" if value is not None else ""))


def _norm(field: str) -> str:
    return field.strip().lower().replace("_", "").replace(" ", "")


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    return con


def empty_inventory() -> pd.DataFrame:
    """A zero-row frame with the canonical columns and dtypes."""
    return _typed(pd.DataFrame({c: [] for c in INVENTORY_COLUMNS}))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    df = df[INVENTORY_COLUMNS].copy()
    for col in ("bucket", "key", "version_id", "storage_class", "it_access_tier", "etag"):
        df[col] = df[col].astype("string")
    df["is_latest"] = df["is_latest"].astype(bool)
    df["is_delete_marker"] = df["is_delete_marker"].astype(bool)
    df["size_bytes"] = df["size_bytes"].astype("int64")
    df["last_modified"] = pd.to_datetime(df["last_modified"], utc=True)
    return df.reset_index(drop=True)


@dataclass(frozen=True)
class Manifest:
    """The parts of an S3 Inventory manifest.json this module uses."""

    path: Path
    source_bucket: str
    destination_bucket: str
    file_format: str  # CSV | Parquet
    fields: tuple[str, ...]
    files: tuple[dict[str, Any], ...]
    creation_timestamp: datetime | None


def read_manifest(path: str | Path) -> Manifest:
    """Parse and check an S3 Inventory manifest.json (required keys, known format, required schema fields).

    The only reader of this format; the other manifest a delivery can carry, a legacy CUR
    report's, is read by `athanor.land.manifests` (see there for the two).
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InventoryError(path, f"manifest is not readable JSON: {exc}") from exc
    for k in ("sourceBucket", "fileFormat", "fileSchema", "files"):
        if k not in doc:
            raise InventoryError(path, f"manifest lacks key {k!r}", column=k)
    fmt = doc["fileFormat"]
    if fmt not in ("CSV", "Parquet"):
        raise InventoryError(path, "fileFormat must be CSV or Parquet", column="fileFormat", value=fmt)
    schema = doc["fileSchema"]
    if fmt == "CSV":
        fields = tuple(f.strip() for f in schema.split(","))
    else:
        # Parquet manifests carry a message schema: "message s3.inventory { required binary bucket (STRING); ...}"
        fields = tuple(
            part.split()[2] for part in schema.split("{", 1)[-1].split(";") if len(part.split()) >= 3
        )
    present = {_norm(f) for f in fields}
    for req in REQUIRED_FIELDS:
        if _norm(req) not in present:
            raise InventoryError(path, "required field missing from fileSchema", column=req)
    ts = doc.get("creationTimestamp")
    created = datetime.fromtimestamp(int(ts) / 1000, tz=UTC) if ts else None
    return Manifest(
        path=path,
        source_bucket=doc["sourceBucket"],
        destination_bucket=doc.get("destinationBucket", ""),
        file_format=fmt,
        fields=fields,
        files=tuple(doc["files"]),
        creation_timestamp=created,
    )


def _locate(manifest_dir: Path, key: str) -> Path | None:
    """Find a manifest file key on disk.

    AWS writes keys relative to the destination bucket
    (`prefix/src-bucket/config/data/x.csv.gz`) while the manifest sits in a dated folder beside
    `data/`; a local copy may keep any tail of that path, so try the tails from the longest,
    relative to the manifest's folder and its parents.
    """
    parts = Path(key).parts
    for base in (manifest_dir, *list(manifest_dir.parents)[:3]):
        for i in range(len(parts)):
            candidate = base.joinpath(*parts[i:])
            if candidate.is_file():
                return candidate
    return None


def _md5(path: Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _canonical_select(columns: dict[str, str], url_encoded_keys: bool) -> str:
    """SQL turning raw columns (all present ones, by canonical name) into typed canonical ones."""

    def col(name: str, default: str) -> str:
        return f'"{columns[name]}"' if name in columns else default

    key = col("key", "NULL")
    if url_encoded_keys:
        # CSV inventories form-encode keys: a space is '+', a literal '+' is %2B.
        key = f"url_decode(replace({key}, '+', ' '))"
    size = col("size_bytes", "NULL")
    lm = col("last_modified", "NULL")
    return f"""
        SELECT
          rowid + 1 AS row_number,
          CAST({col("bucket", "NULL")} AS VARCHAR) AS bucket,
          CAST({key} AS VARCHAR) AS key,
          NULLIF(CAST({col("version_id", "NULL")} AS VARCHAR), '') AS version_id,
          CAST({col("is_latest", "'true'")} AS VARCHAR) AS is_latest_raw,
          CAST({col("is_delete_marker", "'false'")} AS VARCHAR) AS is_delete_marker_raw,
          CAST({size} AS VARCHAR) AS size_raw,
          TRY_CAST({size} AS BIGINT) AS size_bytes,
          CAST({lm} AS VARCHAR) AS last_modified_raw,
          TRY_CAST({lm} AS TIMESTAMPTZ) AS last_modified,
          COALESCE(CAST({col("storage_class", "NULL")} AS VARCHAR), '') AS storage_class,
          COALESCE(CAST({col("it_access_tier", "NULL")} AS VARCHAR), '') AS it_access_tier,
          COALESCE(CAST({col("etag", "NULL")} AS VARCHAR), '') AS etag
        FROM raw
    """


def _validate(df: pd.DataFrame, file: Path) -> pd.DataFrame:
    """Check one data file's rows; raise on the first bad row, else return canonical rows."""

    def fail(mask: pd.Series, column: str, rule: str, raw: str) -> None:
        if mask.any():
            first = df.loc[mask.to_numpy()].iloc[0]
            raise InventoryError(file, rule, row=int(first["row_number"]), column=column, value=first[raw])

    bools = {"true": True, "false": False}
    for name in ("is_latest", "is_delete_marker"):
        raw = df[f"{name}_raw"].str.lower()
        fail(~raw.isin(list(bools)), name, "must be true or false", f"{name}_raw")
        df[name] = raw.map(bools).astype(bool)
    fail(df["bucket"].isna() | (df["bucket"] == ""), "bucket", "must not be empty", "bucket")
    fail(df["key"].isna() | (df["key"] == ""), "key", "must not be empty", "key")
    marker = df["is_delete_marker"]
    size_given = df["size_raw"].notna() & (df["size_raw"] != "")
    fail(size_given & df["size_bytes"].isna(), "size_bytes", "size must be an integer", "size_raw")
    fail(df["size_bytes"].fillna(0) < 0, "size_bytes", "size must be >= 0", "size_raw")
    # Delete markers have no size and no storage class in an inventory; objects must have both.
    fail(~marker & ~size_given, "size_bytes", "size missing on an object version", "size_raw")
    df["size_bytes"] = df["size_bytes"].fillna(0).astype("int64")
    lm_given = df["last_modified_raw"].notna() & (df["last_modified_raw"] != "")
    fail(
        ~lm_given | df["last_modified"].isna(),
        "last_modified",
        "must be an ISO 8601 timestamp",
        "last_modified_raw",
    )
    sc = df["storage_class"]
    fail(~marker & ~sc.isin(S3_STORAGE_CLASSES), "storage_class", "unknown storage class", "storage_class")
    tier = df["it_access_tier"]
    fail(
        (tier != "") & ~tier.isin(IT_ACCESS_TIERS),
        "it_access_tier",
        "unknown Intelligent-Tiering access tier",
        "it_access_tier",
    )
    return df


def _read_data_file(
    con: duckdb.DuckDBPyConnection, manifest: Manifest, path: Path, limits: sniff.InputLimits
) -> pd.DataFrame:
    # A part reached through its manifest may not have been looked at as a file of the night:
    # its expansion is counted here before DuckDB decompresses it.
    sniff.check_expansion(path, limits)
    con.execute("DROP TABLE IF EXISTS raw")
    if manifest.file_format == "CSV":
        names = [f"c{i}" for i in range(len(manifest.fields))]
        columns_sql = "{" + ", ".join(f"'{n}': 'VARCHAR'" for n in names) + "}"
        try:
            con.execute(
                "CREATE TEMP TABLE raw AS SELECT * FROM read_csv(?, header = false, columns = "
                + columns_sql
                + ", quote = '\"', escape = '\"', delim = ',', compression = 'auto', strict_mode = true)",
                [str(path)],
            )
        except duckdb.Error as exc:
            raise InventoryError(path, f"not a CSV file with {len(names)} columns: {exc}") from exc
        mapping = {
            _FIELD_TO_COLUMN[_norm(f)]: n
            for f, n in zip(manifest.fields, names, strict=True)
            if _norm(f) in _FIELD_TO_COLUMN
        }
    else:
        try:
            con.execute("CREATE TEMP TABLE raw AS SELECT * FROM read_parquet(?)", [str(path)])
        except duckdb.Error as exc:
            raise InventoryError(path, f"not a readable Parquet file: {exc}") from exc
        present = [r[0] for r in con.execute("DESCRIBE raw").fetchall()]
        mapping = {_FIELD_TO_COLUMN[_norm(c)]: c for c in present if _norm(c) in _FIELD_TO_COLUMN}
        for req in REQUIRED_FIELDS:
            if _FIELD_TO_COLUMN[_norm(req)] not in mapping:
                raise InventoryError(path, "required column missing from Parquet file", column=req)
    df = con.execute(_canonical_select(mapping, url_encoded_keys=manifest.file_format == "CSV")).df()
    return _validate(df, path)


def read_inventory(
    manifest_path: str | Path, limits: sniff.InputLimits = sniff.DEFAULT_LIMITS
) -> pd.DataFrame:
    """Read one S3 Inventory delivery into the canonical frame, after checking every file.

    `limits`: how far a gzipped data file may expand (`athanor.ingest.sniff`).

    Raises InventoryError (a ValueError) for a missing file, an MD5 mismatch, a missing required
    column or a bad row (naming file, row, column and rule).
    """
    manifest = read_manifest(manifest_path)
    con = _connect()
    frames = []
    for entry in manifest.files:
        key = entry.get("key", "")
        path = _locate(manifest.path.parent, key)
        if path is None:
            raise InventoryError(
                manifest.path, "data file listed in the manifest is missing", column="files", value=key
            )
        expected = str(entry.get("MD5checksum", "")).lower()
        if expected and _md5(path) != expected:
            raise InventoryError(
                path,
                "MD5 of the file bytes does not match the manifest",
                column="MD5checksum",
                value=expected,
            )
        frames.append(_read_data_file(con, manifest, path, limits))
    con.close()
    if not frames:
        return empty_inventory()
    return _typed(pd.concat(frames, ignore_index=True))


def find_manifests(root: str | Path) -> list[Path]:
    """The newest manifest.json per source bucket under root (or root itself if it is a manifest)."""
    root = Path(root)
    if root.is_file():
        return [root]
    newest: dict[str, tuple[str, Path]] = {}
    for path in sorted(root.rglob("manifest.json")):
        m = read_manifest(path)
        # Delivery folders are named by date (YYYY-MM-DDTHH-MMZ), so the name orders them.
        stamp = m.creation_timestamp.isoformat() if m.creation_timestamp else path.parent.name
        if m.source_bucket not in newest or stamp > newest[m.source_bucket][0]:
            newest[m.source_bucket] = (stamp, path)
    return [p for _, p in sorted(newest.values(), key=lambda t: str(t[1]))]


def read_inventories(paths: list[str | Path]) -> pd.DataFrame:
    """Read several deliveries (manifest paths or folders holding them) into one frame."""
    frames = [read_inventory(m) for p in paths for m in find_manifests(p)]
    return _typed(pd.concat(frames, ignore_index=True)) if frames else empty_inventory()


def list_object_versions(
    s3_client: Any, bucket: str, prefix: str = "", page_size: int | None = None
) -> pd.DataFrame:
    """A live `ListObjectVersions` listing (all pages) in the canonical shape."""
    rows: list[dict[str, Any]] = []
    paginator = s3_client.get_paginator("list_object_versions")
    config = {"PageSize": page_size} if page_size else {}
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix, PaginationConfig=config):
        for v in page.get("Versions", []):
            rows.append(
                {
                    "bucket": bucket,
                    "key": v["Key"],
                    "version_id": None if v.get("VersionId") in (None, "null") else v["VersionId"],
                    "is_latest": bool(v.get("IsLatest", True)),
                    "is_delete_marker": False,
                    "size_bytes": int(v.get("Size", 0)),
                    "last_modified": v["LastModified"],
                    "storage_class": v.get("StorageClass", "STANDARD"),
                    "it_access_tier": "",
                    "etag": str(v.get("ETag", "")).strip('"'),
                }
            )
        for d in page.get("DeleteMarkers", []):
            rows.append(
                {
                    "bucket": bucket,
                    "key": d["Key"],
                    "version_id": None if d.get("VersionId") in (None, "null") else d["VersionId"],
                    "is_latest": bool(d.get("IsLatest", False)),
                    "is_delete_marker": True,
                    "size_bytes": 0,
                    "last_modified": d["LastModified"],
                    "storage_class": "",
                    "it_access_tier": "",
                    "etag": "",
                }
            )
    if not rows:
        return empty_inventory()
    return _typed(pd.DataFrame(rows))


# --- EBS -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EbsInventory:
    """EBS volumes (one row per volume) and snapshots (one row per snapshot)."""

    volumes: pd.DataFrame  # volume_id, size_gib, volume_type, state, create_time, instance_id, tags, name
    snapshots: pd.DataFrame  # snapshot_id, volume_id, volume_size_gib, start_time, state, tags, name


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


def _load_json(src: str | Path | dict[str, Any], top: str) -> list[dict[str, Any]]:
    try:
        doc = src if isinstance(src, dict) else json.loads(Path(src).read_text())
    except json.JSONDecodeError as exc:
        raise InventoryError(str(src), f"not readable JSON: {exc}") from None
    if top not in doc:
        raise InventoryError(
            str(src) if not isinstance(src, dict) else "<dict>", f"expected top-level key {top!r}", column=top
        )
    return doc[top]


def read_ebs(
    volumes: str | Path | dict[str, Any] | None = None, snapshots: str | Path | dict[str, Any] | None = None
) -> EbsInventory:
    """Read `aws ec2 describe-volumes` / `describe-snapshots` JSON (files or parsed dicts)."""
    vol_rows = []
    for v in _load_json(volumes, "Volumes") if volumes is not None else []:
        tags = _tags(v.get("Tags"))
        attachments = v.get("Attachments") or []
        vol_rows.append(
            {
                "volume_id": v["VolumeId"],
                "size_gib": int(v["Size"]),
                "volume_type": v.get("VolumeType", "gp3"),
                "state": v.get("State", ""),
                "create_time": pd.Timestamp(v["CreateTime"]).tz_convert("UTC")
                if pd.Timestamp(v["CreateTime"]).tzinfo
                else pd.Timestamp(v["CreateTime"]).tz_localize("UTC"),
                "instance_id": attachments[0].get("InstanceId", "") if attachments else "",
                "tags": tags,
                "name": tags.get("Name", ""),
            }
        )
    snap_rows = []
    for s in _load_json(snapshots, "Snapshots") if snapshots is not None else []:
        tags = _tags(s.get("Tags"))
        ts = pd.Timestamp(s["StartTime"])
        snap_rows.append(
            {
                "snapshot_id": s["SnapshotId"],
                "volume_id": s.get("VolumeId", ""),
                "volume_size_gib": int(s.get("VolumeSize", 0)),
                "start_time": ts.tz_convert("UTC") if ts.tzinfo else ts.tz_localize("UTC"),
                "state": s.get("State", ""),
                "tags": tags,
                "name": tags.get("Name", ""),
            }
        )
    vol_cols = ["volume_id", "size_gib", "volume_type", "state", "create_time", "instance_id", "tags", "name"]
    snap_cols = ["snapshot_id", "volume_id", "volume_size_gib", "start_time", "state", "tags", "name"]
    return EbsInventory(
        volumes=pd.DataFrame(vol_rows, columns=vol_cols),
        snapshots=pd.DataFrame(snap_rows, columns=snap_cols),
    )


def write_csv_gz(path: Path, rows: list[list[str]]) -> None:
    """Write rows as AWS does for CSV inventories: every field quoted, no header, gzip."""
    text = "".join(",".join('"' + str(v).replace('"', '""') + '"' for v in r) + "\n" for r in rows)
    # mtime=0 and no file name in the gzip header: the same rows give the same bytes (and MD5).
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write(text.encode())


# ---------------------------------------------------------------------------- EC2 instances

EC2_INSTANCE_COLUMNS = (
    "instance_id",
    "instance_type",
    "private_dns_name",
    "private_ip",
    "name_tag",
    "team",
    "launch_time",
    "state",
    "tags",
)


def read_ec2_instances(src: str | Path | dict[str, Any], team_tag: str = "team") -> pd.DataFrame:
    """`aws ec2 describe-instances` JSON (a file or the parsed dict): one row per instance.

    What names a scheduler node had: PrivateDnsName (its first label, ip-10-0-1-11, is the host
    name Slurm and the telemetry see), the Name tag and the instance id; LaunchTime says from
    when. An instance without InstanceId is refused, naming the reservation and instance.
    """
    name = shown(str(src)) if not isinstance(src, dict) else "<dict>"
    rows = []
    for r, reservation in enumerate(_load_json(src, "Reservations"), start=1):
        for i, instance in enumerate(reservation.get("Instances") or [], start=1):
            if not instance.get("InstanceId"):
                raise InventoryError(
                    name, f"reservation {r}, instance {i}: InstanceId missing", column="InstanceId"
                )
            tags = _tags(instance.get("Tags"))
            launch = instance.get("LaunchTime")
            try:
                ts = pd.Timestamp(launch) if launch else None
            except (TypeError, ValueError):
                raise InventoryError(
                    name,
                    f"reservation {r}, instance {i} ({instance['InstanceId']}): LaunchTime must be an "
                    "ISO 8601 time",
                    column="LaunchTime",
                    value=launch,
                ) from None
            if ts is not None:
                ts = (ts.tz_convert("UTC") if ts.tzinfo else ts.tz_localize("UTC")).tz_localize(None)
            rows.append(
                {
                    "instance_id": instance["InstanceId"],
                    "instance_type": instance.get("InstanceType"),
                    "private_dns_name": instance.get("PrivateDnsName") or None,
                    "private_ip": instance.get("PrivateIpAddress") or None,
                    "name_tag": tags.get("Name"),
                    "team": tags.get(team_tag),
                    "launch_time": ts,
                    "state": (instance.get("State") or {}).get("Name"),
                    "tags": tags,
                }
            )
    frame = pd.DataFrame(rows, columns=list(EC2_INSTANCE_COLUMNS))
    frame["launch_time"] = pd.to_datetime(frame["launch_time"]).astype("datetime64[us]")
    return frame

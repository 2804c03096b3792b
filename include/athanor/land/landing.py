"""Where export files land: a local folder or an `s3://bucket/prefix` on any S3-compatible endpoint.

One interface for both. `list_deliveries` groups what is there into deliveries (the
files of one folder; or, for a legacy AWS CUR, the parts its manifest lists) and
`fetch` gives local paths for one delivery: a folder's own files, or bucket
objects mirrored into a cache and downloaded again only when their ETag or size
changed. Everything after `fetch` is the same code path for both.

The boto3 client is passed in: the Airflow task builds it from a connection
(S3Hook), the CLI from the environment.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from athanor.land.manifests import CUR_MANIFEST_SUFFIX, MAX_MANIFEST_BYTES, CurManifest, parse_cur_manifest
from athanor.land.names import shown


@dataclass(frozen=True)
class LandedObject:
    key: str  # posix path relative to the source root
    size: int
    etag: str  # the S3 ETag; for a local file its mtime in ns
    modified: float  # seconds since the epoch


@dataclass(frozen=True)
class Delivery:
    source: str  # the folder or s3://bucket/prefix that was listed
    name: str  # the delivery's folder relative to `source` ('' for the root itself)
    objects: tuple[LandedObject, ...]  # the data files (a manifest's parts), not the manifest
    manifest: str | None = None
    missing: tuple[str, ...] = ()  # parts the manifest lists that have not landed yet
    s3_client: Any = field(default=None, repr=False, compare=False)

    @property
    def ready(self) -> bool:
        return not self.missing and bool(self.objects)

    @property
    def uri(self) -> str:
        return self.source.rstrip("/") + ("/" + self.name if self.name else "")


def is_s3(source: str) -> bool:
    return source.startswith("s3://")


def split_s3(url: str) -> tuple[str, str]:
    """'s3://bucket/a/b' -> ('bucket', 'a/b/'); the prefix is '' or ends with '/'."""
    bucket, _, prefix = url[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    return bucket, (prefix + "/" if prefix else "")


def _list_local(root: Path) -> list[LandedObject]:
    if root.is_file():
        stat = root.stat()
        return [LandedObject(root.name, stat.st_size, str(stat.st_mtime_ns), stat.st_mtime)]
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        # Dot files are ours (cache sidecars) or the OS's, never a provider's.
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            stat = path.stat()
            found.append(LandedObject(rel.as_posix(), stat.st_size, str(stat.st_mtime_ns), stat.st_mtime))
    return found


def _list_s3(client: Any, bucket: str, prefix: str) -> list[LandedObject]:
    found = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            key = obj["Key"][len(prefix) :]
            if not key or key.endswith("/") or any(part.startswith(".") for part in key.split("/")):
                continue
            found.append(
                LandedObject(key, int(obj["Size"]), obj["ETag"].strip('"'), obj["LastModified"].timestamp())
            )
    return sorted(found, key=lambda o: o.key)


def _read_manifest(source: str, key: str, client: Any) -> CurManifest | None:
    try:
        if is_s3(source):
            bucket, prefix = split_s3(source)
            body = client.get_object(Bucket=bucket, Key=prefix + key)["Body"].read()
        else:
            root = Path(source)
            body = (root if root.is_file() else root / key).read_bytes()
    except OSError:
        return None
    return parse_cur_manifest(body)


def _match_part(report_key: str, folder: str, by_name: dict[str, list[LandedObject]]) -> LandedObject | None:
    """The landed object a manifest's report key names, under the manifest's folder."""
    wanted = PurePosixPath(report_key)
    candidates = [o for o in by_name.get(wanted.name, []) if o.key.startswith(folder)]
    # Prefer the one in the same assembly folder (the part's parent), as keys repeat across assemblies.
    for obj in candidates:
        if PurePosixPath(obj.key).parent.name == wanted.parent.name:
            return obj
    return candidates[0] if candidates else None


def list_deliveries(source: str, s3_client: Any = None) -> list[Delivery]:
    """The deliveries under a folder or bucket prefix, in a stable order.

    A legacy CUR manifest makes its listed parts one delivery (with `missing` set
    while some have not landed). When a billing period has several manifests (AWS
    writes a new assembly per restatement), only the newest counts and the parts
    of the older ones are left out. Every other file belongs to its folder's delivery.
    """
    if is_s3(source):
        if s3_client is None:
            raise ValueError(f"{shown(source)}: listing a bucket needs an S3 client")
        bucket, prefix = split_s3(source)
        objects = _list_s3(s3_client, bucket, prefix)
    else:
        objects = _list_local(Path(source))
    by_name: dict[str, list[LandedObject]] = defaultdict(list)
    for obj in objects:
        by_name[PurePosixPath(obj.key).name].append(obj)

    # Newest manifest per (report, billing period): AWS writes a new assembly per restatement.
    manifests: list[tuple[LandedObject, CurManifest]] = []
    for obj in objects:
        if (
            obj.key.endswith(CUR_MANIFEST_SUFFIX)
            and obj.size <= MAX_MANIFEST_BYTES
            and (doc := _read_manifest(source, obj.key, s3_client)) is not None
        ):
            manifests.append((obj, doc))
    # AWS writes the same manifest twice (period folder and assembly folder): one assembly is
    # one delivery, named by the shallower copy; of different assemblies the newest wins.
    newest: dict[tuple[str, str], tuple[LandedObject, CurManifest]] = {}
    for obj, doc in manifests:
        group = (PurePosixPath(obj.key).name, doc.billing_period)
        held = newest.get(group)
        if held is None:
            newest[group] = (obj, doc)
        elif held[1].assembly_id == doc.assembly_id:
            shallow = min(obj, held[0], key=lambda o: (o.key.count("/"), o.key))
            newest[group] = (replace(shallow, modified=max(obj.modified, held[0].modified)), doc)
        elif obj.modified > held[0].modified:
            newest[group] = (obj, doc)

    deliveries: list[Delivery] = []
    claimed: set[str] = {m.key for m, _ in manifests}
    for manifest, doc in newest.values():
        parts, missing = _parts(manifest, doc, by_name)
        name = PurePosixPath(manifest.key).parent.as_posix()
        deliveries.append(
            Delivery(
                source, "" if name == "." else name, tuple(parts), manifest.key, tuple(missing), s3_client
            )
        )
        claimed.update(p.key for p in parts)
    # The parts of superseded assemblies are not delivered at all.
    chosen = {m.key for m, _ in newest.values()}
    for manifest, doc in manifests:
        if manifest.key not in chosen:
            claimed.update(p.key for p in _parts(manifest, doc, by_name)[0])

    by_folder: dict[str, list[LandedObject]] = defaultdict(list)
    for obj in objects:
        if obj.key not in claimed:
            parent = PurePosixPath(obj.key).parent.as_posix()
            by_folder["" if parent == "." else parent].append(obj)
    for folder, objs in by_folder.items():
        deliveries.append(Delivery(source, folder, tuple(objs), None, (), s3_client))
    return sorted(deliveries, key=lambda d: (d.name, d.manifest or ""))


def _parts(
    manifest: LandedObject, doc: CurManifest, by_name: dict[str, list[LandedObject]]
) -> tuple[list[LandedObject], list[str]]:
    """The landed parts a manifest lists, and the names of those not landed yet."""
    parent = PurePosixPath(manifest.key).parent.as_posix()
    folder = "" if parent == "." else parent + "/"
    parts, missing = [], []
    for report_key in doc.report_keys:
        part = _match_part(report_key, folder, by_name)
        if part is None:
            missing.append(PurePosixPath(report_key).name)
        else:
            parts.append(part)
    return parts, missing


def fetch(delivery: Delivery, cache_dir: Path, s3_client: Any = None) -> list[Path]:
    """Local paths of a delivery's files; bucket objects are mirrored into `cache_dir`.

    A cached copy is kept while its ETag and size match the bucket's, so an
    unchanged file is not downloaded again (and its checksum, hence its load id,
    stays the same).
    """
    if not is_s3(delivery.source):
        root = Path(delivery.source)
        return [root if root.is_file() else root / o.key for o in delivery.objects]
    client = s3_client or delivery.s3_client
    if client is None:
        raise ValueError(f"{shown(delivery.uri)}: fetching from a bucket needs an S3 client")
    bucket, prefix = split_s3(delivery.source)
    paths = []
    for obj in delivery.objects:
        target = Path(cache_dir) / bucket / prefix / obj.key
        stamp = target.with_name(f".{target.name}.etag")
        expected = f"{obj.etag} {obj.size}"
        if not (target.exists() and stamp.exists() and stamp.read_text() == expected):
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.{os.getpid()}.part")
            client.download_file(bucket, prefix + obj.key, str(partial))
            # Atomic: a reader sees the old copy or the whole new one.
            os.replace(partial, target)
            stamp.write_text(expected)
        paths.append(target)
    return paths

-- Grain: one row per EBS listing document (DescribeVolumes or DescribeSnapshots), latest per kind.
-- Kept verbatim: the lifecycle recommender reads volumes and snapshots from it.
create table if not exists ebs_listings (
    load_id      varchar not null,
    kind         varchar not null,     -- volumes | snapshots
    source_file  varchar not null,
    items        integer not null,
    document     json not null,
    primary key (kind)
)

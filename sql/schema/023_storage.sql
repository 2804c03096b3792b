-- Grain: one row per object version in the latest inventory of each bucket.
create table if not exists storage_objects (
    load_id            varchar not null,
    inventory_date     date not null,
    bucket             varchar not null,
    key                varchar not null,
    version_id         varchar,
    is_latest          boolean,
    is_delete_marker   boolean,
    size_bytes         bigint,
    last_modified      timestamp,
    storage_class      varchar,
    it_access_tier     varchar,
    etag               varchar,
    run_id             varchar,            -- training run the checkpoint belongs to, when the key says so
    step               bigint,             -- checkpoint step, when the key says so
    primary key (bucket, key, version_id)
)

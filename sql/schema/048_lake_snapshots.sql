-- Grain: one row per run and lake table (ATHANOR_WAREHOUSE_MODE=lake only; empty otherwise).
-- The Iceberg snapshot a run read: the run's read-only view of the fact tables is this
-- snapshot (athanor.warehouse.lake.open_as_of), not a copied file.
create table if not exists lake_snapshots (
    run_id       varchar not null,
    table_name   varchar not null,   -- billing_facts
    snapshot_id  bigint not null,    -- Iceberg snapshot id (time travel)
    recorded_at  timestamp not null, -- UTC
    primary key (run_id, table_name)
);

comment on table lake_snapshots is 'Grain: one row per run and lake table. The Iceberg snapshot each lake table had when the run recorded it (lake mode): the run''s view of the warehouse, opened with athanor.warehouse.lake.open_as_of or athanor query.';
comment on column lake_snapshots.run_id is 'pipeline_runs.run_id';
comment on column lake_snapshots.table_name is 'The fact table kept in the lake (billing_facts).';
comment on column lake_snapshots.snapshot_id is 'The table''s Iceberg snapshot id when the run recorded it.';
comment on column lake_snapshots.recorded_at is 'When the run recorded it (UTC).';

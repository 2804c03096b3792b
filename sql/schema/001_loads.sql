-- The load ledger: one row per delivery (a file, or the parts of one multi-part
-- delivery) that Athanor has seen, whatever happened to it.
create table if not exists loads (
    load_id          varchar primary key,   -- sha256 of the delivery's files, first 16 hex
    kind             varchar not null,      -- billing | jobs | inventory | ebs
    source_format    varchar,               -- focus | cur2 | cur_legacy | azure | gcp | generic | slurm | sagemaker | s3_inventory
    source_uri       varchar not null,      -- where the delivery was read from (folder or bucket URL)
    files            varchar[] not null,    -- file names inside source_uri
    checksum_sha256  varchar not null,      -- over all files, in name order
    size_bytes       bigint not null,
    row_count        bigint,
    billing_periods  varchar[],             -- YYYY-MM of the periods the delivery covers
    billing_accounts varchar[],
    status           varchar not null,      -- loaded | replaced | failed | quarantined
    message          varchar,
    started_at       timestamp not null,
    finished_at      timestamp
)

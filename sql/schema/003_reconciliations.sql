-- One row per file and currency: the cost total read straight from the file next to
-- the total that landed in billing_facts. A load only commits when they agree to the cent.
create table if not exists reconciliations (
    load_id              varchar not null,
    source_file          varchar not null,
    billing_currency     varchar,
    file_rows            bigint not null,
    loaded_rows          bigint not null,
    file_billed_cost     decimal(38, 12),
    loaded_billed_cost   decimal(38, 12),
    difference           decimal(38, 12),
    reconciled           boolean not null,
    checked_at           timestamp not null
)

-- Grain: one row per data-quality rule per checked batch (a delivery, or one load of a table).
-- Every rule is stored, passing or not, so a run's checks can be audited; the GX result
-- document of the same check is written as JSON to the run's artifacts folder.
create table if not exists dq_results (
    run_id            varchar not null,
    load_id           varchar,              -- loads.load_id of the batch (null for ad-hoc checks)
    suite             varchar not null,     -- billing_facts | job_run_facts | storage_objects | focus_raw | cur2_raw
    table_name        varchar not null,     -- what was validated (e.g. the load's temp table `delivery`)
    rule              varchar not null,
    column_name       varchar,              -- canonical column the rule is about (null for row-set rules)
    severity          varchar not null,     -- error (blocks the batch) | warn (loads and reports)
    success           boolean not null,
    observed_value    varchar,
    unexpected_count  bigint,               -- bad rows (or bad files / days / months for set rules)
    examples          varchar[],            -- up to 5, as 'row 3: value'
    files             varchar[],            -- files the examples come from
    exception         varchar,              -- set when the rule could not be evaluated
    checked_at        timestamp not null
)

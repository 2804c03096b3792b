-- Grain: one row per pipeline stage run (what ran, for which day, with what outcome).
create table if not exists pipeline_runs (
    run_id       varchar not null,
    stage        varchar not null,
    as_of        date,
    started_at   timestamp not null,
    finished_at  timestamp,
    status       varchar not null,     -- success | failed
    summary      json,
    primary key (run_id, stage)
)

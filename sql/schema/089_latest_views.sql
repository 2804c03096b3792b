-- The latest run's rows of each per-run table: one view `latest_<table>` per table that keeps
-- every run's rows under its run_id (history kept so drift shows). The latest run is the one for
-- the newest day, and of that day's runs the one that finished last (pipeline_runs), as
-- reports/latest chooses: run ids sort as text, not by time ('scheduled__...' after
-- 'manual__...' whatever their dates), so they only break a tie no stage was recorded for.
-- A run that wrote no row to a table leaves the view on the run before it that did.
-- latest_dq_results differs: the checks of the run that checked a batch last.
-- This file runs after every table's definition (089, before 090's comments): a view binds its
-- table's columns when created, so a column added to a table later would be missing from it.
-- Not here: gpu_usage_hourly (one row per GPU and hour, owned by the last run that measured
-- that hour: already the latest), gpu_allocation_hourly (each run rewrites it whole), and the
-- ledgers spend_alerts, pipeline_runs, duration_fit_cache and lake_snapshots.

create or replace view latest_duration_fits as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from duration_fits) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select duration_fits.* from duration_fits semi join latest using (run_id);

create or replace view latest_recommendations as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from recommendations) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select recommendations.* from recommendations semi join latest using (run_id);

create or replace view latest_backtests as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from backtests) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select backtests.* from backtests semi join latest using (run_id);

create or replace view latest_gpu_plan as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from gpu_plan) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select gpu_plan.* from gpu_plan semi join latest using (run_id);

create or replace view latest_spend_anomalies as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from spend_anomalies) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select spend_anomalies.* from spend_anomalies semi join latest using (run_id);

create or replace view latest_spend_forecasts as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from spend_forecasts) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select spend_forecasts.* from spend_forecasts semi join latest using (run_id);

create or replace view latest_spend_forecast_accuracy as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from spend_forecast_accuracy) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select spend_forecast_accuracy.* from spend_forecast_accuracy semi join latest using (run_id);

create or replace view latest_budget_status as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from budget_status) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select budget_status.* from budget_status semi join latest using (run_id);

-- Checks are a log of when batches were checked, not of a day's results: the run that checked last.
create or replace view latest_dq_results as
with latest as (
    select run_id from dq_results order by checked_at desc, run_id desc limit 1
)
select dq_results.* from dq_results semi join latest using (run_id);

create or replace view latest_plan_steps as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from plan_steps) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select plan_steps.* from plan_steps semi join latest using (run_id);

create or replace view latest_spend_freshness as
with runs as (
    select t.run_id, max(t.as_of) as as_of, max(p.finished_at) as finished_at
    from (select distinct run_id, as_of from spend_freshness) as t
    left join pipeline_runs as p using (run_id)
    group by t.run_id
),
latest as (
    select run_id from runs order by as_of desc nulls last, finished_at desc nulls last, run_id desc limit 1
)
select spend_freshness.* from spend_freshness semi join latest using (run_id);

-- Unit economics per model and workload class, per week (issue 32, item 4): what a run, a GPU-hour
-- and a million training samples cost, so that a move (A100 -> H100) can be checked after the fact.
-- Grain: one row per week (the Monday, UTC, of the runs' start), model and workload class.
-- A run's cost: its share of the GPU machine-hours it held on a shared cluster (job_allocated_costs,
-- allocation by GPU-seconds, matched on the job and its scheduler), else the USD billing lines
-- tagged with its job_id (job_run_costs); a run with neither has no cost and is counted apart
-- (runs - costed_runs). Running jobs are left out: their cost so far is not a run's cost.
create or replace view unit_economics_weekly as
with allocated as (
    select job_id, job_source, sum(cost_usd) as cost_usd
    from job_allocated_costs
    where job_source <> 'bill_tag'
    group by all
),

tagged as (
    select job_id, any_value(effective_cost) as cost_usd
    from job_run_costs
    where billing_currency = 'USD' and effective_cost is not null
    group by job_id
),

runs as (
    select
        cast(date_trunc('week', j.start_time) as date)                  as week,
        coalesce(j.model, 'unknown')                                    as model,
        -- The GPU plan's class columns (athanor.recommend.gpu_choice.DEFAULT_GROUP_BY).
        concat_ws('/', coalesce(j.team, 'unknown'), coalesce(j.project, 'unknown'),
                  coalesce(j.model, 'unknown'), coalesce(j.phase, 'unknown'))  as job_class,
        coalesce(j.team, 'unknown')                                     as team,
        j.gpu_hours,
        -- Samples processed: throughput x time run (null where the log has no throughput).
        j.samples_per_second * j.duration_s                             as samples,
        cast(coalesce(a.cost_usd, t.cost_usd) as decimal(38, 12))       as cost_usd,
        case when a.cost_usd is not null then 'allocated'
             when t.cost_usd is not null then 'tagged' end              as cost_source
    from job_run_facts as j
    left join allocated as a on a.job_id = j.job_id and a.job_source = j.source
    left join tagged as t on t.job_id = j.job_id
    where j.start_time is not null and j.state <> 'running'
)

select
    week,
    model,
    job_class,
    team,
    count(*)                                                            as runs,
    count(cost_usd)                                                     as costed_runs,
    count(*) filter (where cost_source = 'allocated')                   as allocated_runs,
    count(*) filter (where cost_source = 'tagged')                      as tagged_runs,
    coalesce(sum(cost_usd), 0)                                          as cost_usd,
    coalesce(sum(gpu_hours) filter (where cost_usd is not null), 0)     as gpu_hours,
    coalesce(sum(samples) filter (where cost_usd is not null), 0)       as samples,
    sum(cost_usd) filter (where cost_usd is not null and samples > 0)   as cost_of_sampled_runs_usd,
    cast(sum(cost_usd) / nullif(count(cost_usd), 0) as decimal(18, 4))  as usd_per_run,
    cast(sum(cost_usd) / nullif(sum(gpu_hours) filter (where cost_usd is not null), 0) as decimal(18, 4))
                                                                        as usd_per_gpu_hour,
    cast(sum(cost_usd) filter (where cost_usd is not null and samples > 0)
         / nullif(sum(samples) filter (where cost_usd is not null and samples > 0) / 1e6, 0) as decimal(18, 4))
                                                                        as usd_per_million_samples
from runs
group by week, model, job_class, team;

comment on view unit_economics_weekly is 'Unit economics per week, model and workload class: cost per run, per GPU-hour and per million samples. Grain: one row per week (Monday, UTC, of the runs'' start), model and class. Cost: a run''s allocated share (job_allocated_costs) else its job_id-tagged USD bill lines (job_run_costs); running jobs left out. Sum cost_usd, gpu_hours, samples and cost_of_sampled_runs_usd over rows and divide for any coarser grain (per model: sum over classes).';
comment on column unit_economics_weekly.week is 'Monday (UTC) of the week the runs started.';
comment on column unit_economics_weekly.model is 'job_runs.model; unknown where the log has none.';
comment on column unit_economics_weekly.job_class is 'team/project/model/phase, the GPU plan''s class columns, unknown where a run has no value.';
comment on column unit_economics_weekly.team is 'The runs'' team (part of job_class).';
comment on column unit_economics_weekly.runs is 'Runs started in the week (completed, failed, cancelled, preempted; not running).';
comment on column unit_economics_weekly.costed_runs is 'Runs with a cost (allocated or tagged); the ratios are over these.';
comment on column unit_economics_weekly.allocated_runs is 'Runs costed by the GPU-seconds allocation of a shared cluster (job_allocated_costs).';
comment on column unit_economics_weekly.tagged_runs is 'Runs costed by the billing lines tagged with their job_id (job_run_costs), without an allocation.';
comment on column unit_economics_weekly.cost_usd is 'USD, exact: the costed runs'' cost.';
comment on column unit_economics_weekly.gpu_hours is 'GPU-hours of the costed runs (GPUs x duration, job_runs.gpu_hours).';
comment on column unit_economics_weekly.samples is 'Training samples of the costed runs: samples_per_second x duration_s, over runs that log a throughput.';
comment on column unit_economics_weekly.cost_of_sampled_runs_usd is 'Cost of the costed runs that log a throughput: the numerator of usd_per_million_samples.';
comment on column unit_economics_weekly.usd_per_run is 'cost_usd / costed_runs.';
comment on column unit_economics_weekly.usd_per_gpu_hour is 'cost_usd / gpu_hours: what a GPU-hour the runs used cost.';
comment on column unit_economics_weekly.usd_per_million_samples is 'cost_of_sampled_runs_usd / (samples / 1,000,000): null where no costed run logs a throughput.';

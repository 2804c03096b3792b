-- Grain: one row per training job and billing currency of the rows tagged to it (tag job_id);
-- a job no billing row names keeps one row with empty costs and says why (cost_status).
-- Links what the scheduler saw (job_runs) to what the cloud charged for it. Reads the billing
-- lines' sums by job_id tag that each load keeps (billing_job_daily), not the lines: reading the
-- tags of every line of the history cost the nightly report most of its time at 96M lines.
create or replace view job_run_costs as
with tagged as (
    select
        job_id,
        billing_currency,
        sum(effective_cost)                    as effective_cost,
        sum(billed_cost)                       as billed_cost,
        sum(usage_hours)                       as instance_hours,
        cast(sum(line_items) as bigint)        as billing_rows
    from billing_job_daily
    where job_id is not null and compute
    group by all
),

billed_span as (
    select min(first_charge_start) as first_hour, max(last_charge_end) as last_hour
    from billing_job_daily
)

select
    j.job_id,
    j.team,
    j.model,
    j.state,
    j.instance_type,
    j.pricing_model,
    j.gpu_hours,
    t.billing_currency,
    t.effective_cost,
    t.billed_cost,
    t.instance_hours,
    t.billing_rows,
    case
        when t.job_id is not null then 'billed'
        when j.start_time is null then 'never started'
        when b.first_hour is null
          or coalesce(j.end_time, j.start_time) < b.first_hour
          or j.start_time >= b.last_hour then 'outside the billed period'
        else 'no billing match'
    end                                        as cost_status
from job_run_facts as j
left join tagged as t using (job_id)
cross join billed_span as b

-- Grain: one row per training job and billing currency of the rows tagged to it (tag job_id);
-- a job no billing row names keeps one row with empty costs and says why (cost_status).
-- Links what the scheduler saw (job_runs) to what the cloud charged for it.
create or replace view job_run_costs as
with tagged as (
    select
        tags['job_id']                         as job_id,
        billing_currency,
        sum(effective_cost)                    as effective_cost,
        sum(billed_cost)                       as billed_cost,
        sum(x_usage_hours)                     as instance_hours,
        count(*)                               as billing_rows
    from billing_facts
    where tags['job_id'] is not null and x_instance_type is not null
    group by all
),

billed_span as (
    select min(charge_period_start) as first_hour, max(charge_period_end) as last_hour
    from billing_facts
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

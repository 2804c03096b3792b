-- Grain: one row per training job that billing rows are tagged to (tag job_id).
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
    t.billing_rows
from job_run_facts as j
join tagged as t using (job_id)

-- billing_facts summed to billing_job_daily's grain, for the lines the `where` fragment selects: a
-- load's own rows (athanor.ingest.daily keeps billing_job_daily with them), or every line (the
-- re-sum of a summary that does not count every line). Keep the expressions equal to the backfill
-- in sql/schema/005_billing_job_daily.sql (tests/unit/test_billing_daily.py checks that they agree).
select
    billing_account_id,
    billing_period_start,
    charge_period_start::date as day,
    billing_currency,
    tags['job_id'] as job_id,
    x_instance_type is not null as compute,
    charge_category,
    sum(effective_cost) as effective_cost,
    sum(billed_cost) as billed_cost,
    sum(x_usage_hours) as usage_hours,
    count(*) as line_items,
    min(charge_period_start) as first_charge_start,
    max(charge_period_end) as last_charge_end
from billing_facts
where {where}
group by all

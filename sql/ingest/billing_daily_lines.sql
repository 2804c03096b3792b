-- billing_facts summed to billing_daily's grain, for the lines the `where` fragment selects: a load's own rows
-- (athanor.ingest.daily keeps billing_daily with them), or every line (read in its place when
-- billing_daily does not cover billing_facts: a warehouse written outside the load). Keep the
-- expressions equal to the backfill in sql/schema/045_billing_daily.sql.
select
    billing_account_id,
    billing_period_start,
    charge_period_start::date as day,
    billing_currency,
    case when charge_category <> 'Usage' or charge_frequency = 'One-Time' then 'month_start' else 'usage' end as kind,
    coalesce(service_name, '(unknown)') as service,
    coalesce(sub_account_id, billing_account_id) as account,
    coalesce(nullif(tags['team'], ''), '(untagged)') as team,
    pricing_category,
    charge_category,
    commitment_discount_status,
    x_instance_family,
    service_category,
    sum(effective_cost) as effective_cost,
    count(*) as line_items,
    max(charge_period_end) as last_charge_end,
    coalesce(sum(x_usage_hours), 0) as usage_hours
from billing_facts
where {where}
group by all

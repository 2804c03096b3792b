-- billing_facts summed to billing_gpu_hourly's grain (instance usage in USD), for the lines
-- the `where` fragment selects: a load's own rows, or every line (see billing_daily_lines.sql). Keep the
-- expressions equal to the backfill in sql/schema/045_billing_daily.sql.
select
    billing_account_id,
    billing_period_start,
    date_trunc('hour', charge_period_start) as hour,
    x_instance_type,
    x_instance_family,
    coalesce(region_id, 'global') as region,
    x_pricing_model,
    sum(cast(x_usage_hours as double)) as usage_hours,
    sum(effective_cost) as effective_cost_usd,
    sum(coalesce(list_cost, billed_cost)) as list_cost_usd
from billing_facts
where ({where})
  and x_usage_hours > 0 and charge_category = 'Usage' and billing_currency = 'USD'
  and x_instance_type is not null
group by all

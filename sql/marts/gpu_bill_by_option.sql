-- Grain: one row per GPU pool (instance family x region) and pricing model, over
-- [$window_start, $window_end): the effective cost of its GPU usage. The same lines as
-- gpu_demand_hourly.sql (USD usage lines with usage hours, GPU instance types), so the rows
-- add up to the current bill the purchase mix is measured against.
select
    f.x_instance_family || '/' || coalesce(f.region_id, 'global')   as pool,
    f.x_pricing_model                                              as pricing_model,
    sum(cast(f.effective_cost as double))                          as effective_cost_usd
from billing_facts as f
join ref_instance_types as ref on ref.instance_type = f.x_instance_type
join ref_instance_families as r on r.instance_family = f.x_instance_family
where f.x_usage_hours > 0 and f.charge_category = 'Usage'
  and f.billing_currency = 'USD'
  and f.charge_period_start >= $window_start and f.charge_period_start < $window_end
group by all
order by all

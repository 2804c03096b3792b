-- Grain: one row per GPU pool (instance family x region) and pricing model, over
-- [$window_start, $window_end): the effective cost of its GPU usage. Read from the `hourly`
-- fragment, as gpu_demand_hourly.sql is (billing_gpu_hourly: the loads' hourly sums of the USD
-- usage lines with usage hours), so the rows add up to the current bill the purchase mix is
-- measured against, and a month of bill costs hours x instance types, not lines.
select
    g.x_instance_family || '/' || g.region                         as pool,
    g.x_pricing_model                                              as pricing_model,
    sum(cast(g.effective_cost_usd as double))                      as effective_cost_usd
from {hourly} as g
join ref_instance_types as ref on ref.instance_type = g.x_instance_type
join ref_instance_families as r on r.instance_family = g.x_instance_family
where g.hour >= $window_start and g.hour < $window_end
group by all
order by all

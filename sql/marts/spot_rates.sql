-- Grain: one row per instance type x region with spot usage in the bill over
-- [$window_start, $window_end): the effective rate the bill charged for its spot hours. Read from
-- the `hourly` fragment (billing_gpu_hourly, as gpu_demand_hourly.sql). usd_per_unit_h is per unit
-- of the pool (the family's reference size, as gpu_demand_hourly.sql counts units): the rate the
-- purchase mix prices a class's spot work at.
select
    g.x_instance_type                                                        as instance_type,
    g.region,
    sum(g.usage_hours)                                                       as usage_hours,
    sum(cast(g.effective_cost_usd as double))                                as effective_cost_usd,
    sum(cast(g.effective_cost_usd as double)) / sum(g.usage_hours)           as usd_per_instance_h,
    sum(cast(g.effective_cost_usd as double))
        / sum(g.usage_hours * ref.normalization_factor / r.reference_factor) as usd_per_unit_h
from {hourly} as g
join ref_instance_types as ref on ref.instance_type = g.x_instance_type
join ref_instance_families as r on r.instance_family = g.x_instance_family
where g.x_pricing_model = 'spot' and g.hour >= $window_start and g.hour < $window_end
group by all
having sum(g.usage_hours) > 0
order by instance_type, region

-- Grain: one row per GPU pool (instance family x region) per hour.
-- Units are instance-hours normalised to the family's reference size (the largest
-- size in ref_instance_types), so a g5.12xlarge hour counts as 0.25 of a g5.48xlarge.
-- Read from the `hourly` fragment: billing_gpu_hourly (the loads' hourly sums of the same billing lines:
-- usage hours in USD), so the nightly rebuild reads hours x instance types, not every billing
-- line; or the same sums of the lines when it does not cover them (athanor.ingest.daily).
with usage as (
    select
        g.hour,
        g.x_instance_family || '/' || g.region                         as pool,
        g.x_instance_family                                            as instance_family,
        g.x_pricing_model                                              as pricing_model,
        g.usage_hours * ref.normalization_factor                       as normalized_hours,
        cast(g.effective_cost_usd as double)                           as effective_cost_usd,
        cast(g.list_cost_usd as double)                                as list_cost_usd
    from {hourly} as g
    join ref_instance_types as ref on ref.instance_type = g.x_instance_type
),

final as (
    select
        u.hour,
        u.pool,
        u.instance_family,
        sum(u.normalized_hours / r.reference_factor)                                       as units,
        sum(u.normalized_hours / r.reference_factor) filter (where u.pricing_model = 'on_demand')   as on_demand_units,
        sum(u.normalized_hours / r.reference_factor) filter (where u.pricing_model = 'spot')        as spot_units,
        sum(u.normalized_hours / r.reference_factor) filter (where u.pricing_model = 'reserved')    as reserved_units,
        sum(u.normalized_hours / r.reference_factor) filter (where u.pricing_model = 'savings_plan') as savings_plan_units,
        sum(u.effective_cost_usd)                                                           as effective_cost_usd,
        sum(u.list_cost_usd)                                                                as list_cost_usd,
        -- The catalogue's rate of the reference size; a family it does not price (SageMaker's ml.*,
        -- sql/reference/instance_types.sql) at the bill's list cost per unit-hour.
        coalesce(
            max(cast(r.on_demand_usd_per_h as double)),
            sum(u.list_cost_usd) / nullif(sum(u.normalized_hours / r.reference_factor), 0)
        )                                                                                   as on_demand_rate_usd
    from usage as u
    join ref_instance_families as r using (instance_family)
    group by all
)

select * from final order by pool, hour

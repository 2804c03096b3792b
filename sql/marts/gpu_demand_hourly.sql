-- Grain: one row per GPU pool (instance family x region) per hour.
-- Units are instance-hours normalised to the family's reference size (the largest
-- size in ref_instance_types), so a g5.12xlarge hour counts as 0.25 of a g5.48xlarge.
with usage as (
    select
        date_trunc('hour', f.charge_period_start)                      as hour,
        f.x_instance_family || '/' || coalesce(f.region_id, 'global')   as pool,
        f.x_instance_family                                            as instance_family,
        f.x_pricing_model                                              as pricing_model,
        cast(f.x_usage_hours as double) * ref.normalization_factor     as normalized_hours,
        cast(f.effective_cost as double)                               as effective_cost_usd,
        cast(coalesce(f.list_cost, f.billed_cost) as double)           as list_cost_usd
    from billing_facts as f
    join ref_instance_types as ref on ref.instance_type = f.x_instance_type
    where f.x_usage_hours > 0 and f.charge_category = 'Usage'
      and f.billing_currency = 'USD'
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
        max(cast(r.on_demand_usd_per_h as double))                                          as on_demand_rate_usd
    from usage as u
    join ref_instance_families as r using (instance_family)
    group by all
)

select * from final order by pool, hour

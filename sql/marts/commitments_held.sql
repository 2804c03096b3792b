-- Grain: one row per GPU pool and commitment held during the planning window
-- [$window_start, $window_end): the units it covered on average and when it ends.
-- FOCUS has no end-date column: exporters that know it add one (x_CommitmentDiscountEnd);
-- CUR has reservation_end_time / savings_plan_end_time. Both land in x_commitment_end.
-- Azure reservations and savings plans are 'reserved' / 'savings_plan' lines as AWS ones are
-- (sql/staging/azure.sql, focus.sql). A GCP resource-based committed use discount leaves the usage
-- line at its price and credits what it covers (sql/staging/gcp.sql: the line 'committed', the
-- credit a row of its own with the line's source_row): the units it held are the line's hours
-- times the share of its cost the commitment's credits took back.
with gcp_cud_credits as (
    select load_id, source_row, commitment_discount_id, sum(cast(billed_cost as double)) as credit_usd
    from billing_facts
    where source_format = 'gcp' and charge_category = 'Credit' and commitment_discount_category = 'Usage'
      and charge_period_start >= $window_start and charge_period_start < $window_end
    group by all
),

covered as (
    select
        f.x_instance_family || '/' || coalesce(f.region_id, 'global')   as pool,
        f.commitment_discount_id,
        f.x_pricing_model                                              as pricing_model,
        cast(f.x_usage_hours as double) * ref.normalization_factor     as normalized_hours,
        f.x_commitment_end                                             as commitment_end
    from billing_facts as f
    join ref_instance_types as ref on ref.instance_type = f.x_instance_type
    where f.x_pricing_model in ('reserved', 'savings_plan') and f.x_usage_hours > 0
      and f.charge_period_start >= $window_start and f.charge_period_start < $window_end

    union all

    select
        f.x_instance_family || '/' || coalesce(f.region_id, 'global')   as pool,
        f.commitment_discount_id,
        'reserved'                                                     as pricing_model,
        cast(f.x_usage_hours as double) * ref.normalization_factor
            * least(greatest(-c.credit_usd / nullif(cast(f.billed_cost as double), 0), 0), 1) as normalized_hours,
        f.x_commitment_end                                             as commitment_end
    from billing_facts as f
    join gcp_cud_credits as c using (load_id, source_row, commitment_discount_id)
    join ref_instance_types as ref on ref.instance_type = f.x_instance_type
    where f.source_format = 'gcp' and f.charge_category = 'Usage' and f.x_pricing_model = 'committed'
      and f.commitment_discount_category = 'Usage' and f.x_usage_hours > 0
      and f.charge_period_start >= $window_start and f.charge_period_start < $window_end
)

select
    c.pool,
    c.commitment_discount_id,
    any_value(c.pricing_model)                                               as pricing_model,
    sum(c.normalized_hours / r.reference_factor)
        / (epoch($window_end) - epoch($window_start)) * 3600                 as average_units,
    cast(max(c.commitment_end) as timestamp)                                 as commitment_end
from covered as c
join ref_instance_families as r on r.instance_family = split_part(c.pool, '/', 1)
group by all
order by all

-- Grain: one row per week (Monday 00:00 UTC) per billing currency, with commitment
-- utilisation and coverage (a commitment is bought and billed in one currency).
-- Utilisation: amortised cost of used commitment / cost of all commitment (used + unused).
-- Coverage: instance-hours run on a commitment / instance-hours that a commitment could
-- have covered (usage lines, spot excluded: spot is not eligible for reservations).
-- Read from the `daily` fragment (athanor.ingest.daily.daily_source), whose rows keep the
-- dimensions these filters need; the window is whole days.
with usage as (
    select
        cast(date_trunc('week', day) as date) as week,
        billing_currency as currency,
        commitment_discount_status,
        charge_category,
        pricing_category,
        effective_cost,
        usage_hours
    from {daily}
    where day >= $start
      and day < $end
),

final as (
    select
        week,
        currency,
        coalesce(sum(effective_cost) filter (where commitment_discount_status = 'Used'), 0) as used_cost,
        coalesce(sum(effective_cost) filter (where commitment_discount_status = 'Unused'), 0) as unused_cost,
        coalesce(sum(usage_hours) filter (
            where charge_category = 'Usage' and commitment_discount_status = 'Used'), 0) as committed_hours,
        coalesce(sum(usage_hours) filter (
            where charge_category = 'Usage'
              and coalesce(pricing_category, '') <> 'Dynamic'
              and commitment_discount_status is distinct from 'Unused'), 0) as eligible_hours
    from usage
    group by week, currency
)

select
    week,
    currency,
    cast(used_cost as double) as used_cost,
    cast(unused_cost as double) as unused_cost,
    cast(committed_hours as double) as committed_hours,
    cast(eligible_hours as double) as eligible_hours
from final
order by currency, week

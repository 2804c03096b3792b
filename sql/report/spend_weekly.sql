-- Grain: one row per week (Monday 00:00 UTC) per billing currency per dimension per label,
-- with its effective cost. Dimensions: pricing_category (FOCUS), team (the `team` tag),
-- instance_family, service. Currencies are never added together. Read from the `daily`
-- fragment (athanor.ingest.daily.daily_source): the window is whole days.
with charges as (
    select
        cast(date_trunc('week', day) as date) as week,
        billing_currency as currency,
        -- FOCUS leaves PricingCategory empty on purchases, taxes and credits: say which they are.
        coalesce(
            pricing_category,
            case charge_category
                when 'Purchase' then 'Commitment purchases'
                when 'Tax' then 'Tax'
                when 'Credit' then 'Credits'
                when 'Adjustment' then 'Adjustments'
            end,
            'Other ' || lower(coalesce(charge_category, 'charges'))
        ) as pricing_category,
        team,
        -- Lines that are no instance-hours, by what they are instead.
        coalesce(
            x_instance_family,
            case
                when charge_category in ('Tax', 'Credit', 'Adjustment') then 'Tax and credits'
                when charge_category = 'Purchase' or commitment_discount_status = 'Unused' then 'Commitment fees'
                when service_category = 'Storage' then 'Storage'
                when service_category = 'Networking' then 'Data transfer'
                else 'Other services'
            end
        ) as instance_family,
        service,
        effective_cost
    from {daily}
    where day >= $start
      and day < $end
),

-- The days summed once to every label of every dimension (a few hundred rows a week), then
-- per dimension.
labelled as (
    select week, currency, pricing_category, team, instance_family, service, sum(effective_cost) as cost
    from charges
    group by all
),

final as (
    select week, currency, 'pricing_category' as dimension, pricing_category as label, sum(cost) as cost
    from labelled group by week, currency, pricing_category
    union all
    select week, currency, 'team', team, sum(cost) from labelled group by week, currency, team
    union all
    select week, currency, 'instance_family', instance_family, sum(cost)
    from labelled group by week, currency, instance_family
    union all
    select week, currency, 'service', service, sum(cost) from labelled group by week, currency, service
)

select week, currency, dimension, label, cast(cost as double) as cost
from final
order by currency, dimension, week, label

-- Grain: one row per week (Monday 00:00 UTC) per dimension per label, with its effective cost.
-- Dimensions: pricing_category (FOCUS), team (the `team` tag), instance_family, service.
with charges as (
    select
        cast(date_trunc('week', charge_period_start) as date) as week,
        coalesce(pricing_category, 'Unknown') as pricing_category,
        coalesce(nullif(tags['team'], ''), '(untagged)') as team,
        coalesce(x_instance_family, '(not an instance)') as instance_family,
        coalesce(service_name, '(unknown)') as service,
        effective_cost
    from billing_facts
    where charge_period_start >= $start
      and charge_period_start < $end
),

final as (
    select week, 'pricing_category' as dimension, pricing_category as label, sum(effective_cost) as cost_usd
    from charges group by week, pricing_category
    union all
    select week, 'team', team, sum(effective_cost) from charges group by week, team
    union all
    select week, 'instance_family', instance_family, sum(effective_cost) from charges group by week, instance_family
    union all
    select week, 'service', service, sum(effective_cost) from charges group by week, service
)

select week, dimension, label, cast(cost_usd as double) as cost_usd
from final
order by dimension, week, label

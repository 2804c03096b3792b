-- Grain: one row per scope (total, service, account, team), currency, day and kind, with its effective
-- cost, for charges starting in [$start, $end). Kind 'month_start': purchases, fees, tax,
-- credits and adjustments (and any one-time charge), which land on known days of the billing
-- cycle and are compared with the months before; 'usage': the rest, compared day by day.
-- Effective cost (amortised), as the rest of the report. Currencies are never added together.
with charges as (
    select
        charge_period_start::date as day,
        billing_currency as currency,
        case
            when charge_category <> 'Usage' or charge_frequency = 'One-Time' then 'month_start'
            else 'usage'
        end as kind,
        coalesce(service_name, '(unknown)') as service,
        coalesce(sub_account_id, billing_account_id) as account,
        coalesce(nullif(tags['team'], ''), '(untagged)') as team,
        effective_cost
    from billing_facts
    where charge_period_start >= $start
      and charge_period_start < $end
),

final as (
    select 'total' as scope_kind, 'all' as scope_value, currency, day, kind, sum(effective_cost) as cost
    from charges group by all
    union all
    select 'service', service, currency, day, kind, sum(effective_cost) from charges group by all
    union all
    select 'account', account, currency, day, kind, sum(effective_cost) from charges group by all
    union all
    select 'team', team, currency, day, kind, sum(effective_cost) from charges group by all
)

select scope_kind, scope_value, currency, day, kind, cost::double as cost
from final
order by scope_kind, scope_value, currency, day, kind

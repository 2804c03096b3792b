-- Grain: one row per scope (total, team), currency and calendar month in [$start, $end): the
-- billed effective cost, drawn before the forecast months on the report's forecast charts.
with charges as (
    select
        date_trunc('month', charge_period_start)::date as month,
        billing_currency as currency,
        coalesce(nullif(tags['team'], ''), '(untagged)') as team,
        effective_cost
    from billing_facts
    where charge_period_start >= $start
      and charge_period_start < $end
)

select 'total' as scope_kind, 'all' as scope_value, currency, month, sum(effective_cost) as cost
from charges group by all
union all
select 'team', team, currency, month, sum(effective_cost) from charges group by all
order by scope_kind, scope_value, currency, month

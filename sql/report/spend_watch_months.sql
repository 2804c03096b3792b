-- Grain: one row per scope (total, team), currency and calendar month in [$start, $end): the
-- billed effective cost, drawn before the forecast months on the report's forecast charts.
-- Read from the `daily` fragment (athanor.ingest.daily.daily_source): billing_daily, the loads'
-- daily sums with the same team label, so months of history cost days x labels, not lines.
with charges as (
    select
        date_trunc('month', day)::date as month,
        billing_currency as currency,
        team,
        effective_cost
    from {daily}
    where day >= $start
      and day < $end
)

select 'total' as scope_kind, 'all' as scope_value, currency, month, sum(effective_cost) as cost
from charges group by all
union all
select 'team', team, currency, month, sum(effective_cost) from charges group by all
order by scope_kind, scope_value, currency, month

-- Grain: one row per scope (total, service, account, team), currency, day and kind, with its effective
-- cost, for charges starting in [$start, $end). Kind 'month_start': purchases, fees, tax,
-- credits and adjustments (and any one-time charge), which land on known days of the billing
-- cycle and are compared with the months before; 'usage': the rest, compared day by day.
-- Effective cost (amortised), as the rest of the report. Currencies are never added together.
-- Read from the `daily` fragment: billing_daily (the loads' daily sums of billing_facts, same kinds and
-- labels), so the watch reads every billed day as days x labels however many lines a day holds;
-- or the same sums of the lines when billing_daily does not cover them (athanor.ingest.daily).
with charges as (
    select day, billing_currency as currency, kind, service, account, team, effective_cost
    from {daily}
    where day >= $start
      and day < $end
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

-- Grain: one row per billing currency, with the spend of the report period
-- [$period_start, $period_end) and of the period before it [$previous_start, $period_start).
-- Cost is EffectiveCost (amortised: upfront commitment fees spread over the hours they
-- cover), the FOCUS measure for "what did this cost". Currencies are never added together.
-- Read from the `daily` fragment (athanor.ingest.daily.daily_source): the periods are whole days,
-- so the loads' daily sums give the same figures as the lines.
select
    billing_currency as currency,
    coalesce(sum(effective_cost) filter (where day >= $period_start), 0) as cost,
    coalesce(sum(effective_cost) filter (where day < $period_start), 0) as previous_cost,
    coalesce(sum(line_items) filter (where day >= $period_start), 0) as line_items,
    max(last_charge_end) as billing_through
from {daily}
where day >= $previous_start
  and day < $period_end
group by billing_currency
order by billing_currency

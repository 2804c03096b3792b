-- Grain: one row per billing currency, with the spend of the report period
-- [$period_start, $period_end) and of the period before it [$previous_start, $period_start).
-- Cost is EffectiveCost (amortised: upfront commitment fees spread over the hours they
-- cover), the FOCUS measure for "what did this cost". Currencies are never added together.
select
    billing_currency as currency,
    coalesce(sum(effective_cost) filter (where charge_period_start >= $period_start), 0) as cost,
    coalesce(sum(effective_cost) filter (where charge_period_start < $period_start), 0) as previous_cost,
    count(*) filter (where charge_period_start >= $period_start) as line_items,
    max(charge_period_end) as billing_through
from billing_facts
where charge_period_start >= $previous_start
  and charge_period_start < $period_end
group by billing_currency
order by billing_currency

-- Grain: one row per provider and billing account billed in [$start, $end): the last day it has
-- charges for. A bill that stopped arriving shows as an old last day (athanor.watch.freshness).
-- Read from billing_facts, since billing_daily keeps no provider; two short keys group fast.
select
    coalesce(nullif(provider_name, ''), '(unknown)') as provider,
    billing_account_id as billing_account,
    max(charge_period_start)::date as last_charge_day
from billing_facts
where charge_period_start >= $start
  and charge_period_start < $end
group by all
order by provider, billing_account

-- Grain: one row per provider and billing account judged by run $run_id, the stale first.
select provider, billing_account, last_charge_day, lag_days, stale
from spend_freshness
where run_id = $run_id
order by stale desc, lag_days desc, provider, billing_account

-- Grain: one row per forecast scope, currency and calendar month of run $run_id: the month's
-- forecast cost (its billed part included) and the prediction interval.
select scope_kind, scope_value, currency, day as month, cost, lower_cost, upper_cost, actual_cost
from spend_forecasts
where run_id = $run_id and period = 'month'
order by scope_kind <> 'total', scope_value, currency, month

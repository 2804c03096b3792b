-- Grain: one row per budget and threshold of run $run_id.
select budget, scope_kind, scope_value, currency, month, amount, actual_cost, forecast_cost,
       threshold_basis, threshold_pct, breached,
       coalesce(status, case when breached then 'breached' else 'within' end) as status
from budget_status
where run_id = $run_id
order by budget, threshold_basis, threshold_pct

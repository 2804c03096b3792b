-- Grain: one row per scope, currency and horizon of run $run_id's backtest.
select scope_kind, scope_value, currency, horizon_days, folds, mape, coverage
from spend_forecast_accuracy
where run_id = $run_id
order by scope_kind <> 'total', scope_value, currency, horizon_days

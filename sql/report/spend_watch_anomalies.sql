-- Grain: one row per anomaly (scope, currency, day, kind) the watch_spend stage of run $run_id
-- stored, the latest day and the largest excess first.
select scope_kind, scope_value, currency, day, kind, expected_cost, actual_cost, excess_cost, threshold_cost,
       history, top_lines
from spend_anomalies
where run_id = $run_id
order by day desc, excess_cost desc, scope_kind, scope_value

-- Grain: one row per GPU pool per hour before $end: the demand a commitment could have covered
-- (on-demand, reserved and savings-plan units; spot is left out), for the walk-forward backtest.
select
    pool,
    hour,
    on_demand_rate_usd,
    coalesce(on_demand_units, 0) + coalesce(reserved_units, 0) + coalesce(savings_plan_units, 0) as units
from mart_gpu_demand_hourly
where hour < $end
order by pool, hour

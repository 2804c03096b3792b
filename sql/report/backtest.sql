-- Grain: one row per scenario and policy of one backtest run (the run `$run_id` when it
-- wrote a backtest, else the latest as of `$as_of`), summed over the scored months.
with chosen as (
    select run_id
    from backtests
    where as_of <= $as_of
    order by (run_id = $run_id) desc, as_of desc, run_id desc
    limit 1
)

select
    b.scenario,
    b.policy,
    count(*) as months,
    min(b.month) as first_month,
    max(b.month) as last_month,
    sum(b.cost) as cost_usd,
    sum(b.on_demand_cost) as on_demand_cost_usd,
    case when sum(b.on_demand_cost) > 0 then 100 * (1 - sum(b.cost) / sum(b.on_demand_cost)) end as savings_pct,
    avg(b.regret_pct) as mean_regret_pct
from backtests as b
join chosen using (run_id)
group by b.scenario, b.policy
order by b.scenario, b.policy

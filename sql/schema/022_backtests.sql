-- Grain: one row per scenario, policy and scored month of a walk-forward backtest.
create table if not exists backtests (
    run_id          varchar not null,
    as_of           date not null,
    scenario        varchar not null,   -- 'demo:<pool>' for the warehouse's own demand, else a synthetic scenario
    policy          varchar not null,   -- athanor | on_demand | console_30d | commit_min | hindsight_optimum
    month           varchar not null,   -- YYYY-MM scored
    cost            double not null,
    on_demand_cost  double not null,
    savings_pct     double,
    regret_pct      double,
    primary key (run_id, scenario, policy, month)
)

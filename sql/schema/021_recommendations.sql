-- Grain: one row per recommended action per optimize run (commitment, savings plan, spot, lifecycle).
create table if not exists recommendations (
    run_id                            varchar not null,
    as_of                             date not null,
    kind                              varchar not null,   -- reserved_instances | savings_plan | spot | lifecycle | ebs | gpu_choice
    scope                             varchar not null,   -- pool ('p4d/us-east-1'), job class or bucket/prefix
    action                            varchar not null,   -- one sentence a person can act on
    recommended_quantity              double,             -- units (RI) or null
    hourly_commitment                 decimal(18, 6),     -- $/h (savings plan) or null
    term_months                       integer,
    upfront_cost                      decimal(18, 2),
    recurring_monthly_cost            decimal(18, 2),
    estimated_monthly_cost            decimal(18, 2),
    current_monthly_cost              decimal(18, 2),
    estimated_monthly_savings_amount  decimal(18, 2),
    estimated_savings_percentage      double,
    average_utilization               double,
    coverage                          double,
    break_even_months                 double,
    risk                              varchar,
    assumptions                       json,
    detail                            json,
    primary key (run_id, kind, scope)
)

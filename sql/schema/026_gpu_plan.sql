-- Grain: one row per workload class per optimize run: the GPU configuration it runs on, the one
-- the plan recommends, and the cost-time frontier between them (athanor.recommend.gpu_choice).
create table if not exists gpu_plan (
    run_id                        varchar not null,
    as_of                         date not null,
    job_class                     varchar not null,   -- team/project/model/phase (the recorded ones)
    team                          varchar,
    phase                         varchar,            -- explore | tune | production
    runs                          integer not null,
    runs_per_month                double,
    current_instance_type         varchar not null,
    current_instance_count        integer not null,
    current_gpus                  integer,
    recommended_instance_type     varchar,            -- null: nothing to recommend (reason says why)
    recommended_instance_count    integer,
    recommended_gpus              integer,
    recommended_region            varchar,
    memory_required_gib           double,
    memory_basis                  varchar,            -- observed | model_params | unknown
    scaling_bound                 varchar,            -- compute | memory
    scaling_alpha                 double,
    scaling_basis                 varchar,            -- fitted | assumed | datasheet
    hours_per_run_current         double,
    hours_per_run_recommended     double,
    cost_per_run_current_usd      decimal(18, 2),
    cost_per_run_recommended_usd  decimal(18, 2),
    monthly_savings_usd           decimal(18, 2),
    kgco2e_per_run_current        double,
    kgco2e_per_run_recommended    double,
    greener_option                varchar,            -- a lower-carbon configuration at no extra cost
    purchase                      varchar,            -- how to buy it, from the phase
    deadline_slack                double not null,
    reason                        varchar not null,
    frontier                      json,               -- [{instance_type, instance_count, gpus, region, hours_per_run, cost_per_run_usd, kgco2e_per_run}]
    primary key (run_id, job_class)
)

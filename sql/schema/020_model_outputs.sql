-- Grain: one row per workload group per optimize run. History is kept so drift shows.
create table if not exists duration_fits (
    run_id            varchar not null,
    as_of             date not null,
    group_by          varchar not null,     -- e.g. 'team' or 'team,instance_family'
    group_key         varchar not null,     -- e.g. 'team=llm' or 'all'
    n                 bigint not null,
    censored          bigint not null,
    family            varchar not null,     -- lognormal | weibull | gamma | loglogistic | exponential | lognormal_mixture
    params            json not null,
    aic               double,
    bic               double,
    ks                double,
    ks_pvalue         double,
    p50_s             double,
    p90_s             double,
    p99_s             double,
    share_jobs_under_48h      double,
    share_gpu_hours_under_48h double,
    drift_flag        varchar,              -- null, or why this fit differs from the previous one
    record            json not null,        -- the full fit record (CIs, candidates, borrowed_from ...)
    primary key (run_id, group_by, group_key)
)

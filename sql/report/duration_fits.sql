-- Grain: one row per workload group of one fit run (the run `$run_id` when it fitted,
-- else the latest as of `$as_of`); 'all' first, then the biggest groups.
with chosen as (
    select run_id
    from duration_fits
    where as_of <= $as_of
    order by (run_id = $run_id) desc, as_of desc, run_id desc
    limit 1
)

select
    f.group_by,
    f.group_key,
    f.n,
    f.censored,
    f.family,
    cast(f.params as varchar) as params,
    f.aic,
    f.ks,
    f.ks_pvalue,
    f.p50_s,
    f.p90_s,
    f.p99_s,
    f.share_jobs_under_48h,
    f.share_gpu_hours_under_48h,
    f.drift_flag,
    f.data_limit_s,
    f.censored_note
from duration_fits as f
join chosen using (run_id)
order by (f.group_key = 'all') desc, f.n desc, f.group_by, f.group_key

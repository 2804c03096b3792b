-- One row: the share of GPU spend (effective cost, per currency) explained by known job runs,
-- i.e. on billing rows whose job_id tag matches a job in job_runs, for charges starting in
-- [$start, $end): a window, so that the nightly reads one period, not the whole history. From
-- the lines' sums by day and job_id tag that each load keeps (billing_job_daily).
select
    f.billing_currency,
    sum(f.effective_cost)                                                      as gpu_effective_cost,
    sum(f.effective_cost) filter (where j.job_id is not null)                  as explained_cost,
    coalesce(sum(f.effective_cost) filter (where j.job_id is not null), 0)
        / nullif(sum(f.effective_cost), 0)                                     as explained_share
from billing_job_daily as f
left join (select distinct job_id from job_run_facts) as j on j.job_id = f.job_id
where f.compute and f.charge_category = 'Usage'
  and f.day >= $start and f.day < $end
group by all
order by 1

-- Grain: one row per started training job, with the columns the duration fits group by.
select
    job_id,
    duration_s,
    censored,
    gpu_count,
    coalesce(team, 'unknown')                              as team,
    coalesce(model, 'unknown')                             as model,
    coalesce(project, 'unknown')                           as project,
    coalesce(split_part(instance_type, '.', 1), 'unknown') as instance_family,
    pricing_model
from job_run_facts
where duration_s is not null and duration_s >= 0
order by job_id

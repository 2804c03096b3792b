-- Grain: one row per started training job, with the columns the duration fits group by.
-- As known at $as_of_end (the last moment of the run's day; null: everything loaded): a job
-- that started later is left out, one that ended later was still running then, so it counts
-- as censored at that moment. Jobs that started before $window_start (null: none) are left out:
-- the fits' window of recent jobs.
with known as (
    select
        *,
        $as_of_end is not null and (end_time is null or end_time > $as_of_end) as running_then
    from job_run_facts
    where ($as_of_end is null or start_time <= $as_of_end)
      and ($window_start is null or start_time >= $window_start)
),

final as (
    select
        job_id,
        case
            when running_then then least(coalesce(duration_s, 'infinity'::double), epoch($as_of_end - start_time))
            else duration_s
        end                                                    as duration_s,
        censored or running_then                               as censored,
        gpu_count,
        coalesce(team, 'unknown')                              as team,
        coalesce(model, 'unknown')                             as model,
        coalesce(project, 'unknown')                           as project,
        coalesce(split_part(instance_type, '.', 1), 'unknown') as instance_family,
        pricing_model
    from known
)

select *
from final
where duration_s is not null and duration_s >= 0
order by job_id

-- Grain: one row per workload class and hour of [$window_start, $window_end): the instance-hours
-- its runs held in that hour, each run's overlap with the hour times its instances. The plan
-- (athanor.recommend.plan) takes a moved class's hours out of its pool with this shape.
-- The job_class fragment is the GPU plan's class of a run `j` (athanor.recommend.gpu_usage.job_class_expression).
with runs as (
    select
        {job_class}                                                         as job_class,
        coalesce(j.instance_count, 1)                                       as instances,
        greatest(j.start_time, $window_start)                               as run_start,
        least(j.start_time + to_microseconds(cast(j.duration_s * 1e6 as bigint)), $window_end)
                                                                            as run_end
    from job_runs as j
    where j.start_time < $window_end and j.duration_s > 0 and j.instance_type is not null
),

hours as (
    select
        job_class,
        instances,
        run_start,
        run_end,
        unnest(generate_series(date_trunc('hour', run_start), run_end - interval 1 microsecond,
                               interval 1 hour))                             as hour
    from runs
    where run_end > run_start
)

select
    job_class,
    hour,
    sum(instances * epoch(least(run_end, hour + interval 1 hour) - greatest(run_start, hour)) / 3600.0)
                                                                            as instance_hours
from hours
group by all
order by job_class, hour

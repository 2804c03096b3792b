-- Grain: one row per job class (team x instance family x phase) over the planning window
-- [$window_start, $window_end): what the spot model needs to know about its jobs. The phase
-- (explore | tune | production, null where the log records none) sets the class's default
-- purchase option in the mix (athanor.recommend.phases); a class without one is named team/family.
with jobs as (
    select
        coalesce(team, 'unknown')                          as team,
        split_part(instance_type, '.', 1)                  as instance_family,
        instance_type,
        duration_s / 3600.0                                as duration_h,
        instance_count,
        gpu_hours,
        checkpoint_time_s / 3600.0                         as checkpoint_time_h,
        checkpoint_interval_s is not null                  as checkpointed,
        phase,
        pricing_model = 'spot'                             as on_spot,
        state
    from job_run_facts
    where start_time >= $window_start and start_time < $window_end
      and duration_s > 0 and instance_type is not null
),

pools as (
    -- A family's jobs belong to the region where most of its GPU-hours are billed.
    select instance_family, arg_max(pool, units) as pool
    from (select instance_family, pool, sum(units) as units from mart_gpu_demand_hourly group by all)
    group by instance_family
),

final as (
    select
        j.team || '/' || j.instance_family
            || coalesce('/' || j.phase, '')                      as job_class,
        j.team,
        j.instance_family,
        j.phase,
        p.pool,
        -- The type carrying most of the class's GPU-hours: whose Spot Advisor figure applies.
        arg_max(j.instance_type, j.gpu_hours)                    as instance_type,
        count(*)                                                 as jobs,
        sum(j.gpu_hours)                                         as gpu_hours,
        median(j.duration_h)                                     as median_duration_h,
        quantile_cont(j.duration_h, 0.9)                         as p90_duration_h,
        cast(round(median(j.instance_count)) as integer)         as instance_count,
        -- Without a measured checkpoint time, assume 3 minutes (a few GB to S3).
        coalesce(median(j.checkpoint_time_h), 0.05)              as checkpoint_time_h,
        -- Spot only for classes whose jobs mostly checkpoint: others restart from zero.
        avg(case when j.checkpointed then 1.0 else 0.0 end) >= 0.5 as interruptible,
        -- The class's spot record: GPU-hours on spot today, and its spot runs that ended in a
        -- state spot decides (completed or preempted; failed and cancelled runs say nothing
        -- about spot), of which completed.
        coalesce(sum(j.gpu_hours) filter (where j.on_spot), 0)   as spot_gpu_hours,
        count(*) filter (where j.on_spot and j.state in ('completed', 'preempted'))
                                                                 as spot_runs_ended,
        count(*) filter (where j.on_spot and j.state = 'completed') as spot_runs_completed
    from jobs as j
    join pools as p using (instance_family)
    group by all
)

select * from final order by job_class

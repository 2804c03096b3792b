-- Grain: one row per spot pool (instance type x region) over [$history_start, $window_end): the
-- interruptions the fleet's own spot runs met and the instance-hours they ran, the evidence the
-- Spot Advisor's rate is updated with (athanor.recommend.spot.fleet_interruption_rate).
-- An interruption is a restart (restart_count) or the preemption that ended a run (state
-- preempted: restart_count does not count it). A run's instance-hours are its wall time times its
-- instances: a job on N instances is stopped when any one of them is reclaimed. Job logs name no
-- region: a run belongs to the region of its family's pool, as in job_classes.sql.
with runs as (
    select
        instance_type,
        split_part(instance_type, '.', 1)                                  as instance_family,
        coalesce(restart_count, 0) + case when state = 'preempted' then 1 else 0 end
                                                                           as interruptions,
        duration_s / 3600.0 * instance_count                               as instance_hours
    from job_run_facts
    where pricing_model = 'spot' and instance_type is not null and duration_s > 0
      and start_time >= $history_start and start_time < $window_end
),

pools as (
    select instance_family, arg_max(pool, units) as pool
    from (select instance_family, pool, sum(units) as units from mart_gpu_demand_hourly group by all)
    group by instance_family
),

final as (
    select
        r.instance_type,
        split_part(p.pool, '/', 2)       as region,
        count(*)                         as spot_runs,
        sum(r.interruptions)             as interruptions,
        sum(r.instance_hours)            as instance_hours
    from runs as r
    join pools as p using (instance_family)
    group by all
)

select * from final order by instance_type, region

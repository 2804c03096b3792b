-- Grain: one row per machine, GPU, hour and job over [$window_start, $window_end) (UTC), and one
-- row per billed machine-hour with gpu null: its paid GPU-hours no sample covers (unobserved).
--
-- How GPU time is counted (athanor.recommend.gpu_usage explains the choices):
-- * a sample counts from its time until the next sample of the same GPU, at most the cap:
--   $cap_s seconds, or when that is null twice the GPU's median sampling interval (60 s for a GPU
--   sampled once); the rest of a longer gap is unobserved, never idle, and ends an idle stretch;
--   a GPU's last sample counts for its median interval (at most the cap);
-- * idle: a stretch of consecutive samples below $idle_below_pct % utilisation counting at
--   least $idle_minutes minutes; a shorter dip (a data-loading pause) is busy time;
-- * a machine is the billing resource its samples name (instance id, else host, else SageMaker
--   job name, against the resource id's last part, or for a job name the lines tagged with that
--   job_id, or an instance untagged whose billed life is exactly the job's run: a SageMaker
--   job's instances together); an hour its bill does not cover (a last
--   sample counting past the instance's end) is observed but unpaid and unpriced; a billed
--   machine-hour's unobserved time is
--   its paid GPU-hours (usage hours x GPUs, USD usage lines) less those observed; a machine no
--   bill names has no paid hours and no price, and its unobserved time is the capped-off gaps;
-- * a sample's job: job_runs.job_id equal to its job name (SageMaker), or to its pod or the
--   pod's prefix before a '-' (Kubernetes operators name pods <job>-<role>-<n>), else the job
--   the billing line of its machine-hour is tagged with (tag job_id); team and instance type
--   from that billing line, else from the job.
-- * MIG: each MIG instance is its own series (gaps, idle stretches, jobs: per instance) and its
--   hours count at its gpu_share of the GPU (3g of 7: 3/7), so the instances of a fully
--   partitioned GPU add up to the GPU's hours; a machine's observed hours sum these.
-- * energy: a sample's power counts for the time the sample counts (until the next, capped), the
--   same pieces as its utilisation (a left Riemann sum: the trapezoid would differ only where
--   power changes between samples, and would count gaps the hours do not); a MIG instance's
--   power is its parent board's (DCGM's device-level field), so it counts at the instance's
--   gpu_share. Pieces without power keep their GPU-hours and utilisation-hours apart
--   (unpowered_*) for athanor.recommend.gpu_usage to model from the GPU's power curve.
-- Samples from a day before the window are read so that a stretch crossing its start is whole.
with source as (
    select
        -- gpu: the series a sample belongs to, the GPU or one MIG instance of it; gpu_id the GPU.
        coalesce(nullif(gpu_id, ''), host || ':' || cast(gpu_index as varchar))
            || coalesce('/mig-' || mig_instance, '')                            as gpu,
        coalesce(nullif(gpu_id, ''), host || ':' || cast(gpu_index as varchar))  as gpu_id,
        mig_instance,
        mig_profile,
        coalesce(cast(gpu_share as double), 1.0)                                as gpu_share,
        host,
        nullif(instance_id, '')                                                 as instance_id,
        nullif(job_name, '')                                                    as job_name,
        nullif(pod, '')                                                         as pod,
        gpu_model,
        sampled_at,
        cast(utilisation_pct as double)                                         as utilisation_pct,
        cast(memory_used_gib as double)                                         as memory_used_gib,
        cast(memory_total_gib as double)                                        as memory_total_gib,
        cast(power_w as double)                                                 as power_w
    from gpu_samples
    where sampled_at >= $window_start - interval 1 day - to_minutes(cast($idle_minutes as bigint))
      and sampled_at < $window_end
    -- A sample delivered twice (overlapping exports) counts once.
    qualify row_number() over (partition by gpu, sampled_at order by load_id desc) = 1
),

spaced as (
    select
        *,
        lead(sampled_at) over by_gpu                                            as next_at,
        epoch(lead(sampled_at) over by_gpu) - epoch(sampled_at)                 as gap_s
    from source
    window by_gpu as (partition by gpu order by sampled_at)
),

medians as (
    select *, coalesce(cast(median(gap_s) over (partition by gpu) as double), 60.0) as median_s
    from spaced
),

capped as (
    select *, coalesce(cast($cap_s as double), 2 * median_s) as cap_s
    from medians
),

counted as (
    select
        *,
        -- The last sample of a GPU stands for one usual interval (the next one was due then).
        least(coalesce(gap_s, median_s), cap_s)                                 as counted_s,
        coalesce(gap_s > cap_s, false)                                          as breaks_after,
        utilisation_pct < $idle_below_pct                                       as low
    from capped
),

stretches as (
    -- A new stretch starts at a GPU's first sample, after a gap, and where low turns high or back.
    select
        *,
        sum(case when prev_low is null or prev_breaks or low <> prev_low then 1 else 0 end)
            over (partition by gpu order by sampled_at rows unbounded preceding)  as stretch
    from (
        select
            *,
            lag(low) over by_gpu                                                as prev_low,
            lag(breaks_after) over by_gpu                                       as prev_breaks
        from counted
        window by_gpu as (partition by gpu order by sampled_at)
    )
),

classified as (
    select
        *,
        -- Seconds are whole in real exports; the margin keeps 30 x 60 s at 30 minutes exactly.
        low and sum(counted_s) over (partition by gpu, stretch) >= $idle_minutes * 60 - 1e-6  as idle
    from stretches
),

pieces as (
    -- The counted part of each sample's interval, and the unobserved rest of a longer gap.
    select
        gpu, gpu_id, mig_instance, mig_profile, gpu_share, host, instance_id, job_name, pod, gpu_model,
        utilisation_pct, memory_used_gib, memory_total_gib, power_w, idle, false as gap,
        greatest(sampled_at, $window_start)                                     as piece_start,
        least(sampled_at + to_microseconds(cast(counted_s * 1e6 as bigint)), $window_end) as piece_end
    from classified
    union all
    select
        gpu, gpu_id, mig_instance, mig_profile, gpu_share, host, instance_id, job_name, pod, gpu_model,
        utilisation_pct, memory_used_gib, memory_total_gib, power_w, false as idle, true as gap,
        greatest(sampled_at + to_microseconds(cast(counted_s * 1e6 as bigint)), $window_start),
        least(next_at, $window_end)
    from classified
    where breaks_after
),

hourly_pieces as (
    select
        *,
        epoch(least(piece_end, hour + interval 1 hour)) - epoch(greatest(piece_start, hour))  as seconds
    from (
        select
            *,
            unnest(
                case
                    when date_trunc('hour', piece_start) = date_trunc('hour', piece_end - interval 1 microsecond)
                        then [date_trunc('hour', piece_start)]
                    else generate_series(
                        date_trunc('hour', piece_start), piece_end - interval 1 microsecond, interval 1 hour
                    )
                end
            )                                                                   as hour
        from pieces
        where piece_end > piece_start
    )
),

sampled_keys as (
    select instance_id as key from source where instance_id is not null
    union select host from source
    union select job_name from source where job_name is not null
),

sampled_jobs as (
    select distinct job_name from source where job_name is not null
),

usage_lines as (
    select
        regexp_extract(rtrim(replace(resource_id, ':', '/'), '/'), '([^/]+)$', 1)  as resource,
        charge_period_start,
        charge_period_end,
        cast(x_usage_hours as double) * x_gpu_count                             as gpu_hours,
        cast(effective_cost as double)                                          as cost_usd,
        nullif(tags['team'], '')                                                as team,
        nullif(tags['job_id'], '')                                              as job_id,
        x_instance_type                                                         as instance_type,
        nullif(region_id, '')                                                   as region
    from billing_facts
    where charge_category = 'Usage' and billing_currency = 'USD'
      and x_gpu_count > 0 and x_usage_hours > 0
      and resource_id is not null and resource_id <> ''
),

untagged_jobs as (
    -- An instance billed without a job_id tag (a launch template that drops it) whose whole billed
    -- life is a sampled SageMaker job's run, of its instance type and team: one of the job's
    -- instances. Without it a job on 2 x g5.12xlarge had one instance's paid hours for both
    -- instances' samples. Only a run that matches one job, never a reused instance, is linked.
    select u.resource, min(r.job_id) as job_id
    from (
        select resource, min(charge_period_start) as first_start, max(charge_period_end) as last_end,
               any_value(instance_type) as instance_type, mode(team) as team
        from usage_lines
        where resource in (
            select resource from usage_lines
            where job_id is null and charge_period_start < $window_end and charge_period_end > $window_start
        )
        group by resource
        having count(job_id) = 0
    ) as u
    join job_runs as r
      on r.instance_type = u.instance_type
     and r.instance_count > 1
     and abs(epoch(r.start_time) - epoch(u.first_start)) <= 60
     and abs(epoch(r.end_time) - epoch(u.last_end)) <= 60
     and (u.team is null or r.team is null or u.team = r.team)
    where r.job_id in (select job_name from sampled_jobs)
      and u.resource not in (select key from sampled_keys)
    group by u.resource
    having count(distinct r.job_id) = 1
),

bill_lines as (
    -- A line's machine is its resource, unless no sample names the resource but a SageMaker
    -- sample names the job the line is tagged with (or the job it is one of the instances of,
    -- `untagged_jobs`): a training job's instances are billed by instance id while its telemetry
    -- names the job and algo-<n>, so the job is the machine.
    select
        case
            when l.resource in (select key from sampled_keys) then l.resource
            when l.job_id in (select job_name from sampled_jobs) then l.job_id
            else l.resource
        end                                                                     as resource,
        l.* exclude (resource)
    from (
        select
            u.resource,
            u.charge_period_start,
            u.charge_period_end,
            u.gpu_hours,
            u.cost_usd,
            u.team,
            coalesce(u.job_id, j.job_id)                                        as job_id,
            u.instance_type,
            u.region
        from usage_lines as u
        left join untagged_jobs as j using (resource)
        where u.charge_period_start < $window_end and u.charge_period_end > $window_start
    ) as l
),

bill_hours as (
    -- A line longer than an hour (a daily FOCUS line) is spread evenly over its hours.
    select
        resource,
        hour,
        sum(gpu_hours * share)                                                  as paid_gpu_hours,
        sum(cost_usd * share)                                                   as paid_cost_usd,
        mode(team)                                                              as team,
        mode(job_id)                                                            as job_id,
        mode(instance_type)                                                     as instance_type,
        mode(region)                                                            as region
    from (
        select
            *,
            (epoch(least(charge_period_end, hour + interval 1 hour)) - epoch(greatest(charge_period_start, hour)))
                / nullif(epoch(charge_period_end) - epoch(charge_period_start), 0)  as share
        from (
            select *, unnest(generate_series(
                date_trunc('hour', charge_period_start), charge_period_end - interval 1 microsecond, interval 1 hour
            )) as hour
            from bill_lines
        )
    )
    where hour >= $window_start and hour < $window_end
    group by resource, hour
),

bill_keys as (
    -- A machine's team and instance type also name its hours the bill does not cover (a last
    -- sample counting past the instance's end).
    select resource, mode(team) as team, mode(instance_type) as instance_type, mode(region) as region
    from bill_hours
    group by resource
),

machines as (
    select
        instance_id, host, job_name,
        case
            when instance_id in (select resource from bill_keys) then instance_id
            when host in (select resource from bill_keys) then host
            when job_name in (select resource from bill_keys) then job_name
        end                                                                     as resource
    from (select distinct instance_id, host, job_name from source)
),

runs as (
    select job_id, team, instance_type, {job_class} as job_class
    from job_runs as j
    qualify row_number() over (partition by job_id order by source) = 1
),

named as (
    select
        job_name, pod,
        coalesce(
            (select r.job_id from runs as r where r.job_id = n.job_name),
            (select r.job_id from runs as r
             where n.pod = r.job_id or starts_with(n.pod, r.job_id || '-')
             order by length(r.job_id) desc limit 1)
        )                                                                       as job_id
    from (select distinct job_name, pod from source) as n
),

per_gpu as (
    select
        coalesce(m.resource, p.instance_id, p.host)                             as machine,
        m.resource,
        p.host,
        p.instance_id,
        p.gpu,
        p.gpu_id,
        p.mig_instance,
        p.mig_profile,
        p.gpu_share,
        any_value(p.gpu_model)                                                  as gpu_model,
        n.job_id                                                                as named_job,
        p.hour,
        -- GPU-hours: seconds x the series' share of its GPU (1, or a MIG instance's slices / 7).
        coalesce(sum(p.seconds * p.gpu_share) filter (where not p.gap) / 3600, 0)  as observed_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share) filter (where p.idle) / 3600, 0)  as idle_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share) filter (where p.gap) / 3600, 0)   as gap_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share * p.utilisation_pct / 100) filter (where not p.gap) / 3600, 0)
                                                                                as utilisation_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share * p.utilisation_pct / 100)
                 filter (where not p.gap and not p.idle) / 3600, 0)             as busy_utilisation_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share * p.memory_used_gib) filter (where not p.gap and not p.idle) / 3600, 0)
                                                                                as busy_memory_gib_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share * p.memory_used_gib / p.memory_total_gib)
                 filter (where not p.gap and not p.idle and p.memory_total_gib > 0) / 3600, 0)
                                                                                as busy_memory_share_gpu_hours,
        max(p.memory_used_gib / nullif(p.memory_total_gib, 0)) filter (where not p.gap)
                                                                                as peak_memory_share,
        coalesce(sum(p.seconds * p.gpu_share) filter (where not p.gap and p.power_w is not null) / 3600, 0)
                                                                                as power_gpu_hours,
        coalesce(sum(p.seconds * p.gpu_share * p.power_w) filter (where not p.gap and p.power_w is not null)
                 / 3.6e6, 0)                                                    as measured_energy_kwh,
        coalesce(sum(p.seconds * p.gpu_share * coalesce(p.utilisation_pct, 0) / 100)
                 filter (where not p.gap and p.power_w is null) / 3600, 0)      as unpowered_utilisation_gpu_hours
    from hourly_pieces as p
    left join machines as m
        on m.instance_id is not distinct from p.instance_id
       and m.host is not distinct from p.host
       and m.job_name is not distinct from p.job_name
    left join named as n
        on n.job_name is not distinct from p.job_name and n.pod is not distinct from p.pod
    group by all
),

machine_hours as (
    select
        g.machine,
        g.hour,
        sum(g.observed_gpu_hours)                                               as observed_gpu_hours
    from per_gpu as g
    group by all
),

scaled as (
    -- Paid hours follow the observed ones; where samples cover more than the bill (a partial hour
    -- billed), each GPU's share is scaled down so that no hour is paid twice.
    select
        g.*,
        least(1.0, b.paid_gpu_hours / nullif(mh.observed_gpu_hours, 0))         as paid_share,
        b.paid_cost_usd / nullif(b.paid_gpu_hours, 0)                           as usd_per_gpu_hour,
        b.team                                                                  as bill_team,
        b.job_id                                                                as bill_job,
        b.instance_type                                                         as bill_instance_type,
        b.region                                                                as bill_region,
        b.resource is not null                                                  as billed
    from per_gpu as g
    join machine_hours as mh using (machine, hour)
    left join bill_hours as b on b.resource = g.resource and b.hour = g.hour
),

observed as (
    -- In a billed machine-hour the time counted is at most the time paid: samples that count past
    -- a partial hour's billed seconds (an instance that starts or stops within the hour, sampled
    -- every 5 minutes) are scaled by paid_share like the paid hours, so busy + idle = paid there
    -- and busy never exceeds paid. An hour no bill covers keeps its samples' time, unpaid.
    select
        s.hour,
        s.machine,
        s.resource                                                              as resource_id,
        s.host,
        s.instance_id,
        s.gpu_id,
        s.mig_instance,
        s.mig_profile,
        s.gpu_share,
        s.gpu_model,
        coalesce(s.named_job, s.bill_job)                                       as job_id,
        s.bill_team,
        s.bill_instance_type,
        s.bill_region,
        s.observed_gpu_hours * s.counted_share                                  as observed_gpu_hours,
        (s.observed_gpu_hours - s.idle_gpu_hours) * s.counted_share             as busy_gpu_hours,
        s.idle_gpu_hours * s.counted_share                                      as idle_gpu_hours,
        case when s.billed then 0 else s.gap_gpu_hours end                      as unobserved_gpu_hours,
        case when s.billed then s.observed_gpu_hours * coalesce(s.paid_share, 0) end  as paid_gpu_hours,
        s.usd_per_gpu_hour,
        s.idle_gpu_hours * coalesce(s.paid_share, 0) * s.usd_per_gpu_hour       as idle_cost_usd,
        s.utilisation_gpu_hours * s.counted_share                               as utilisation_gpu_hours,
        s.busy_utilisation_gpu_hours * s.counted_share                          as busy_utilisation_gpu_hours,
        s.busy_memory_gib_gpu_hours * s.counted_share                           as busy_memory_gib_gpu_hours,
        s.busy_memory_share_gpu_hours * s.counted_share                         as busy_memory_share_gpu_hours,
        s.peak_memory_share,
        s.power_gpu_hours * s.counted_share                                     as power_gpu_hours,
        s.measured_energy_kwh * s.counted_share                                 as measured_energy_kwh,
        s.unpowered_utilisation_gpu_hours * s.counted_share                     as unpowered_utilisation_gpu_hours
    from (
        select *, case when billed then coalesce(paid_share, 1.0) else 1.0 end as counted_share
        from scaled
    ) as s
),

unobserved as (
    -- A billed machine-hour's GPU-hours no sample covers (all of them for a machine never sampled).
    select
        b.hour,
        b.resource                                                              as machine,
        b.resource                                                              as resource_id,
        null::varchar                                                           as host,
        null::varchar                                                           as instance_id,
        null::varchar                                                           as gpu_id,
        null::varchar                                                           as mig_instance,
        null::varchar                                                           as mig_profile,
        1.0                                                                     as gpu_share,
        null::varchar                                                           as gpu_model,
        b.job_id,
        b.team                                                                  as bill_team,
        b.instance_type                                                         as bill_instance_type,
        b.region                                                                as bill_region,
        0.0                                                                     as observed_gpu_hours,
        0.0                                                                     as busy_gpu_hours,
        0.0                                                                     as idle_gpu_hours,
        b.paid_gpu_hours - coalesce(mh.observed_gpu_hours, 0)                   as unobserved_gpu_hours,
        b.paid_gpu_hours - coalesce(mh.observed_gpu_hours, 0)                   as paid_gpu_hours,
        b.paid_cost_usd / nullif(b.paid_gpu_hours, 0)                           as usd_per_gpu_hour,
        0.0                                                                     as idle_cost_usd,
        0.0                                                                     as utilisation_gpu_hours,
        0.0                                                                     as busy_utilisation_gpu_hours,
        0.0                                                                     as busy_memory_gib_gpu_hours,
        0.0                                                                     as busy_memory_share_gpu_hours,
        null::double                                                            as peak_memory_share,
        0.0                                                                     as power_gpu_hours,
        0.0                                                                     as measured_energy_kwh,
        0.0                                                                     as unpowered_utilisation_gpu_hours
    from bill_hours as b
    left join machine_hours as mh on mh.machine = b.resource and mh.hour = b.hour
    where b.paid_gpu_hours - coalesce(mh.observed_gpu_hours, 0) > 1e-9
),

final as (
    select
        u.hour,
        cast(u.hour as date)                                                    as day,
        u.machine,
        u.resource_id,
        u.host,
        u.instance_id,
        u.gpu_id,
        u.mig_instance,
        u.mig_profile,
        u.gpu_share,
        u.gpu_model,
        u.job_id,
        coalesce(u.bill_team, k.team, r.team, '(untagged)')                     as team,
        coalesce(r.job_class, '(no job)')                                       as job_class,
        coalesce(u.bill_instance_type, k.instance_type, r.instance_type, '(unknown)')  as instance_type,
        coalesce(u.bill_region, k.region)                                       as region,
        u.paid_gpu_hours,
        u.observed_gpu_hours,
        u.busy_gpu_hours,
        u.idle_gpu_hours,
        u.unobserved_gpu_hours,
        u.usd_per_gpu_hour,
        u.paid_gpu_hours * u.usd_per_gpu_hour                                   as paid_cost_usd,
        u.idle_cost_usd,
        u.utilisation_gpu_hours,
        u.busy_utilisation_gpu_hours,
        u.busy_memory_gib_gpu_hours,
        u.busy_memory_share_gpu_hours,
        u.peak_memory_share,
        u.power_gpu_hours,
        u.measured_energy_kwh,
        u.unpowered_utilisation_gpu_hours
    from (select * from observed union all by name select * from unobserved) as u
    left join runs as r on r.job_id = u.job_id
    left join bill_keys as k on k.resource = u.resource_id
)

select * from final
order by hour, machine, gpu_id nulls last, mig_instance nulls first, job_id

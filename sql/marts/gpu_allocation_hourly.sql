-- Grain: one row per billed GPU machine-hour in [$window_start, $window_end) and holder (the
-- gpu_allocation_hourly table, 075): each scheduler job that held the machine's GPUs in it, and
-- one idle row for the GPU-seconds none held; machine-hours no job reached keep the bill's tags.
--
-- * A machine-hour: the USD usage lines of a GPU instance type with one resource id and charge
--   period start; its cost is their EffectiveCost, its paid GPU-seconds GPUs x usage hours x 3600
--   (at most the period), so a partial hour pays for its part.
-- * A job holds, on each node of its node list, gpu_count / nodes GPUs from its start to its end
--   (a running job: start + duration_s, as the log's as-of measured it). A node is the instance
--   node_map names for it (the one billed that hour; of several, the latest launched), or an
--   instance id itself (i-...); a node in neither is unmapped and holds nothing.
-- * A job's share is cost x its GPU-seconds / max(paid, held GPU-seconds): jobs that hold more
--   than was paid (clocks apart) share the bill without going beyond it; idle is the rest.
-- * Cents: the machine-hour's cost is rounded to the cent, each row takes the floor of its exact
--   share in cents, and the cents left go one each to the largest remainders (ties: job id), so
--   a machine-hour's rows add up to its rounded cost exactly.
-- * A SageMaker training job's instance-hours: the bill names the job in the resource id
--   (arn:aws:sagemaker:<region>:<account>:training-job/<name>); where the job logs hold that name
--   (source sagemaker), the machine-hour is that job's whole, its team the job's. SageMaker bills
--   a training job's instances for the job alone, so nothing of it is idle; a name no log holds
--   keeps the bill's tags.
with lines as (
    select
        regexp_extract(rtrim(replace(resource_id, ':', '/'), '/'), '([^/]+)$', 1)  as resource_id,
        charge_period_start                                                      as hour,
        charge_period_end                                                        as period_end,
        x_instance_type                                                          as instance_type,
        x_gpu_count                                                              as gpus,
        x_usage_hours                                                            as usage_hours,
        effective_cost,
        tags,
        commitment_discount_status,
        -- The training job a SageMaker instance line is for; its ARN spells the name in lower
        -- case (SageMaker's names are unique whatever their case), so matched lower-cased.
        case when x_instance_type like 'ml.%'
            then lower(nullif(regexp_extract(resource_id, ':training-job/([^/:]+)/?$', 1), '')) end
                                                                                 as sagemaker_job
    from ({gpu_usage_lines})
    where charge_period_start >= $window_start and charge_period_start < $window_end
),

machine_hours as (
    select
        resource_id,
        hour,
        max(period_end)                                                          as period_end,
        any_value(instance_type)                                                 as instance_type,
        max(gpus)                                                                as gpus,
        max(gpus) * 3600.0 * least(
            coalesce(cast(sum(usage_hours) as double), epoch(max(period_end)) - epoch(hour)),
            (epoch(max(period_end)) - epoch(hour)) / 3600.0
        )                                                                        as billed_gpu_seconds,
        sum(effective_cost)                                                      as hour_cost_usd,
        max(tags['job_id'])                                                      as tag_job,
        max(tags['team'])                                                        as tag_team,
        max(sagemaker_job)                                                       as sagemaker_job,
        -- All the usage's GPU-seconds (a job of two instances bills two hours an hour), unlike
        -- billed_gpu_seconds: what a SageMaker job held.
        max(gpus) * 3600.0 * coalesce(
            cast(sum(usage_hours) as double), (epoch(max(period_end)) - epoch(hour)) / 3600.0
        )                                                                        as usage_gpu_seconds,
        -- A reservation's unused hours: GPU capacity paid for that nothing ran on.
        bool_and(coalesce(commitment_discount_status = 'Unused', false))          as unused_commitment
    from lines
    group by resource_id, hour
),

jobs as (
    select
        job_id,
        source,
        team,
        start_time,
        coalesce(end_time, start_time + to_microseconds(cast(duration_s * 1e6 as bigint)), $window_end) as end_at,
        cast(gpu_count as double) / len(string_split(node_list, ','))            as gpus_per_node,
        node_list
    from job_run_facts
    where coalesce(node_list, '') <> '' and start_time is not null and gpu_count > 0
),

all_job_nodes as (
    select job_id, source, team, start_time, end_at, gpus_per_node, unnest(string_split(node_list, ',')) as node
    from jobs
),

job_nodes as (
    select * from all_job_nodes
    where end_at > $window_start - interval 1 day and start_time < $window_end
),

candidates as (
    select node, instance_id, valid_from from node_map
    union all
    -- An EC2 resource-based name is its instance (i-0123456789abcdef0[.ec2.internal]).
    select distinct node, regexp_extract(node, '^(i-[0-9a-f]{8,17})', 1), null
    from all_job_nodes
    where regexp_matches(node, '^i-[0-9a-f]{8,17}($|\.)')
),

scheduler_held as (
    select
        j.job_id, j.source, j.team, j.node, m.resource_id, m.hour,
        j.gpus_per_node * (
            epoch(least(j.end_at, m.period_end)) - epoch(greatest(j.start_time, m.hour))
        )                                                                        as gpu_seconds
    from job_nodes as j
    join candidates as c on c.node = j.node
    join machine_hours as m
      on m.resource_id = c.instance_id
     and m.hour < j.end_at and m.period_end > j.start_time
     and (c.valid_from is null or c.valid_from < m.period_end)
    qualify row_number() over (
        partition by j.job_id, j.source, j.node, m.hour order by c.valid_from desc nulls last, m.resource_id
    ) = 1
),

-- Pods the DCGM exporter names on a GPU (gpu_samples.pod) that no pod list brought: a sample
-- holds its GPU (at its MIG share) until the next sample of that GPU, at most twice the GPU's
-- median interval, split at the hour; on the machine its instance id, else its host, names.
-- Only where the machine-hour has no scheduler job and no job_id tag (a tagged machine is its
-- job's whole).
telemetry_samples as (
    select
        gpu_id, mig_instance, pod, namespace, host, nullif(instance_id, '') as instance_id,
        coalesce(gpu_share, 1.0)                                                 as share,
        sampled_at,
        epoch(lead(sampled_at) over by_gpu) - epoch(sampled_at)                  as gap_s
    from gpu_samples
    where sampled_at >= $window_start - interval 1 day and sampled_at < $window_end
    window by_gpu as (partition by gpu_id, mig_instance order by sampled_at)
),

pod_samples as (
    select
        *,
        sampled_at + to_microseconds(cast(least(coalesce(gap_s, median_s), 2 * median_s) * 1e6 as bigint)) as until_at
    from (
        select *, coalesce(median(gap_s) over (partition by gpu_id, mig_instance), 60.0) as median_s
        from telemetry_samples
    )
    where coalesce(pod, '') <> ''
      and pod not in (select job_id from job_run_facts where source = 'kubernetes')
),

pod_pieces as (
    select *, date_trunc('hour', sampled_at) as piece_hour from pod_samples
    union all
    select *, date_trunc('hour', sampled_at) + interval 1 hour from pod_samples
    where until_at > date_trunc('hour', sampled_at) + interval 1 hour
),

-- A pod's job: job_runs.job_id equal to the pod or to its prefix before a '-' (operators name
-- pods <job>-<role>-<n>), the longest such; else the pod is its own job, its namespace's.
pod_jobs as (
    select p.pod, r.job_id, r.team
    from (select distinct pod from pod_samples) as p
    join job_run_facts as r on r.job_id = p.pod or starts_with(p.pod, r.job_id || '-')
    qualify row_number() over (partition by p.pod order by length(r.job_id) desc, r.source) = 1
),

pod_held as (
    select
        coalesce(r.job_id, p.pod)                                                as job_id,
        'dcgm'                                                                   as source,
        coalesce(any_value(r.team), any_value(p.namespace))                      as team,
        any_value(p.host)                                                        as node,
        m.resource_id,
        m.hour,
        sum(p.share * (epoch(least(p.until_at, m.hour + interval 1 hour)) - epoch(greatest(p.sampled_at, m.hour))))
                                                                                 as gpu_seconds
    from pod_pieces as p
    left join (select node, min(instance_id) as instance_id from node_map group by node) as by_host
      on by_host.node = p.host
    left join (select node, min(instance_id) as instance_id from node_map group by node) as by_label
      on by_label.node = split_part(p.host, '.', 1)
    join machine_hours as m
      on m.resource_id = coalesce(p.instance_id, by_host.instance_id, by_label.instance_id)
     and m.hour = p.piece_hour
    left join pod_jobs as r on r.pod = p.pod
    where m.tag_job is null
      and not exists (select 1 from scheduler_held as sh where sh.resource_id = m.resource_id and sh.hour = m.hour)
    group by coalesce(r.job_id, p.pod), m.resource_id, m.hour
    having sum(p.share * (epoch(least(p.until_at, m.hour + interval 1 hour)) - epoch(greatest(p.sampled_at, m.hour)))) > 0
),

sagemaker_jobs as (
    select lower(job_id) as name, job_id, team
    from job_run_facts
    where source = 'sagemaker'
    qualify row_number() over (partition by lower(job_id) order by job_id) = 1
),

sagemaker_held as (
    select
        s.job_id, 'sagemaker' as source, coalesce(s.team, m.tag_team) as team, null as node,
        m.resource_id, m.hour, m.usage_gpu_seconds as gpu_seconds
    from machine_hours as m
    join sagemaker_jobs as s on s.name = m.sagemaker_job
    where m.usage_gpu_seconds > 0
),

held as (
    select * from scheduler_held
    union all
    select * from pod_held
    union all
    select * from sagemaker_held
),

held_hours as (
    select resource_id, hour, sum(gpu_seconds) as held_gpu_seconds, count(*) as holders
    from held
    group by resource_id, hour
),

-- How each machine-hour is shared: a reservation's unused hours are idle (of no node, the pool's);
-- held by a scheduler job -> by GPU-seconds; else the bill's
-- job_id tag; else a cluster node's idle hour (a node some job held at any time, or one a
-- describe-instances listing or the bill's node tag names whose line has no team tag); else the
-- bill's team tag; else nobody's. The telemetry alone makes no machine a cluster node: it also
-- names the tagged fleet's hosts.
ever_held as (
    select resource_id from held
    union
    -- A node a scheduler job held in any month: the window is one month of the history
    -- (athanor.recommend.allocation), and a cluster node is one in all of them.
    select c.instance_id from all_job_nodes as j join candidates as c on c.node = j.node
),

listed as (
    select distinct instance_id as resource_id from node_map where source <> 'telemetry'
),

classified as (
    select
        m.*,
        hh.held_gpu_seconds,
        -- Some job held it: its rows share its cents by largest remainder (`ranked`). A
        -- machine-hour no job held has one row (idle, or its bill's tags): all its cents.
        hh.resource_id is not null                                               as shared,
        case
            when m.unused_commitment then 'idle'
            when hh.resource_id is not null then 'split'
            when m.tag_job is not null then 'tagged'
            when e.resource_id is not null or (l.resource_id is not null and m.tag_team is null) then 'idle'
            when m.tag_team is not null then 'team_tagged'
            else 'unattributed'
        end                                                                      as mode
    from machine_hours as m
    left join held_hours as hh using (resource_id, hour)
    left join ever_held as e using (resource_id)
    left join listed as l using (resource_id)
),

-- A machine's name: the one its jobs knew it by, else the first the node map has.
node_names as (
    select resource_id, coalesce(min(h.node), min(n.node)) as node
    from (select resource_id from ever_held union select resource_id from listed)
    left join (select resource_id, node from held) as h using (resource_id)
    left join (select instance_id as resource_id, node from node_map) as n using (resource_id)
    group by resource_id
),

owners as (
    select instance_id as resource_id, any_value(team) as team
    from ec2_instances
    where coalesce(team, '') <> ''
    group by instance_id
),

-- Each row of a machine-hour with the machine-hour's figures: the jobs' rows take them from
-- `classified` by a join on the hours jobs held, the idle and tag rows are `classified`'s own.
-- (Joining every row back to `machine_hours`, and materializing the rows for `ranked`'s two
-- branches, took 2.1 of the query's 6.7 CPU-s on a month of 2M lines.)
holders as not materialized (
    select
        h.resource_id, h.hour, h.node, 'job' as kind, h.job_id, h.source as job_source, h.team, h.gpu_seconds,
        c.period_end, c.instance_type, c.gpus, c.billed_gpu_seconds, c.hour_cost_usd, c.held_gpu_seconds, c.shared
    from held as h
    join (select * from classified where shared) as c using (resource_id, hour)  -- the few hours held
    union all
    -- The paid GPU-seconds no job held: idle, the machine's team's where it has one.
    select
        c.resource_id, c.hour, n.node, 'idle', null, null, coalesce(c.tag_team, o.team),
        c.billed_gpu_seconds - coalesce(c.held_gpu_seconds, 0),
        c.period_end, c.instance_type, c.gpus, c.billed_gpu_seconds, c.hour_cost_usd, c.held_gpu_seconds, c.shared
    from classified as c
    left join node_names as n using (resource_id)
    left join owners as o using (resource_id)
    where (c.mode = 'split' and c.billed_gpu_seconds - c.held_gpu_seconds > 0) or c.mode = 'idle'
    union all
    -- No scheduler job and no cluster node: the bill's tags, as before the allocation existed.
    select
        c.resource_id, c.hour, null, c.mode, c.tag_job, case when c.mode = 'tagged' then 'bill_tag' end,
        c.tag_team, c.billed_gpu_seconds,
        c.period_end, c.instance_type, c.gpus, c.billed_gpu_seconds, c.hour_cost_usd, c.held_gpu_seconds, c.shared
    from classified as c
    where c.mode in ('tagged', 'team_tagged', 'unattributed')
),

shares as (
    select
        *,
        greatest(billed_gpu_seconds, coalesce(held_gpu_seconds, 0))              as denominator,
        cast(round(hour_cost_usd * 100) as hugeint)                             as hour_cents
    from holders
),

exact as (
    select
        *,
        case when denominator > 0 then gpu_seconds / denominator else 1.0 end   as fraction,
        hour_cents * (case when denominator > 0 then gpu_seconds / denominator else 1.0 end) as exact_cents
    from shares
),

-- Not materialized: each branch of `ranked` computes its own rows from `classified` (most
-- hours are no job's, and need no window).
floored as not materialized (
    select
        *,
        -- The margin keeps a whole number of cents computed in binary floating point whole.
        cast(floor(exact_cents + 1e-9) as hugeint)                              as floor_cents
    from exact
),

ranked as (
    select
        *,
        hour_cents - sum(floor_cents) over machine_hour                         as left_cents,
        row_number() over (
            partition by resource_id, hour
            order by exact_cents - floor_cents desc, kind, job_id nulls last, job_source nulls last
        )                                                                        as remainder_rank
    from floored
    where shared
    window machine_hour as (partition by resource_id, hour)
    union all
    -- One row, the whole hour: its exact share is its cents (no window over the fleet's hours).
    select *, hour_cents - floor_cents, 1
    from floored
    where not shared
)

select
    hour,
    cast(hour as date)                                                           as day,
    period_end,
    resource_id,
    node,
    instance_type,
    instance_type                                                                as pool,
    kind,
    job_id,
    job_source,
    team,
    gpus,
    billed_gpu_seconds,
    gpu_seconds,
    hour_cost_usd,
    cast(cast(hour_cost_usd as double) * fraction as decimal(38, 12))           as cost_usd,
    cast(floor_cents + case when remainder_rank <= left_cents then 1 else 0 end as decimal(18, 0)) * 0.01
                                                                                 as cost_cents_usd
from ranked
-- No order by: every reader aggregates or orders its own result, and a month is written by one
-- insert (athanor.recommend.allocation), so its rows share row groups whatever their order.
-- Sorting 3.5M machine-hours of a 4M-line month cost 4 of the stage's 11 s under the 2 GB limit.

-- Cost by GPU-seconds on shared clusters (issue 32): which billed instance a scheduler's node was,
-- and each billed machine-hour's cost split over the jobs that held its GPUs, the rest idle.

-- Grain: one row per EC2 instance an `aws ec2 describe-instances` delivery listed (the latest
-- listing of each instance wins: instances terminated since keep their last row, so a node
-- name maps to the instance it was at the time).
create table if not exists ec2_instances (
    load_id            varchar not null,
    source_file        varchar not null,
    instance_id        varchar not null primary key,
    instance_type      varchar,
    private_dns_name   varchar,
    private_ip         varchar,
    name_tag           varchar,
    team               varchar,
    launch_time        timestamp,
    state              varchar,
    tags               map(varchar, varchar)
);

-- Grain: one row per scheduler node name and instance it named (a name reused by a later
-- instance has a row for each). Written by the allocate_gpus stage from ec2_instances
-- (PrivateDnsName's short name, the Name tag, the instance id), the telemetry (a sample naming
-- both its host and its instance) and the bill (the tag key ATHANOR_NODE_TAG_KEY names).
create table if not exists node_map (
    node               varchar not null,
    instance_id        varchar not null,
    instance_type      varchar,
    valid_from         timestamp,          -- the instance's launch (null: not known)
    source             varchar not null    -- describe_instances | telemetry | bill_tag
);

-- Grain: one row per billed GPU machine-hour (USD usage lines of a GPU instance type, by
-- resource and charge period) and holder: each job that held its GPUs that hour, and one idle
-- row for the GPU-seconds no job held. Cost splits by GPU-seconds held; the cents of each
-- machine-hour are shared by largest remainder, so its rows add up to its bill to the cent.
-- Machine-hours no scheduler job reached keep their tag-based link (the bill's job_id tag:
-- kind 'tagged'; only a team tag: 'team_tagged') or are 'unattributed'.
create table if not exists gpu_allocation_hourly (
    hour               timestamp not null, -- the charge period's start (UTC)
    day                date not null,
    period_end         timestamp not null,
    resource_id        varchar not null,   -- the bill's resource (an instance id)
    node               varchar,            -- the scheduler's name of it, where a job named it
    instance_type      varchar not null,
    pool               varchar not null,   -- the node pool: the instance type
    kind               varchar not null,   -- job | idle | tagged | team_tagged | unattributed
    job_id             varchar,            -- as the scheduler wrote it (array tasks 123_1)
    job_source         varchar,            -- slurm | generic | sagemaker | bill_tag
    team               varchar,            -- the job's team; idle: the node's team tag, if any
    gpus               integer not null,   -- GPUs of the machine
    billed_gpu_seconds double not null,    -- GPUs x usage hours x 3600
    gpu_seconds        double not null,    -- held by the job (idle: held by none)
    hour_cost_usd      decimal(38, 12) not null,  -- the machine-hour's EffectiveCost
    cost_usd           decimal(38, 12) not null,  -- this row's exact share
    cost_cents_usd     decimal(18, 2) not null,   -- the share in cents; a machine-hour's add up to its bill
    run_id             varchar not null
);

-- Grain: one row per job (and source) the allocation reached: its GPU-hours and cost.
create or replace view job_allocated_costs as
select
    job_id,
    job_source,
    any_value(team)                              as team,
    sum(gpu_seconds) / 3600                      as gpu_hours,
    sum(cost_usd)                                as cost_usd,
    sum(cost_cents_usd)                          as cost_cents_usd,
    min(hour)                                    as first_hour,
    max(hour)                                    as last_hour
from gpu_allocation_hourly
where kind in ('job', 'tagged')
group by job_id, job_source;

-- Grain: one row per team (null: nobody's) and day: its allocated and idle GPU cost.
create or replace view team_allocated_costs as
select
    day,
    team,
    sum(cost_cents_usd) filter (where kind in ('job', 'tagged', 'team_tagged'))  as allocated_usd,
    sum(cost_cents_usd) filter (where kind = 'idle')                            as idle_usd,
    sum(cost_cents_usd) filter (where kind = 'unattributed')                    as unattributed_usd
from gpu_allocation_hourly
group by day, team;

-- Grain: one row per month of charge hours that bills GPU machine-hours, with a digest of what
-- the month's allocation (sql/marts/gpu_allocation_hourly.sql over that month) reads:
-- * its GPU usage lines, by lineage (load, and file and row within it): a load only inserts
--   lines under its own id and deletes lines of earlier loads, never updates one, so a restated
--   partition's lines change the digest (hashing their figures too took 4.4 s at 96M lines,
--   the lineage 0.7 s);
-- * the job runs whose time reaches into it (from a day before its start, as the allocation's
--   window does), every column the allocation reads;
-- * the telemetry loads whose samples fall in it, with how many of their samples do (a restated
--   capture's replaced samples change the count).
-- What every month reads alike (the node map, the machines' owners, the cluster's nodes) is in
-- sql/marts/gpu_allocation_shared_inputs.sql. athanor.recommend.allocation reallocates the
-- months whose digest changed since it last allocated them.
with load_lines as (
    select
        date_trunc('month', charge_period_start)                                      as month,
        load_id,
        count(*)                                                                       as lines,
        bit_xor(hash(source_file, source_row))                                         as digest
    from ({gpu_usage_lines})
    group by all
),

billing as (
    -- Per load, then per month: XOR over hashes of several values cancels what rows share
    -- (two loads' same rows would give one digest), so the loads are named, not XORed.
    select month, sum(lines) as lines, string_agg(concat_ws(':', load_id, lines, digest), ',' order by load_id) as digest
    from load_lines
    group by month
),

jobs as (
    select
        b.month,
        count(*)                                                                       as jobs,
        -- One value per job (the row as text, NULLs spelt out): its columns' hashes XORed
        -- across jobs would cancel what two jobs share.
        bit_xor(hash(cast(row(j.job_id, j.source, j.team, j.start_time, j.end_time, j.duration_s,
                              j.gpu_count, j.node_list) as varchar)))                  as digest
    from billing as b
    join job_run_facts as j
      on j.start_time < b.month + interval 1 month
     and coalesce(j.end_time, j.start_time + to_microseconds(cast(j.duration_s * 1e6 as bigint)),
                  timestamp '9999-01-01') > b.month - interval 1 day
    group by b.month
),

telemetry_loads as (
    select load_id, date_trunc('month', sampled_at) as month, count(*) as samples
    from gpu_samples
    group by all
),

telemetry as (
    select b.month, string_agg(t.load_id || ':' || t.samples, ',' order by t.load_id, t.month) as loads
    from billing as b
    join telemetry_loads as t
      on t.month = b.month or t.month = b.month - interval 1 month  -- a day before the month
    group by b.month
)

select
    b.month,
    md5(concat_ws('|', b.lines, b.digest, coalesce(j.jobs, 0), coalesce(j.digest, 0), coalesce(t.loads, '')))
                                                                                       as digest
from billing as b
left join jobs as j using (month)
left join telemetry as t using (month)
order by b.month

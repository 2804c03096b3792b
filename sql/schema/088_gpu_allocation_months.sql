-- Grain: one row per month of charge hours gpu_allocation_hourly holds, and the digest of the
-- inputs it was allocated from (athanor.recommend.allocation.changed_months): a month is
-- allocated again only when that digest changes.
create table if not exists gpu_allocation_months (
    month   timestamp primary key,  -- the month's first hour (UTC)
    digest  varchar not null
);

comment on table gpu_allocation_months is 'Which months of gpu_allocation_hourly are current, and from what. Grain: one row per month of charge hours with billed GPU machine-hours. The allocate_gpus stage reallocates a month whose digest of inputs (its GPU usage lines, the job runs reaching into it, its telemetry loads; the node map and cluster nodes of every month; the allocation''s code) differs from the stored one.';
comment on column gpu_allocation_months.month is 'The month''s first hour (UTC).';
comment on column gpu_allocation_months.digest is 'MD5 over the inputs the month was allocated from (sql/marts/gpu_allocation_inputs.sql and gpu_allocation_shared_inputs.sql).';
comment on table gpu_allocation_hourly is 'Each billed GPU machine-hour''s cost split over the jobs that held its GPUs, in proportion to GPU-seconds held, and what no job held as idle. Grain: one row per machine-hour (USD usage lines of a GPU instance type, by resource and charge period) and holder. Its rows add up to the machine-hour''s bill to the cent (cost_cents_usd, largest remainder). Written by the allocate_gpus stage, a month at a time: the months whose inputs changed (gpu_allocation_months).';

-- Grain: one row per billing partition (billing account, billing period), day of charge start,
-- currency, job_id tag, whether the lines are compute (an instance type) and charge category.
-- The billing lines' sums by the training job they are tagged with, kept by the load for just
-- the partitions it touched (athanor.ingest.daily), so that what reads the job_id tag of every
-- line of the history (job_run_costs, the unit economics, the share of GPU spend explained by
-- job runs) reads days x jobs instead: the tags map is the costliest column a line has.
create table if not exists billing_job_daily (
    billing_account_id     varchar not null,
    billing_period_start   timestamp not null,
    day                    date not null,
    billing_currency       varchar not null,
    job_id                 varchar,            -- the job_id tag as billed; null: the lines have none
    compute                boolean not null,   -- x_instance_type is not null
    charge_category        varchar,
    effective_cost         decimal(38, 12) not null,
    billed_cost            decimal(38, 12) not null,
    usage_hours            decimal(38, 12),    -- sum of x_usage_hours; null when no line has one
    line_items             bigint not null,
    first_charge_start     timestamp not null,
    last_charge_end        timestamp not null
);

-- A warehouse loaded before this table existed: its partitions summed once, here (the lake
-- mode's lines are summed by the night's validate stage instead: athanor.ingest.daily). Keep the
-- expressions equal to sql/ingest/billing_job_daily_lines.sql.
insert into billing_job_daily by name
select
    f.billing_account_id,
    f.billing_period_start,
    f.charge_period_start::date as day,
    f.billing_currency,
    f.tags['job_id'] as job_id,
    f.x_instance_type is not null as compute,
    f.charge_category,
    sum(f.effective_cost) as effective_cost,
    sum(f.billed_cost) as billed_cost,
    sum(f.x_usage_hours) as usage_hours,
    count(*) as line_items,
    min(f.charge_period_start) as first_charge_start,
    max(f.charge_period_end) as last_charge_end
from billing_facts as f
anti join (select distinct billing_account_id, billing_period_start from billing_job_daily) as done
    using (billing_account_id, billing_period_start)
group by all;

comment on table billing_job_daily is 'Grain: one row per billing account, billing period, day (of charge start), currency, job_id tag, compute or not and charge category. The sums of billing_facts by the job_id tag, maintained by each billing load for the (account, period) partitions it touched; reconciles with billing_facts to the cent. job_run_costs reads it.';
comment on column billing_job_daily.billing_account_id is 'The partition''s billing account (billing_facts.billing_account_id).';
comment on column billing_job_daily.billing_period_start is 'The partition''s billing period (billing_facts.billing_period_start).';
comment on column billing_job_daily.day is 'The UTC day the charges started (charge_period_start).';
comment on column billing_job_daily.billing_currency is 'Billing currency; never added across.';
comment on column billing_job_daily.job_id is 'The lines'' job_id tag (billing_facts.tags[''job_id'']); null when they have none.';
comment on column billing_job_daily.compute is 'Whether the lines are compute: billing_facts.x_instance_type is set.';
comment on column billing_job_daily.charge_category is 'billing_facts.charge_category (FOCUS ChargeCategory).';
comment on column billing_job_daily.effective_cost is 'Sum of billing_facts.effective_cost (amortised).';
comment on column billing_job_daily.billed_cost is 'Sum of billing_facts.billed_cost (invoiced).';
comment on column billing_job_daily.usage_hours is 'Sum of billing_facts.x_usage_hours; null when no line has one.';
comment on column billing_job_daily.line_items is 'Number of billing_facts rows summed.';
comment on column billing_job_daily.first_charge_start is 'Earliest charge_period_start of those rows (UTC).';
comment on column billing_job_daily.last_charge_end is 'Latest charge_period_end of those rows (UTC).';

-- Grain: one row per billing partition (billing account, billing period), day of charge start,
-- currency and the labels the spend watch and the report group by. The daily effective cost of
-- billing_facts, kept by the load for just the partitions it touched (athanor.ingest.daily), so
-- that the nightly readers of the whole history (the watch's daily series and forecast, the
-- currency history rule) read days x labels instead of every billing line.
create table if not exists billing_daily (
    billing_account_id     varchar not null,
    billing_period_start   timestamp not null,
    day                    date not null,
    billing_currency       varchar not null,
    kind                   varchar not null,   -- usage | month_start (sql/watch/daily_costs.sql)
    service                varchar not null,   -- service_name, '(unknown)' when empty
    account                varchar not null,   -- sub_account_id, else billing_account_id
    team                   varchar not null,   -- the team tag, '(untagged)' when empty
    effective_cost         decimal(38, 12) not null,
    line_items             bigint not null,
    last_charge_end        timestamp,          -- max(charge_period_end) of the group
    -- What the report's weekly charts label lines by (sql/report/spend_weekly.sql,
    -- commitment_weekly.sql), as billed: the labels are the report's, applied when it reads.
    pricing_category       varchar,
    charge_category        varchar,
    commitment_discount_status varchar,
    x_instance_family      varchar,
    service_category       varchar,
    usage_hours            decimal(38, 12)     -- sum of x_usage_hours, 0 when none
);

-- A warehouse summed before those columns existed gains them, and its partitions are summed
-- again below (usage_hours is never NULL in a row the load wrote).
alter table billing_daily add column if not exists pricing_category varchar;
alter table billing_daily add column if not exists charge_category varchar;
alter table billing_daily add column if not exists commitment_discount_status varchar;
alter table billing_daily add column if not exists x_instance_family varchar;
alter table billing_daily add column if not exists service_category varchar;
alter table billing_daily add column if not exists usage_hours decimal(38, 12);
delete from billing_daily where usage_hours is null;

-- A warehouse loaded before this table existed: its partitions summed once, here. Later loads
-- keep it (one writer: athanor.ingest.daily.refresh_billing_daily); a partition already summed
-- is never summed again by this statement.
insert into billing_daily by name
select
    f.billing_account_id,
    f.billing_period_start,
    f.charge_period_start::date as day,
    f.billing_currency,
    case when f.charge_category <> 'Usage' or f.charge_frequency = 'One-Time' then 'month_start' else 'usage' end as kind,
    coalesce(f.service_name, '(unknown)') as service,
    coalesce(f.sub_account_id, f.billing_account_id) as account,
    coalesce(nullif(f.tags['team'], ''), '(untagged)') as team,
    f.pricing_category,
    f.charge_category,
    f.commitment_discount_status,
    f.x_instance_family,
    f.service_category,
    sum(f.effective_cost) as effective_cost,
    count(*) as line_items,
    max(f.charge_period_end) as last_charge_end,
    coalesce(sum(f.x_usage_hours), 0) as usage_hours
from billing_facts as f
anti join (select distinct billing_account_id, billing_period_start from billing_daily) as done
    using (billing_account_id, billing_period_start)
group by all;

comment on table billing_daily is 'Grain: one row per billing account, billing period, day (of charge start), currency, kind, service, account, team, pricing category, charge category, commitment discount status, instance family and service category. The daily effective cost of billing_facts, maintained by each billing load for the (account, period) partitions it touched; reconciles with billing_facts to the cent.';
comment on column billing_daily.billing_account_id is 'The partition''s billing account (billing_facts.billing_account_id).';
comment on column billing_daily.billing_period_start is 'The partition''s billing period (billing_facts.billing_period_start).';
comment on column billing_daily.day is 'The UTC day the charges started (charge_period_start).';
comment on column billing_daily.billing_currency is 'Billing currency; never added across.';
comment on column billing_daily.kind is 'month_start: purchases, fees, tax, credits, adjustments and one-time charges; usage: the rest.';
comment on column billing_daily.service is 'service_name, ''(unknown)'' when empty.';
comment on column billing_daily.account is 'sub_account_id, else billing_account_id.';
comment on column billing_daily.team is 'The team tag, ''(untagged)'' when empty.';
comment on column billing_daily.effective_cost is 'Sum of billing_facts.effective_cost (amortised).';
comment on column billing_daily.line_items is 'Number of billing_facts rows summed.';
comment on column billing_daily.last_charge_end is 'Latest charge_period_end of those rows (UTC).';
comment on column billing_daily.pricing_category is 'billing_facts.pricing_category (FOCUS PricingCategory), as billed.';
comment on column billing_daily.charge_category is 'billing_facts.charge_category (FOCUS ChargeCategory).';
comment on column billing_daily.commitment_discount_status is 'billing_facts.commitment_discount_status (Used, Unused or empty).';
comment on column billing_daily.x_instance_family is 'billing_facts.x_instance_family.';
comment on column billing_daily.service_category is 'billing_facts.service_category (FOCUS ServiceCategory).';
comment on column billing_daily.usage_hours is 'Sum of billing_facts.x_usage_hours, 0 when the rows have none.';

-- Grain: one row per billing partition (billing account, billing period), hour, instance type,
-- region and pricing model: the GPU instance-hours and their cost in USD, the input of
-- mart_gpu_demand_hourly (sql/marts/gpu_demand_hourly.sql), kept by the load like
-- billing_daily so that the nightly mart reads hours, not every billing line. No reference data
-- is applied here (normalisation happens in the mart), so a new catalogue needs no re-sum.
create table if not exists billing_gpu_hourly (
    billing_account_id     varchar not null,
    billing_period_start   timestamp not null,
    hour                   timestamp not null,
    x_instance_type        varchar not null,
    x_instance_family      varchar,
    region                 varchar not null,   -- region_id, 'global' when empty
    x_pricing_model        varchar,
    usage_hours            double not null,    -- sum of x_usage_hours
    effective_cost_usd     decimal(38, 12) not null,
    list_cost_usd          decimal(38, 12) not null  -- list cost, else billed cost
);

insert into billing_gpu_hourly by name
select
    f.billing_account_id,
    f.billing_period_start,
    date_trunc('hour', f.charge_period_start) as hour,
    f.x_instance_type,
    f.x_instance_family,
    coalesce(f.region_id, 'global') as region,
    f.x_pricing_model,
    sum(cast(f.x_usage_hours as double)) as usage_hours,
    sum(f.effective_cost) as effective_cost_usd,
    sum(coalesce(f.list_cost, f.billed_cost)) as list_cost_usd
from billing_facts as f
anti join (select distinct billing_account_id, billing_period_start from billing_gpu_hourly) as done
    using (billing_account_id, billing_period_start)
where f.x_usage_hours > 0 and f.charge_category = 'Usage' and f.billing_currency = 'USD'
  and f.x_instance_type is not null
group by all;

comment on table billing_gpu_hourly is 'Grain: one row per billing account, billing period, hour, instance type, region and pricing model. GPU and other instance usage lines in USD (x_usage_hours > 0, charge category Usage): their instance-hours and cost, maintained by each billing load for the partitions it touched; mart_gpu_demand_hourly is built from it.';
comment on column billing_gpu_hourly.billing_account_id is 'The partition''s billing account.';
comment on column billing_gpu_hourly.billing_period_start is 'The partition''s billing period.';
comment on column billing_gpu_hourly.hour is 'The hour the charges started (UTC).';
comment on column billing_gpu_hourly.x_instance_type is 'billing_facts.x_instance_type.';
comment on column billing_gpu_hourly.x_instance_family is 'billing_facts.x_instance_family.';
comment on column billing_gpu_hourly.region is 'region_id, ''global'' when empty.';
comment on column billing_gpu_hourly.x_pricing_model is 'billing_facts.x_pricing_model.';
comment on column billing_gpu_hourly.usage_hours is 'Sum of x_usage_hours (instance-hours, not normalised).';
comment on column billing_gpu_hourly.effective_cost_usd is 'Sum of effective_cost (USD).';
comment on column billing_gpu_hourly.list_cost_usd is 'Sum of list_cost, else billed_cost (USD).';

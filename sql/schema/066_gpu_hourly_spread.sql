-- billing_gpu_hourly spreads a line over the hours it covers (sql/ingest/billing_gpu_hourly_lines.sql:
-- Azure's daily lines were summed into their first hour): the partitions holding such lines are
-- summed again with that file's expressions; the others (hourly lines) are unchanged. Once: every
-- schema file runs again whenever one changes (athanor.warehouse.migrations), and a warehouse that
-- has recorded this file has been summed this way since, by its loads.
delete from billing_gpu_hourly
where (billing_account_id, billing_period_start) in (
    select distinct billing_account_id, billing_period_start
    from billing_facts
    where x_instance_type is not null and charge_category = 'Usage'
      and charge_period_end > date_trunc('hour', charge_period_start) + interval 1 hour
      and not exists (select 1 from schema_migrations where name = 'schema/066_gpu_hourly_spread')
);

insert into billing_gpu_hourly by name
with spanning as (
    select distinct billing_account_id, billing_period_start
    from billing_facts
    where x_instance_type is not null and charge_category = 'Usage'
      and charge_period_end > date_trunc('hour', charge_period_start) + interval 1 hour
      and not exists (select 1 from schema_migrations where name = 'schema/066_gpu_hourly_spread')
),

lines as (
    select
        *,
        greatest(
            cast(ceil(epoch(charge_period_end - date_trunc('hour', charge_period_start)) / 3600) as integer), 1
        ) as span_hours
    from billing_facts
    where (billing_account_id, billing_period_start) in (select billing_account_id, billing_period_start from spanning)
      and (x_usage_hours > 0 or (source_format = 'gcp' and x_usage_hours is null and x_gpu_count > 0))
      and charge_category = 'Usage' and billing_currency = 'USD'
      and x_instance_type is not null
),

hours as (
    select
        *,
        unnest(range(span_hours)) as step,
        cast(effective_cost / span_hours as decimal(38, 12)) as effective_share,
        cast(coalesce(list_cost, billed_cost) / span_hours as decimal(38, 12)) as list_share
    from lines
)

select
    billing_account_id,
    billing_period_start,
    date_trunc('hour', charge_period_start) + to_hours(step) as hour,
    x_instance_type,
    x_instance_family,
    coalesce(region_id, 'global') as region,
    x_pricing_model,
    coalesce(sum(cast(x_usage_hours as double) / span_hours), 0) as usage_hours,
    sum(case when span_hours = 1 then effective_cost
             when step = 0 then effective_cost - (span_hours - 1) * effective_share
             else effective_share end) as effective_cost_usd,
    sum(case when span_hours = 1 then coalesce(list_cost, billed_cost)
             when step = 0 then coalesce(list_cost, billed_cost) - (span_hours - 1) * list_share
             else list_share end) as list_cost_usd
from hours
group by all;

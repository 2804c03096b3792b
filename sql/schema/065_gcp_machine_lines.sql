-- billing_gpu_hourly counts a GCP GPU machine's vCPU and memory lines in its cost
-- (sql/ingest/billing_gpu_hourly_lines.sql): the GCP partitions summed before are summed again.
-- Same expressions as that file; other providers' partitions are untouched. Once: every schema
-- file runs again whenever one changes (athanor.warehouse.migrations), and a warehouse that has
-- recorded this file has been summed this way since, by its loads; no need to read its history again.
delete from billing_gpu_hourly
where (billing_account_id, billing_period_start) in (
    select distinct billing_account_id, billing_period_start from billing_facts where source_format = 'gcp'
)
  and not exists (select 1 from schema_migrations where name = 'schema/065_gcp_machine_lines');

insert into billing_gpu_hourly by name
select
    billing_account_id,
    billing_period_start,
    date_trunc('hour', charge_period_start) as hour,
    x_instance_type,
    x_instance_family,
    coalesce(region_id, 'global') as region,
    x_pricing_model,
    coalesce(sum(cast(x_usage_hours as double)), 0) as usage_hours,
    sum(effective_cost) as effective_cost_usd,
    sum(coalesce(list_cost, billed_cost)) as list_cost_usd
from billing_facts
where (billing_account_id, billing_period_start) in (
    select distinct billing_account_id, billing_period_start from billing_facts where source_format = 'gcp'
)
  and not exists (select 1 from schema_migrations where name = 'schema/065_gcp_machine_lines')
  and (x_usage_hours > 0 or (source_format = 'gcp' and x_usage_hours is null and x_gpu_count > 0))
  and charge_category = 'Usage' and billing_currency = 'USD'
  and x_instance_type is not null
group by all;

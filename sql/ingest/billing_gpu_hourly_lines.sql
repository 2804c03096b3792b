-- billing_facts summed to billing_gpu_hourly's grain (instance usage in USD), for the lines
-- the `where` fragment selects: a load's own rows, or every line (see billing_daily_lines.sql). Keep the
-- expressions equal to the backfill in sql/schema/045_billing_daily.sql and its rebuild of GCP
-- partitions in sql/schema/065_gcp_machine_lines.sql.
-- Google bills an accelerator-optimised machine (a2-highgpu-8g) as its GPUs, vCPUs and memory on
-- lines of their own: the GPU line carries the machine-hours (sql/staging/gcp.sql), the vCPU and
-- memory lines of the same machine type carry the rest of its cost, counted here with no hours,
-- so the pool's bill is the machine's, as the catalogue's on-demand rate is.
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
where ({where})
  and (x_usage_hours > 0 or (source_format = 'gcp' and x_usage_hours is null and x_gpu_count > 0))
  and charge_category = 'Usage' and billing_currency = 'USD'
  and x_instance_type is not null
group by all

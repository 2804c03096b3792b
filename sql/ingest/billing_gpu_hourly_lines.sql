-- billing_facts summed to billing_gpu_hourly's grain (instance usage in USD), for the lines
-- the `where` fragment selects: a load's own rows, or every line (see billing_daily_lines.sql). Keep the
-- expressions equal to the backfill in sql/schema/045_billing_daily.sql and its rebuilds in
-- sql/schema/065_gcp_machine_lines.sql and 066_gpu_hourly_spread.sql.
-- Google bills an accelerator-optimised machine (a2-highgpu-8g) as its GPUs, vCPUs and memory on
-- lines of their own: the GPU line carries the machine-hours (sql/staging/gcp.sql), the vCPU and
-- memory lines of the same machine type carry the rest of its cost, counted here with no hours,
-- so the pool's bill is the machine's, as the catalogue's on-demand rate is.
-- A line over more than the hour it starts in (Azure's cost details and FOCUS exports are daily)
-- is spread evenly over the hours it covers, so a day's 48 VM-hours are 2 VMs every hour, not 48
-- at midnight (what commitments are sized on); its cost in equal parts to the 12th decimal, the
-- first hour taking the remainder, so the parts add up to the line.
with lines as (
    select
        *,
        greatest(
            cast(ceil(epoch(charge_period_end - date_trunc('hour', charge_period_start)) / 3600) as integer), 1
        ) as span_hours
    from billing_facts
    where ({where})
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
group by all

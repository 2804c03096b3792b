-- DuckDB's side of athanor.warehouse.distributed.gpu_hours_by_pool: per GPU pool (instance
-- family / region, as billing_gpu_hourly names it), the billed instance-hours of compute usage
-- and the GPU-hours they are (instance-hours x GPUs per instance), all currencies: hours are
-- not money. DECIMAL throughout, so both engines' sums are exact.
select
    x_instance_family || '/' || coalesce(region_id, 'global') as pool,
    sum(x_usage_hours)                                        as instance_hours,
    sum(x_usage_hours * x_gpu_count)                          as gpu_hours
from billing_facts
where x_usage_hours > 0 and charge_category = 'Usage' and x_instance_type is not null
group by all
order by all

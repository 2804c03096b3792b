-- Grain: one row per instance family: the pool (family/region) where most of its GPU-hours are
-- billed. Job logs name no region, so a family's jobs belong to this pool (as in job_classes.sql).
select instance_family, arg_max(pool, units) as pool
from (select instance_family, pool, sum(units) as units from mart_gpu_demand_hourly group by all)
group by instance_family
order by instance_family

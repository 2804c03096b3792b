-- Grain: one row per group of GPU usage hours (the group columns chosen by the caller: team,
-- job_class, instance_type, day), from rows shaped as gpu_usage_hourly.
-- gpu_hours = observed + unobserved (on a billed machine: its paid GPU-hours, or the observed ones
-- where samples cover more); costs are null where no row of the group has a billing line.
select
    {group_columns},
    sum(paid_gpu_hours)                                                     as paid_gpu_hours,
    sum(observed_gpu_hours) + sum(unobserved_gpu_hours)                     as gpu_hours,
    sum(observed_gpu_hours)                                                 as observed_gpu_hours,
    sum(busy_gpu_hours)                                                     as busy_gpu_hours,
    sum(idle_gpu_hours)                                                     as idle_gpu_hours,
    sum(unobserved_gpu_hours)                                               as unobserved_gpu_hours,
    sum(paid_cost_usd)                                                      as paid_cost_usd,
    sum(idle_cost_usd)                                                      as idle_cost_usd,
    -- Idle GPU-hours in hours no billing line covers: real, but without a price.
    coalesce(sum(idle_gpu_hours) filter (where idle_cost_usd is null), 0)   as unpriced_idle_gpu_hours,
    sum(busy_utilisation_gpu_hours) / nullif(sum(busy_gpu_hours), 0)       as mean_utilisation,
    sum(busy_memory_gib_gpu_hours) / nullif(sum(busy_gpu_hours), 0)        as mean_memory_used_gib,
    sum(busy_memory_share_gpu_hours) / nullif(sum(busy_gpu_hours), 0)      as mean_memory_share,
    sum(utilisation_gpu_hours) / nullif(sum(observed_gpu_hours), 0)        as observed_utilisation
from {rows}
group by all
order by all

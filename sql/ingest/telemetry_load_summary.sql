-- One telemetry load in figures, for its summary line.
select
    count(distinct gpu_id)                       as gpus,
    count(distinct host)                         as hosts,
    min(sampled_at)                              as first_at,
    max(sampled_at)                              as last_at,
    count(*) filter (where utilisation_pct is null) as unreported,
    count(distinct gpu_id || '/' || mig_instance) as mig_instances,
    count(*) filter (where power_w is not null)  as with_power
from gpu_samples
where load_id = $load_id

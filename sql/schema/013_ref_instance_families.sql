-- Grain: one row per instance family. A family's pool unit is its largest size (the
-- reference): demand, commitments and prices are all counted in instances of that size.
create or replace view ref_instance_families as
select
    instance_family,
    max(normalization_factor)                               as reference_factor,
    arg_max(instance_type, normalization_factor)            as reference_instance_type,
    arg_max(gpu_count, normalization_factor)                as gpu_count,
    arg_max(on_demand_usd_per_h, normalization_factor)      as on_demand_usd_per_h,
    arg_max(spot_usd_per_h, normalization_factor)           as spot_usd_per_h
from ref_instance_types
group by instance_family

-- Grain: one row per group of GPU usage hours (group columns chosen by the caller: team,
-- job_class, ...), from rows shaped as gpu_usage_hourly: the energy of the GPUs, how much of it
-- was measured (sampled power) and how much modelled (utilisation-to-power curves), and its carbon.
-- A row without a curve for its GPU has no energy (null, never 0): its GPU-hours are counted in
-- unknown_gpu_hours instead; carbon covers the energy whose region the grid file has.
select
    {group_columns},
    coalesce(sum(measured_energy_kwh), 0)                                   as measured_energy_kwh,
    coalesce(sum(modelled_energy_kwh), 0)                                   as modelled_energy_kwh,
    coalesce(sum(measured_energy_kwh), 0) + coalesce(sum(modelled_energy_kwh), 0)  as energy_kwh,
    coalesce(sum(measured_energy_kwh), 0)
        / nullif(coalesce(sum(measured_energy_kwh), 0) + coalesce(sum(modelled_energy_kwh), 0), 0)
                                                                            as measured_share,
    sum(kgco2e)                                                             as kgco2e,
    coalesce(sum(energy_kwh) filter (where kgco2e is null), 0)              as energy_without_carbon_kwh,
    coalesce(sum(observed_gpu_hours + unobserved_gpu_hours) filter (where modelled_energy_kwh is null), 0)
                                                                            as unknown_gpu_hours
from {rows}
group by all
order by all

-- Energy from measured power, modelled where none was sampled, and its carbon (issue 32, item 5).
-- Written with the rest of a gpu_usage_hourly row by athanor.recommend.gpu_usage.
alter table gpu_usage_hourly add column if not exists region varchar;
alter table gpu_usage_hourly add column if not exists power_gpu_hours double;
alter table gpu_usage_hourly add column if not exists measured_energy_kwh double;
alter table gpu_usage_hourly add column if not exists modelled_energy_kwh double;
alter table gpu_usage_hourly add column if not exists energy_kwh double;
alter table gpu_usage_hourly add column if not exists power_model varchar;
alter table gpu_usage_hourly add column if not exists kgco2e double;

comment on column gpu_usage_hourly.region is 'Region of the machine-hour''s billing lines (region_id); null: not billed. Where the grid intensity comes from.';
comment on column gpu_usage_hourly.power_gpu_hours is 'Observed GPU-hours whose samples carry a power reading (nvidia-smi power.draw.average, else power.draw, else power.draw.instant; DCGM_FI_DEV_POWER_USAGE).';
comment on column gpu_usage_hourly.measured_energy_kwh is 'Energy from measured power, kWh: each sample''s watts x the time it counts (until the next sample, capped) x gpu_share, summed; the GPU board only.';
comment on column gpu_usage_hourly.modelled_energy_kwh is 'Energy where no power was sampled, kWh, from the GPU model''s curve (athanor.reference.power: idle W + (max W - idle W) x utilisation): observed time without power at its utilisation, unobserved GPU-hours at idle power (a paid GPU is powered; at least its idle draw). Null: no curve for the GPU (unknown model), never 0.';
comment on column gpu_usage_hourly.energy_kwh is 'measured_energy_kwh + modelled_energy_kwh; null where part of it has no curve.';
comment on column gpu_usage_hourly.power_model is 'The catalogue GPU model whose power curve modelled the row (from the instance type, else the telemetry''s GPU name); null: none needed or none known.';
comment on column gpu_usage_hourly.kgco2e is 'energy_kwh x PUE (pue.csv, the provider''s) x grid intensity (grid_intensity.csv, the region''s) / 1000, kg CO2e; null without a region the grid file has, or without energy.';

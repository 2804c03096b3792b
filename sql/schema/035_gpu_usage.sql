-- Grain: one row per machine, GPU, hour and job (gpu_id null: a billed machine-hour's GPU-hours no
-- sample covers), as sql/marts/gpu_usage_hourly.sql counts them with the run's idle settings.
-- Written by the measure_gpus stage (athanor.recommend.gpu_usage, its one writer): each run replaces
-- the hours of its window, so the table holds every hour measured so far, each as last measured.
create table if not exists gpu_usage_hourly (
    hour                          timestamp not null,
    day                           date not null,
    machine                       varchar not null,
    resource_id                   varchar,
    host                          varchar,
    instance_id                   varchar,
    gpu_id                        varchar,
    gpu_model                     varchar,
    job_id                        varchar,
    team                          varchar not null,
    job_class                     varchar not null,
    instance_type                 varchar not null,
    paid_gpu_hours                double,
    observed_gpu_hours            double not null,
    busy_gpu_hours                double not null,
    idle_gpu_hours                double not null,
    unobserved_gpu_hours          double not null,
    usd_per_gpu_hour              double,
    paid_cost_usd                 double,
    idle_cost_usd                 double,
    utilisation_gpu_hours         double not null,
    busy_utilisation_gpu_hours    double not null,
    busy_memory_gib_gpu_hours     double not null,
    busy_memory_share_gpu_hours   double not null,
    peak_memory_share             double,
    idle_below_pct                double not null,
    idle_minutes                  double not null,
    sample_cap_s                  double,
    run_id                        varchar not null
);

comment on table gpu_usage_hourly is 'How busy the paid GPUs were. Grain: one row per machine, GPU, hour (UTC) and job; a row with gpu_id null holds a billed machine-hour''s GPU-hours no sample covers. A sample counts until the next sample of its GPU, capped (a gap is unobserved, not idle); idle: below idle_below_pct % for at least idle_minutes in a row. Written by the measure_gpus stage, which replaces the hours of its window.';
comment on column gpu_usage_hourly.hour is 'The hour (UTC, start).';
comment on column gpu_usage_hourly.day is 'The hour''s UTC day.';
comment on column gpu_usage_hourly.machine is 'The billing resource the samples name (instance id, host or SageMaker job name), else the instance id or host.';
comment on column gpu_usage_hourly.resource_id is 'The billing_facts resource (last part of resource_id) of the machine; null: no USD usage line names it, so no paid hours and no price.';
comment on column gpu_usage_hourly.host is 'Host name of the samples.';
comment on column gpu_usage_hourly.instance_id is 'Cloud instance id of the samples, where the telemetry carries one.';
comment on column gpu_usage_hourly.gpu_id is 'The GPU (UUID, else host:index); null on the unobserved row of a billed machine-hour.';
comment on column gpu_usage_hourly.gpu_model is 'GPU model as the telemetry names it.';
comment on column gpu_usage_hourly.job_id is 'The job run (job_runs.job_id) the samples belong to: by SageMaker job name, Kubernetes pod, else the job_id tag of the machine-hour''s billing line; null: none.';
comment on column gpu_usage_hourly.team is 'The team tag of the machine-hour''s billing line, else the job''s team; (untagged) when neither.';
comment on column gpu_usage_hourly.job_class is 'The job''s workload class as the GPU plan forms it (team/project/model/phase, the recorded ones); (no job) when none.';
comment on column gpu_usage_hourly.instance_type is 'Instance type of the billing line, else of the job; (unknown) when neither.';
comment on column gpu_usage_hourly.paid_gpu_hours is 'GPU-hours paid (billing usage hours x GPUs per instance), shared over the observed GPUs and the unobserved row; null: not billed.';
comment on column gpu_usage_hourly.observed_gpu_hours is 'GPU-hours covered by samples (each until the next, capped).';
comment on column gpu_usage_hourly.busy_gpu_hours is 'Observed GPU-hours that are not idle.';
comment on column gpu_usage_hourly.idle_gpu_hours is 'Observed GPU-hours in stretches below idle_below_pct % lasting at least idle_minutes.';
comment on column gpu_usage_hourly.unobserved_gpu_hours is 'GPU-hours without a sample: paid less observed on a billed machine, the capped-off part of gaps otherwise.';
comment on column gpu_usage_hourly.usd_per_gpu_hour is 'Effective cost per GPU-hour of the machine-hour''s billing lines (USD); null: not billed.';
comment on column gpu_usage_hourly.paid_cost_usd is 'paid_gpu_hours x usd_per_gpu_hour.';
comment on column gpu_usage_hourly.idle_cost_usd is 'Idle GPU-hours (within those paid) x usd_per_gpu_hour; null: not billed.';
comment on column gpu_usage_hourly.utilisation_gpu_hours is 'Sum of utilisation (0-1) x hours over observed time: divided by observed_gpu_hours, the mean utilisation (what the GPU plan''s carbon estimate uses).';
comment on column gpu_usage_hourly.busy_utilisation_gpu_hours is 'Sum of utilisation (0-1) x hours over busy time: divided by busy_gpu_hours, the mean utilisation of busy time.';
comment on column gpu_usage_hourly.busy_memory_gib_gpu_hours is 'Sum of memory used (GiB) x hours over busy time: divided by busy_gpu_hours, the mean memory used.';
comment on column gpu_usage_hourly.busy_memory_share_gpu_hours is 'Sum of memory used / memory total x hours over busy time.';
comment on column gpu_usage_hourly.peak_memory_share is 'Highest memory used / memory total of a sample in the hour.';
comment on column gpu_usage_hourly.idle_below_pct is 'The idle threshold used, % utilisation (ATHANOR_IDLE_BELOW_PCT).';
comment on column gpu_usage_hourly.idle_minutes is 'The shortest idle stretch used, minutes (ATHANOR_IDLE_MINUTES).';
comment on column gpu_usage_hourly.sample_cap_s is 'The most a sample counts for, seconds (ATHANOR_GPU_SAMPLE_CAP_MINUTES); null: twice the GPU''s median sampling interval.';
comment on column gpu_usage_hourly.run_id is 'The optimize run that measured the hour.'

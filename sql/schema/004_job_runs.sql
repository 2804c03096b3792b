-- Grain: one row per training job (the latest report of it from any source).
create table if not exists job_run_facts (
    load_id               varchar not null,
    source_file           varchar not null,
    source_row            bigint not null,
    source                varchar not null,   -- generic | slurm | sagemaker
    job_id                varchar not null,
    submit_time           timestamp,
    start_time            timestamp,
    end_time              timestamp,
    state                 varchar not null,   -- completed | failed | cancelled | preempted | running
    state_detail          varchar,
    instance_type         varchar,
    instance_count        integer not null,
    gpus_per_instance     integer not null,
    pricing_model         varchar,            -- on_demand | spot | reserved | savings_plan
    team                  varchar,
    project               varchar,
    model                 varchar,
    checkpoint_interval_s double,
    checkpoint_time_s     double,
    restart_count         integer,
    duration_s            double,             -- end - start; for running jobs, as-of - start
    censored              boolean not null,   -- preempted, cancelled and running jobs
    gpu_count             integer not null,   -- instance_count * gpus_per_instance
    gpu_hours             double,
    primary key (source, job_id)
);

-- Workload figures the GPU plan sizes and scales by (null where the log has none).
alter table job_run_facts add column if not exists model_params bigint;
alter table job_run_facts add column if not exists peak_gpu_memory_gib double;
alter table job_run_facts add column if not exists samples_per_second double;
alter table job_run_facts add column if not exists phase varchar;
-- The scheduler's nodes the job held, expanded, comma-separated (Slurm NodeList; issue 32).
alter table job_run_facts add column if not exists node_list varchar

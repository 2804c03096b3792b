-- The analysts' view of training-job runs.
create or replace view job_runs as
select
    job_id, source, team, project, model, state, state_detail,
    submit_time, start_time, end_time, duration_s, censored,
    instance_type, instance_count, gpus_per_instance, gpu_count, gpu_hours,
    pricing_model, checkpoint_interval_s, checkpoint_time_s, restart_count,
    model_params, peak_gpu_memory_gib, samples_per_second, phase,
    node_list, load_id, source_file, source_row
from job_run_facts

-- Grain: one row per training job started before $end that has a duration (for the
-- duration histograms; group keys such as 'team=llm' are matched in Python).
select
    j.source,
    j.team,
    j.project,
    j.model,
    j.instance_type,
    i.instance_family,
    j.pricing_model,
    j.state,
    j.censored,
    j.duration_s,
    j.gpu_hours
from job_run_facts as j
left join ref_instance_types as i using (instance_type)
where j.duration_s is not null
  and j.start_time < $end

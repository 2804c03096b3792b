-- Grain: one row per workload class of one optimize run's GPU plan: the run `$run_id` when it
-- wrote a plan, else the latest run as of `$as_of`. The biggest saving first.
with chosen as (
    select run_id
    from gpu_plan
    where as_of <= $as_of
    order by (run_id = $run_id) desc, as_of desc, run_id desc
    limit 1
)

select
    p.job_class,
    p.team,
    p.phase,
    p.runs,
    p.runs_per_month,
    p.current_instance_type,
    p.current_instance_count,
    p.current_gpus,
    p.recommended_instance_type,
    p.recommended_instance_count,
    p.recommended_gpus,
    p.recommended_region,
    p.memory_required_gib,
    p.memory_basis,
    p.scaling_bound,
    p.scaling_alpha,
    p.scaling_basis,
    p.hours_per_run_current,
    p.hours_per_run_recommended,
    cast(p.cost_per_run_current_usd as double) as cost_per_run_current_usd,
    cast(p.cost_per_run_recommended_usd as double) as cost_per_run_recommended_usd,
    cast(p.monthly_savings_usd as double) as monthly_savings_usd,
    p.kgco2e_per_run_current,
    p.kgco2e_per_run_recommended,
    p.greener_option,
    p.purchase,
    p.deadline_slack,
    p.reason,
    cast(p.frontier as varchar) as frontier,
    p.speedup,
    p.speedup_low,
    p.speedup_high,
    p.speedup_source,
    p.break_even_speedup,
    cast(p.monthly_savings_low_usd as double) as monthly_savings_low_usd,
    cast(p.monthly_savings_high_usd as double) as monthly_savings_high_usd,
    coalesce(p.benchmark_first, false) as benchmark_first,
    coalesce(p.counted, false) as counted
from gpu_plan as p
join chosen using (run_id)
order by p.monthly_savings_usd desc nulls last, p.job_class

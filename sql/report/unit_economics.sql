-- The report's unit economics: per week and model over [$start, $end) (weeks by their Monday),
-- the sums of unit_economics_weekly over its classes; the section divides them (per week, and
-- over the period per model).
select
    week,
    model,
    sum(runs)                                           as runs,
    sum(costed_runs)                                    as costed_runs,
    sum(allocated_runs)                                 as allocated_runs,
    sum(tagged_runs)                                    as tagged_runs,
    sum(cost_usd)                                       as cost_usd,
    sum(gpu_hours)                                      as gpu_hours,
    sum(samples)                                        as samples,
    sum(cost_of_sampled_runs_usd)                       as cost_of_sampled_runs_usd
from unit_economics_weekly
where week >= $start and week < $end
group by week, model
order by week, model

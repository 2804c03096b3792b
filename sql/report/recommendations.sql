-- Grain: one row per recommended action of one optimize run: the run `$run_id` when it
-- wrote recommendations, else the latest run as of `$as_of`.
with chosen as (
    select run_id, as_of
    from recommendations
    where as_of <= $as_of
    order by (run_id = $run_id) desc, as_of desc, run_id desc
    limit 1
)

select
    r.run_id,
    r.as_of,
    r.kind,
    r.scope,
    r.action,
    r.recommended_quantity,
    cast(r.hourly_commitment as double) as hourly_commitment,
    r.term_months,
    cast(r.upfront_cost as double) as upfront_cost,
    cast(r.recurring_monthly_cost as double) as recurring_monthly_cost,
    cast(r.estimated_monthly_cost as double) as estimated_monthly_cost,
    cast(r.current_monthly_cost as double) as current_monthly_cost,
    cast(r.estimated_monthly_savings_amount as double) as estimated_monthly_savings_amount,
    r.estimated_savings_percentage,
    r.average_utilization,
    r.coverage,
    r.break_even_months,
    r.risk,
    cast(r.assumptions as varchar) as assumptions,
    cast(r.detail as varchar) as detail
from recommendations as r
join chosen using (run_id)
order by r.estimated_monthly_savings_amount desc nulls last, r.kind, r.scope

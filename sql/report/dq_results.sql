-- Grain: one row per data-quality rule checked by the latest validation run on or before
-- $end (every column of dq_results; the report picks the ones it shows by name).
with chosen as (
    select run_id
    from dq_results
    where checked_at < $end
    order by checked_at desc, run_id desc
    limit 1
)

select d.*
from dq_results as d
join chosen using (run_id)
order by d.success, d.severity, d.rule

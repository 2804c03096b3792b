-- Grain: one row per data-quality rule checked by the latest validation run on or before
-- $end, failures first.
with chosen as (
    select run_id
    from dq_results
    where checked_at < $end
    order by checked_at desc, run_id desc
    limit 1
)

select
    d.suite,
    d.table_name,
    d.rule,
    d.column_name,
    d.severity,
    d.success,
    d.unexpected_count,
    d.examples,
    d.files,
    d.exception,
    d.checked_at
from dq_results as d
join chosen using (run_id)
order by d.success, d.severity, d.suite, d.rule, d.column_name

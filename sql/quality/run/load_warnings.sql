-- The warning-level rules that failed in a load's latest check, for the run summary and the report.
select rule, unexpected_count, examples, files
from dq_results
where load_id = $load_id
    and severity = 'warn'
    and not success
    and checked_at = (select max(checked_at) from dq_results where load_id = $load_id)
order by rule

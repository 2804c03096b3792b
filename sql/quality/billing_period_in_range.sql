-- Rule: a billing period lies between 2000-01-01 and the end of the day a year after the run's
-- day (today when the run names no day); see charge_period_in_range for why a date outside is
-- a misread.
with bounds as (
    select
        timestamp '2000-01-01' as earliest,
        (coalesce(as_of, current_date) + interval 1 year + interval 1 day)::timestamp as latest
    from dq_params
)

select
    source_file,
    source_row,
    billing_period_start::varchar || ' to ' || billing_period_end::varchar as value
from {batch}, bounds
where billing_period_start < bounds.earliest or billing_period_start >= bounds.latest
   or billing_period_end < bounds.earliest or billing_period_end > bounds.latest
order by source_file, source_row

-- Rule: a charge period lies between 2000-01-01 and the end of the day a year after the run's
-- day (today when the run names no day). A date outside is a misread, not a charge: DuckDB
-- casts '4/1/25' to the year 4, and a typo in a year lands centuries away, while the totals
-- still reconcile.
with bounds as (
    select
        timestamp '2000-01-01' as earliest,
        (coalesce(as_of, current_date) + interval 1 year + interval 1 day)::timestamp as latest
    from dq_params
)

select
    source_file,
    source_row,
    charge_period_start::varchar || ' to ' || charge_period_end::varchar as value
from {batch}, bounds
where charge_period_start < bounds.earliest or charge_period_start >= bounds.latest
   or charge_period_end < bounds.earliest or charge_period_end > bounds.latest
order by source_file, source_row

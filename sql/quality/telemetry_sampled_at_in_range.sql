-- Rule: a GPU sample is taken between 2000-01-01 and the end of the day after the run's day
-- (today when the run names no day; a day of margin for a host clock set to local time). A
-- sample outside is a misread timestamp or a host clock gone wrong, and would count as GPU time.
with bounds as (
    select
        timestamp '2000-01-01' as earliest,
        (coalesce(as_of, current_date) + interval 2 day)::timestamp as latest
    from dq_params
)

select source_file, source_row, sampled_at::varchar as value
from {batch}, bounds
where sampled_at < bounds.earliest or sampled_at >= bounds.latest
order by source_file, source_row

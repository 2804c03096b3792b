-- Rule: one sample per GPU per instant in a delivery. Two (a host exporting through two
-- collectors, a file delivered twice under two names) would count that GPU's time twice.
with repeated as (
    select gpu_id, sampled_at
    from {batch}
    group by gpu_id, sampled_at
    having count(*) > 1
)

select
    b.source_file,
    b.source_row,
    b.gpu_id || ' at ' || b.sampled_at::varchar as value
from {batch} as b
semi join repeated as r on b.gpu_id = r.gpu_id and b.sampled_at = r.sampled_at
order by b.source_file, b.source_row

-- Rule: one sample per GPU (or MIG instance of it) per instant in a delivery. Two (a host
-- exporting through two collectors, a file delivered twice under two names) would count that
-- GPU's time twice. The MIG instances of one GPU share its UUID and differ by GPU_I_ID: each is
-- its own series.
with repeated as (
    select gpu_id, mig_instance, sampled_at
    from {batch}
    group by gpu_id, mig_instance, sampled_at
    having count(*) > 1
)

select
    b.source_file,
    b.source_row,
    b.gpu_id || coalesce(' MIG ' || b.mig_instance, '') || ' at ' || b.sampled_at::varchar as value
from {batch} as b
semi join repeated as r
    on b.gpu_id = r.gpu_id
   and b.mig_instance is not distinct from r.mig_instance
   and b.sampled_at = r.sampled_at
order by b.source_file, b.source_row

-- Rule (warn): samples earlier deliveries loaded for a GPU within the span this delivery covers
-- for it (first to last sample). This delivery's samples replace them: a corrected file, or an
-- export overlapping the previous one; reported so that two collectors feeding one GPU are noticed.
with spans as (
    select gpu_id, min(sampled_at) as first_at, max(sampled_at) as last_at
    from {batch}
    group by gpu_id
)

select
    g.source_file,
    g.source_row,
    g.gpu_id || ' at ' || g.sampled_at::varchar as value
from gpu_samples as g
inner join spans as s on g.gpu_id = s.gpu_id and g.sampled_at between s.first_at and s.last_at
where g.load_id <> (select load_id from dq_params)
order by g.source_file, g.source_row

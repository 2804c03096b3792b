-- Rule (warn): samples of GPUs and instants an earlier delivery of another file already loaded.
-- The delivery's samples replace them (a Prometheus export overlapping the previous night's);
-- reported so that two collectors feeding the same GPUs are noticed.
with spans as (
    select gpu_id, min(sampled_at) as first_at, max(sampled_at) as last_at
    from {batch}
    group by gpu_id
),

earlier as (
    select g.gpu_id, g.sampled_at, g.source_file
    from gpu_samples as g
    inner join spans as s on g.gpu_id = s.gpu_id and g.sampled_at between s.first_at and s.last_at
    where g.load_id <> (select load_id from dq_params)
)

select
    b.source_file,
    b.source_row,
    b.gpu_id || ' at ' || b.sampled_at::varchar || ' (loaded from ' || e.source_file || ')' as value
from {batch} as b
inner join earlier as e on b.gpu_id = e.gpu_id and b.sampled_at = e.sampled_at
where e.source_file <> b.source_file
order by b.source_file, b.source_row

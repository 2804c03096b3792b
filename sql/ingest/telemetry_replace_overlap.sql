-- What a telemetry load supersedes (2 of 2): the samples of the same GPU at the same instant
-- from any other file (an export overlapping the previous one). A sample at another instant
-- stays: interleaved collections add detail, never time.
delete from gpu_samples as old
using (
    select gpu_id, min(sampled_at) as first_at, max(sampled_at) as last_at
    from gpu_samples
    where load_id = $load_id
    group by gpu_id
) as span
where old.load_id <> $load_id
  and old.gpu_id = span.gpu_id
  and old.sampled_at between span.first_at and span.last_at
  and exists (
      select 1 from gpu_samples as new
      where new.load_id = $load_id and new.gpu_id = old.gpu_id and new.sampled_at = old.sampled_at
  )

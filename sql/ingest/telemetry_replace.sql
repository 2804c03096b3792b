-- What a telemetry load restates, deleted once it has passed its checks: for each GPU it has
-- samples of, every sample earlier loads hold between its first and last sample of that GPU,
-- from any file (the same file delivered again, corrected; an export overlapping the previous
-- one). Outside that span nothing moves: a log rotated under the same name each day adds a day.
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

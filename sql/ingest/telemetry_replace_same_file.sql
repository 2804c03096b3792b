-- What a telemetry load supersedes (1 of 2), deleted once it has passed its checks: the samples
-- earlier loads read from the same file for the same host (the file delivered again,
-- corrected: what it no longer holds goes too).
delete from gpu_samples as old
using (
    select distinct source_file, host from gpu_samples where load_id = $load_id
) as same_file
where old.load_id <> $load_id
  and old.source_file = same_file.source_file
  and old.host = same_file.host

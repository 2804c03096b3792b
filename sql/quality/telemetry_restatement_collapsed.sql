-- Rule: a telemetry delivery keeps, for each GPU, at least a share (dq_params.restatement_min_share,
-- ATHANOR_RESTATEMENT_MIN_SHARE, default one half) of the samples earlier loads hold in the span
-- it restates for that GPU (its first to its last sample, what athanor.ingest.telemetry replaces).
-- A collector sampling every 5 minutes does not start sampling every few hours: a delivery that
-- thin is a partial export or a broken scrape, and loading it would erase the samples that
-- measure idle time (760 samples replaced 40,288 and the idle cost went from $2,750 to $12,853).
-- An error, as for a billing month (restated_period_collapsed): the delivery is held in
-- quarantine until an operator releases it; a released delivery loads with this rule as a warning.
-- One row per GPU; a share of 0 turns the rule off.
with incoming as (
    select
        gpu_id,
        min(source_file) as source_file,
        min(sampled_at) as first_at,
        max(sampled_at) as last_at,
        count(*) as sample_count
    from {batch}
    group by gpu_id
),

previous as (
    select
        incoming.gpu_id,
        count(*) as sample_count
    from gpu_samples as g
    inner join incoming on g.gpu_id = incoming.gpu_id and g.sampled_at between incoming.first_at and incoming.last_at
    where g.load_id <> (select load_id from dq_params)
    group by incoming.gpu_id
)

select
    incoming.source_file,
    null::bigint as source_row,
    -- Short: an example value is cut at 80 characters, and a GPU's UUID takes 40.
    incoming.gpu_id || ': ' || incoming.sample_count || ' samples, ' || previous.sample_count
        || ' before' as value
from incoming
inner join previous using (gpu_id)
where (select restatement_min_share from dq_params) > 0
  and incoming.sample_count < (select restatement_min_share from dq_params) * previous.sample_count
order by incoming.source_file, value

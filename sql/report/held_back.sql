-- Deliveries held back: rejected and still in quarantine (a release sets 'released', a load
-- 'loaded'). Grain: one row per delivery (the ledger's load_id), the latest first.
select
    load_id,
    kind,
    array_to_string(files, ', ') as files,
    source_uri,
    message as reason,
    finished_at as held_since
from loads
where status = 'quarantined'
order by finished_at desc, load_id

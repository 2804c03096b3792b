-- The night's load: the most recent run of the load stage, what it did with its deliveries
-- (its summary's counts). Grain: one row, or none before the first load.
select
    run_id,
    finished_at,
    status,
    summary
from pipeline_runs
where stage = 'load'
order by finished_at desc
limit 1

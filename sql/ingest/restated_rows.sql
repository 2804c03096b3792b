-- The rows delete_restated.sql would delete, counted (the lake mode: the load's Iceberg
-- commit replaces them; athanor.warehouse.lake.commit_load).
select count(*)
from billing_facts
where load_id <> $load_id
    and (billing_account_id, billing_period_start) in (
        select distinct billing_account_id, billing_period_start
        from billing_facts
        where load_id = $load_id
    )

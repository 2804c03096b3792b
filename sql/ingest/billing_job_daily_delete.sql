-- The partitions a load delivers lose their sums by job (as billing_daily_delete.sql).
delete from billing_job_daily
where (billing_account_id, billing_period_start) in (
    select distinct billing_account_id, billing_period_start
    from billing_facts
    where load_id = $load_id
)

-- The partitions a load delivers lose their hourly GPU sums (as billing_daily_delete.sql).
delete from billing_gpu_hourly
where (billing_account_id, billing_period_start) in (
    select distinct billing_account_id, billing_period_start
    from billing_facts
    where load_id = $load_id
)

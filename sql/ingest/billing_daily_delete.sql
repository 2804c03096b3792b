-- The partitions (billing account, billing period) a load delivers lose their daily sums: the
-- load's rows replace the partition whole (delete_restated.sql), so do its sums.
delete from billing_daily
where (billing_account_id, billing_period_start) in (
    select distinct billing_account_id, billing_period_start
    from billing_facts
    where load_id = $load_id
)

-- A restatement: providers deliver whole months again, so what earlier loads hold for the
-- (billing account, billing period) pairs this load delivers goes. Returns the rows deleted.
delete from billing_facts
where load_id <> $load_id
    and (billing_account_id, billing_period_start) in (
        select distinct billing_account_id, billing_period_start
        from billing_facts
        where load_id = $load_id
    )

-- Rule: an account's currency matches the one it was billed in before (latest other period).
with restated as (
    select distinct billing_account_id, billing_period_start from {batch}
),

-- billing_daily: the daily sums of the partitions loaded before this delivery (its own are
-- summed after the gate), so the rule reads days, not every line of the history.
history as (
    select billing_account_id, arg_max(billing_currency, billing_period_start) as previous_currency
    from billing_daily
    anti join restated using (billing_account_id, billing_period_start)
    group by all
)

select
    b.source_file,
    b.source_row,
    b.billing_currency || ' (account ' || b.billing_account_id || ' billed in ' || history.previous_currency || ' before)' as value
from {batch} as b
join history using (billing_account_id)
where b.billing_currency <> history.previous_currency
order by b.source_file, b.source_row

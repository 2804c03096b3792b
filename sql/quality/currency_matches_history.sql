-- Rule: an account's currency matches the one it was billed in before (latest other period).
with restated as (
    select distinct billing_account_id, billing_period_start from {batch}
),

history as (
    select billing_account_id, arg_max(billing_currency, billing_period_start) as previous_currency
    from billing_facts
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

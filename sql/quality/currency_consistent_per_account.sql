-- Rule: a billing account bills in one currency within a delivery. Rows in any other
-- currency than the account's most frequent one are the bad ones.
with counts as (
    select billing_account_id, billing_currency, count(*) as line_count
    from {batch}
    group by all
),

main as (
    select
        billing_account_id,
        first(billing_currency order by line_count desc, billing_currency) as main_currency,
        count(*) as currencies
    from counts
    group by all
    having count(*) > 1
)

select
    b.source_file,
    b.source_row,
    b.billing_currency || ' (account ' || b.billing_account_id || ' bills in ' || main.main_currency || ')' as value
from {batch} as b
join main using (billing_account_id)
where b.billing_currency <> main.main_currency
order by b.source_file, b.source_row

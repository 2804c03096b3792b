-- Rule: a restated billing month keeps at least as many rows as the load it replaces
-- (providers restate to add late usage; a month that shrinks usually lost a file).
with incoming as (
    select billing_account_id, billing_period_start, min(source_file) as source_file, count(*) as line_count
    from {batch}
    group by all
),

-- billing_daily: the partitions' line counts as loaded before this delivery (its own are
-- summed after the gate), so the rule reads days, not the lines it replaces.
previous as (
    select billing_account_id, billing_period_start, sum(line_items) as line_count
    from billing_daily
    semi join incoming using (billing_account_id, billing_period_start)
    group by all
)

select
    incoming.source_file,
    null::bigint as source_row,
    incoming.billing_account_id || ' ' || strftime(incoming.billing_period_start, '%Y-%m') || ': '
        || incoming.line_count || ' rows, ' || previous.line_count || ' before' as value
from incoming
join previous using (billing_account_id, billing_period_start)
where incoming.line_count < previous.line_count
order by incoming.source_file, value

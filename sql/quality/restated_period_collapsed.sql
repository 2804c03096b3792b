-- Rule: a restated billing month keeps at least a share (dq_params.restatement_min_share,
-- ATHANOR_RESTATEMENT_MIN_SHARE, default one half) of the rows and of the billed cost it
-- replaces. Providers restate to add late usage and corrections; a month that keeps less has
-- most likely lost files on the way (a partial export), and loading it would erase the rest.
-- An error: the delivery is held in quarantine until an operator releases it, and a released
-- delivery loads with this rule as a warning (see athanor.ingest.billing.ingest_billing).
-- One row per (account, month, currency); a share of 0 turns the rule off.
with incoming as (
    select
        billing_account_id,
        billing_period_start,
        billing_currency,
        min(source_file) as source_file,
        count(*) as line_count,
        sum(billed_cost) as billed
    from {batch}
    group by all
),

previous as (
    select
        billing_account_id,
        billing_period_start,
        billing_currency,
        count(*) as line_count,
        sum(billed_cost) as billed
    from billing_facts
    semi join incoming using (billing_account_id, billing_period_start)
    where load_id <> (select load_id from dq_params)
    group by all
)

select
    incoming.source_file,
    null::bigint as source_row,
    incoming.billing_account_id || ' ' || strftime(incoming.billing_period_start, '%Y-%m') || ': '
        || incoming.line_count || ' rows, ' || incoming.billing_currency || ' '
        || incoming.billed::decimal(38, 2)::varchar || ' billed, against ' || previous.line_count || ' rows, '
        || incoming.billing_currency || ' ' || previous.billed::decimal(38, 2)::varchar || ' before' as value
from incoming
join previous using (billing_account_id, billing_period_start, billing_currency)
where (select restatement_min_share from dq_params) > 0
  and (
      incoming.line_count < (select restatement_min_share from dq_params) * previous.line_count
      or (previous.billed > 0 and incoming.billed < (select restatement_min_share from dq_params) * previous.billed)
  )
order by incoming.source_file, value

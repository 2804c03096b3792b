-- What one load put in billing_facts, per file, currency, billing account and billing period:
-- the reconciliation figures, the period rule and the ledger's keys, in one read of its rows.
-- Fragments loaded_rows / loaded_total: the billing format's own expressions (count(*) / billed_cost
-- by default; GCP counts source rows, its credits being exploded into rows of their own).
select
    source_file,
    billing_currency,
    billing_account_id,
    strftime(billing_period_start, '%Y-%m')  as billing_period,
    {loaded_rows}                            as loaded_rows,
    sum({loaded_total})                      as loaded_total,
    sum(billed_cost)                         as billed_cost,
    count(*) filter (
        where charge_period_end < charge_period_start or billing_period_end < billing_period_start
    )                                        as bad_periods
from billing_facts
where load_id = $load_id
group by all

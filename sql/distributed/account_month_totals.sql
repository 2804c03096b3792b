-- DuckDB's side of athanor.warehouse.distributed.monthly_totals: per billing account, billing
-- period and currency, the lines and their billed and effective cost (DECIMAL, exact). The
-- distributed engine must give the same rows to the last decimal.
select
    billing_account_id,
    billing_period_start,
    billing_currency,
    count(*)            as lines,
    sum(billed_cost)    as billed_cost,
    sum(effective_cost) as effective_cost
from billing_facts
group by all
order by all

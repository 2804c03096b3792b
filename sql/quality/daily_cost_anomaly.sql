-- Rule: a day's BilledCost of usage lines per account and currency far above the days before
-- it: above median + k * 1.4826 * MAD (a robust z-score above k) of the previous N days, and
-- at least (1 + min_jump) x the median (a flat history has MAD 0) and min_increase above it
-- (cents are not news). Needs min_history days.
-- Like with like: only ChargeCategory 'Usage'. Purchases (upfront and monthly commitment fees),
-- tax and credits land on known days of the billing cycle (the 1st, the month's end); they are
-- expected, not anomalies, and would raise a warning every month.
-- Currencies are never summed together. One row per anomalous day; always a warning.
with params as (
    select * from dq_params
),

restated as (
    select distinct billing_account_id, billing_period_start from {batch}
),

usage_batch as (
    select * from {batch} where charge_category = 'Usage'
),

incoming_days as (
    select billing_account_id, billing_currency, charge_period_start::date as day, min(source_file) as source_file
    from usage_batch
    group by all
),

daily as (
    select billing_account_id, billing_currency, charge_period_start::date as day, sum(billed_cost) as cost
    from (
        select billing_account_id, billing_currency, charge_period_start, billed_cost from usage_batch
        union all
        select facts.billing_account_id, facts.billing_currency, facts.charge_period_start, facts.billed_cost
        from billing_facts as facts
        anti join restated using (billing_account_id, billing_period_start)
        where facts.charge_category = 'Usage'
          and facts.charge_period_start >= (select min(day) from incoming_days)
                                           - to_days((select anomaly_window_days from params))
          and facts.charge_period_start < (select max(day) from incoming_days) + interval 1 day
    )
    group by all
),

pairs as (
    select today.billing_account_id, today.billing_currency, today.day, today.cost, before.cost as prior_cost
    from daily as today
    semi join incoming_days using (billing_account_id, billing_currency, day)
    join daily as before
        on before.billing_account_id = today.billing_account_id
       and before.billing_currency = today.billing_currency
       and before.day >= today.day - to_days((select anomaly_window_days from params))
       and before.day < today.day
),

medians as (
    select
        billing_account_id, billing_currency, day,
        any_value(cost) as cost,
        count(*) as history_days,
        median(prior_cost) as median_cost
    from pairs
    group by all
),

windowed as (
    select medians.*, median(abs(pairs.prior_cost - medians.median_cost)) as mad_cost
    from medians
    join pairs using (billing_account_id, billing_currency, day)
    group by all
)

select
    incoming_days.source_file,
    null::bigint as source_row,
    strftime(w.day, '%Y-%m-%d') || ' ' || w.billing_account_id || ': ' || w.billing_currency || ' '
        || w.cost::decimal(18, 2) || ' vs median ' || w.median_cost::decimal(18, 2) as value
from windowed as w
join incoming_days using (billing_account_id, billing_currency, day)
where w.history_days >= (select anomaly_min_history_days from params)
  and w.cost > w.median_cost + (select anomaly_k from params) * 1.4826 * w.mad_cost
  and w.cost > w.median_cost * (1 + (select anomaly_min_jump from params))
  and w.cost > w.median_cost + (select anomaly_min_increase from params)
order by w.day, w.billing_account_id

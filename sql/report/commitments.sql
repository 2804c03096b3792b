-- Grain: one row per commitment (reservation or savings plan) and billing currency seen in
-- [$start, $end): its used and unused amortised cost and utilisation.
select
    commitment_discount_id,
    billing_currency as currency,
    any_value(commitment_discount_name) as commitment_discount_name,
    any_value(commitment_discount_category) as commitment_discount_category,
    any_value(commitment_discount_type) as commitment_discount_type,
    cast(coalesce(sum(effective_cost) filter (where commitment_discount_status = 'Used'), 0) as double) as used_cost,
    cast(coalesce(sum(effective_cost) filter (where commitment_discount_status = 'Unused'), 0) as double) as unused_cost
from billing_facts
where commitment_discount_id is not null
  and charge_period_start >= $start
  and charge_period_start < $end
group by commitment_discount_id, billing_currency
order by currency, used_cost + unused_cost desc, commitment_discount_id

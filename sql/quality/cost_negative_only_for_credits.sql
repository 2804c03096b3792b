-- Rule: a cost is negative only on a credit, an adjustment or a correction. Two provider
-- habits are not errors: a usage reversal negates quantity and cost together (Azure), and a
-- commitment negation line cancels covered usage (CUR SavingsPlanNegation).
select source_file, source_row, least(billed_cost, effective_cost) as value
from {batch}
where (billed_cost < 0 or effective_cost < 0)
  and charge_category not in ('Credit', 'Adjustment')
  and coalesce(charge_class, '') <> 'Correction'
  and not coalesce(consumed_quantity < 0, false)
  and commitment_discount_id is null
order by source_file, source_row

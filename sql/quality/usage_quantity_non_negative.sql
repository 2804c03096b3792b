-- Rule: usage quantities are >= 0 except on credits, adjustments and corrections.
select source_file, source_row, consumed_quantity as value
from {batch}
where consumed_quantity < 0
  and charge_category not in ('Credit', 'Adjustment')
  and coalesce(charge_class, '') <> 'Correction'
order by source_file, source_row

-- Rule: every charge period lies inside its billing period [start, end).
select source_file, source_row, charge_period_start as value
from {batch}
where charge_period_start < billing_period_start
   or charge_period_start >= billing_period_end
   or charge_period_end > billing_period_end
order by source_file, source_row

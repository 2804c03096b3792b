-- Rule: no charge falls after its billing period: a charge period that starts at or after the
-- billing period's end, or ends after it, is billed in the wrong period.
-- (Charges that start before the period are late-billed usage: see charge_period_billed_late.)
select source_file, source_row, charge_period_start as value
from {batch}
where charge_period_start >= billing_period_end
   or charge_period_end > billing_period_end
order by source_file, source_row

-- Rule: charges that started before their billing period (usage billed late). Real exports do
-- this (the public FOCUS sample bills an Oracle charge of 2024-09-30 22:00 in October), so it
-- warns: the charge is loaded and reported, the analyst decides.
select source_file, source_row, charge_period_start as value
from {batch}
where charge_period_start < billing_period_start
order by source_file, source_row

-- A batch validated after its load: the file figures are in the reconciliations ledger.
insert into dq_file_figures by name
select source_file, billing_currency, file_rows, file_billed_cost
from reconciliations
where load_id = $load_id

-- Rule: BillingCurrency is an ISO 4217 code (three upper-case letters). One row per bad line.
select source_file, source_row, billing_currency as value
from {batch}
where not regexp_full_match(billing_currency, '[A-Z][A-Z][A-Z]')
order by source_file, source_row

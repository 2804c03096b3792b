-- Rule: one row per line item across all files of the delivery.
-- Line item key: account, sub-account, billing period, charge period, category, class,
-- description, resource, SKU and price, pricing category and unit, commitment, service,
-- region and instance type (FOCUS has no line-item id; these together identify a charge).
with keyed as (
    select
        source_file,
        source_row,
        hash(
            billing_account_id, sub_account_id, billing_period_start, charge_period_start, charge_period_end,
            charge_category, charge_class, charge_description, resource_id, sku_id, sku_price_id,
            pricing_category, pricing_unit, commitment_discount_id, service_name, region_id, x_instance_type
        ) as line_item_key
    from {batch}
),

repeated as (
    select line_item_key from keyed group by line_item_key having count(*) > 1
),

ranked as (
    select
        keyed.*,
        first_value(source_file) over same_key as first_file,
        first_value(source_row) over same_key as first_row,
        row_number() over same_key as copy
    from keyed
    semi join repeated using (line_item_key)
    window same_key as (partition by line_item_key order by source_file, source_row)
)

select source_file, source_row, 'same line item as ' || first_file || ' row ' || first_row as value
from ranked
where copy > 1
order by source_file, source_row

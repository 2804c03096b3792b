-- Rule: one row per line item across all files of the delivery.
-- FOCUS has no line-item id, and real exports (the public AWS CUR sample, for one) hold many
-- rows that agree on account, period, resource and SKU but differ in usage or cost. So a
-- duplicate is a row equal to another in every column but its lineage: a row delivered twice.
with keyed as (
    select
        source_file,
        source_row,
        hash(*columns(* exclude (load_id, source_file, source_row, source_format))) as line_item_key
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

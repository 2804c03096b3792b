-- Rule: a file whose rows are exactly those of a file already loaded under another name
-- (same row count, cost total and order-independent row fingerprint).
with incoming as (
    select
        source_file,
        count(*) as line_count,
        sum(billed_cost) as cost,
        bit_xor(hash(
            billing_account_id, sub_account_id, billing_period_start, charge_period_start, charge_period_end,
            charge_category, charge_class, charge_description, resource_id, sku_id, sku_price_id,
            pricing_category, pricing_unit, commitment_discount_id, service_name, region_id, x_instance_type,
            billing_currency, billed_cost, effective_cost, consumed_quantity, list_cost, tags
        )) as fingerprint
    from {batch}
    group by all
),

loaded as (
    select
        source_file,
        load_id,
        count(*) as line_count,
        sum(billed_cost) as cost,
        bit_xor(hash(
            billing_account_id, sub_account_id, billing_period_start, charge_period_start, charge_period_end,
            charge_category, charge_class, charge_description, resource_id, sku_id, sku_price_id,
            pricing_category, pricing_unit, commitment_discount_id, service_name, region_id, x_instance_type,
            billing_currency, billed_cost, effective_cost, consumed_quantity, list_cost, tags
        )) as fingerprint
    from billing_facts
    semi join (select distinct billing_account_id, billing_period_start from {batch})
        using (billing_account_id, billing_period_start)
    where load_id <> (select load_id from dq_params)
    group by all
)

select
    incoming.source_file,
    null::bigint as source_row,
    'same content as ' || loaded.source_file || ' (load ' || loaded.load_id || ')' as value
from incoming
join loaded using (line_count, cost, fingerprint)
where incoming.source_file <> loaded.source_file
order by incoming.source_file, value

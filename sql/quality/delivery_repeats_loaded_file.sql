-- Rule: a file whose rows are exactly those of a file already loaded under another name
-- (same row count, cost total and order-independent row fingerprint). The fingerprint hashes
-- every row, so it is computed only for the files whose row count and cost already match a
-- file of the other side: a restatement (the month again, some lines more or fewer) and a
-- first delivery hash nothing.
with partitions as (
    select distinct billing_account_id, billing_period_start from {batch}
),

incoming_totals as (
    select source_file, count(*) as line_count, sum(billed_cost) as cost
    from {batch}
    group by all
),

loaded_totals as (
    select source_file, load_id, count(*) as line_count, sum(billed_cost) as cost
    from billing_facts
    semi join partitions using (billing_account_id, billing_period_start)
    where load_id <> (select load_id from dq_params)
    group by all
),

pairs as (
    select
        incoming_totals.source_file as incoming_file,
        loaded_totals.source_file as loaded_file,
        loaded_totals.load_id
    from incoming_totals
    join loaded_totals using (line_count, cost)
    where incoming_totals.source_file <> loaded_totals.source_file
),

incoming as (
    select
        source_file,
        bit_xor(hash(
            billing_account_id, sub_account_id, billing_period_start, charge_period_start, charge_period_end,
            charge_category, charge_class, charge_description, resource_id, sku_id, sku_price_id,
            pricing_category, pricing_unit, commitment_discount_id, service_name, region_id, x_instance_type,
            billing_currency, billed_cost, effective_cost, consumed_quantity, list_cost, tags
        )) as fingerprint
    from {batch}
    semi join (select incoming_file as source_file from pairs) using (source_file)
    group by all
),

loaded as (
    select
        source_file,
        load_id,
        bit_xor(hash(
            billing_account_id, sub_account_id, billing_period_start, charge_period_start, charge_period_end,
            charge_category, charge_class, charge_description, resource_id, sku_id, sku_price_id,
            pricing_category, pricing_unit, commitment_discount_id, service_name, region_id, x_instance_type,
            billing_currency, billed_cost, effective_cost, consumed_quantity, list_cost, tags
        )) as fingerprint
    from billing_facts
    semi join partitions using (billing_account_id, billing_period_start)
    semi join (select loaded_file as source_file, load_id from pairs) using (source_file, load_id)
    group by all
)

select
    pairs.incoming_file as source_file,
    null::bigint as source_row,
    'same content as ' || pairs.loaded_file || ' (load ' || pairs.load_id || ')' as value
from pairs
join incoming on incoming.source_file = pairs.incoming_file
join loaded on loaded.source_file = pairs.loaded_file and loaded.load_id = pairs.load_id
where incoming.fingerprint = loaded.fingerprint
order by source_file, value

-- Staging: an AWS CUR 2.0 or legacy CUR file (view `src`, under CUR 2.0 names) -> rows shaped like billing_facts.
-- Grain: one row per CUR line item. `src` already gives money as DECIMAL(38,12) and timestamps
-- as UTC TIMESTAMP (typed_source in sources/cur2.py); the casts left below are no-ops on those.
-- Cost rules follow the FinOps Foundation's CUR -> FOCUS conversion rules: BilledCost is the net
-- unblended cost where present; covered usage at its amortised (effective) cost, commitment fees
-- at their unused part, negations and upfront fees at 0. Deviations, for FOCUS 1.0+: Credit lines
-- stay ChargeCategory 'Credit' (the rules predate it and say 'Adjustment'); ChargeFrequency comes
-- from the line item type (the rules' bill-type mapping would mark usage 'Recurring').
with source as (
    select
        *,
        product                                                             as product_map,
        coalesce(resource_tags, map())                                      as tag_map,
        coalesce(cast(line_item_net_unblended_cost as decimal(38, 12)), cast(line_item_unblended_cost as decimal(38, 12))) as unblended_cost,
        coalesce(nullif(reservation_reservation_a_r_n, ''), nullif(savings_plan_savings_plan_a_r_n, '')) as commitment_arn,
        -- Instance-hour usage types: 'USE1-BoxUsage:p5.48xlarge', 'USE1-SpotUsage:p4d.24xlarge', 'HeavyUsage:...';
        -- SageMaker's name the ml.* instance: 'USE1-Train:ml.p4d.24xlarge', 'USE1-Host:ml.g5.xlarge'
        -- (its volumes are 'USE1-Train:VolumeUsage.gp2', not instance hours).
        coalesce(
            line_item_usage_type like '%BoxUsage%:%' or line_item_usage_type like '%SpotUsage%:%'
            or line_item_usage_type like '%HeavyUsage%:%' or line_item_usage_type like '%DedicatedUsage%:%'
            or line_item_usage_type like '%:ml.%',
            false
        )                                                                   as is_instance_usage
    from src
),

renamed as (
    select
        __row                                                               as source_row,
        'AWS'                                                               as provider_name,
        coalesce(line_item_legal_entity, 'Amazon Web Services, Inc.')       as publisher_name,
        coalesce(bill_invoicing_entity, 'Amazon Web Services, Inc.')        as invoice_issuer_name,
        bill_payer_account_id                                               as billing_account_id,
        bill_payer_account_name                                             as billing_account_name,
        line_item_usage_account_id                                          as sub_account_id,
        line_item_usage_account_name                                        as sub_account_name,
        upper(line_item_currency_code)                                      as billing_currency,
        bill_billing_period_start_date                                      as billing_period_start,
        bill_billing_period_end_date                                        as billing_period_end,
        line_item_usage_start_date                                          as charge_period_start,
        line_item_usage_end_date                                            as charge_period_end,
        case line_item_line_item_type
            when 'Tax' then 'Tax'
            when 'Fee' then 'Purchase'
            when 'RIFee' then 'Purchase'
            when 'SavingsPlanUpfrontFee' then 'Purchase'
            when 'SavingsPlanRecurringFee' then 'Purchase'
            when 'Credit' then 'Credit'
            when 'Refund' then 'Adjustment'
            else 'Usage'
        end                                                                 as charge_category,
        case when line_item_line_item_type = 'Refund' then 'Correction' end as charge_class,
        line_item_line_item_description                                     as charge_description,
        case
            when line_item_line_item_type in ('RIFee', 'SavingsPlanRecurringFee') then 'Recurring'
            when line_item_line_item_type in ('Fee', 'SavingsPlanUpfrontFee', 'Tax', 'Credit', 'Refund') then 'One-Time'
            else 'Usage-Based'
        end                                                                 as charge_frequency,
        case
            when line_item_usage_type like '%SpotUsage%' then 'Dynamic'
            when line_item_line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Committed'
            when line_item_line_item_type = 'Usage' then 'Standard'
        end                                                                 as pricing_category,
        coalesce(cast(reservation_total_reserved_units as decimal(38, 12)),
                 cast(line_item_usage_amount as decimal(38, 12)))           as pricing_quantity,
        pricing_unit                                                        as pricing_unit,
        cast(line_item_usage_amount as decimal(38, 12))                     as consumed_quantity,
        pricing_unit                                                        as consumed_unit,
        unblended_cost                                                      as billed_cost,
        case line_item_line_item_type
            when 'SavingsPlanCoveredUsage' then cast(savings_plan_savings_plan_effective_cost as decimal(38, 12))
            when 'SavingsPlanRecurringFee' then cast(savings_plan_total_commitment_to_date as decimal(38, 12))
                                              - cast(savings_plan_used_commitment as decimal(38, 12))
            when 'SavingsPlanNegation' then 0
            when 'SavingsPlanUpfrontFee' then 0
            when 'DiscountedUsage' then cast(reservation_effective_cost as decimal(38, 12))
            when 'RIFee' then coalesce(cast(reservation_unused_amortized_upfront_fee_for_billing_period as decimal(38, 12)), 0)
                            + coalesce(cast(reservation_unused_recurring_fee as decimal(38, 12)), 0)
            else case when line_item_line_item_type = 'Fee' and reservation_reservation_a_r_n <> '' then 0 else unblended_cost end
        end                                                                 as effective_cost,
        coalesce(cast(pricing_public_on_demand_rate as decimal(38, 12)) * cast(line_item_usage_amount as decimal(38, 12)),
                 cast(pricing_public_on_demand_cost as decimal(38, 12)))    as list_cost,
        cast(null as decimal(38, 12))                                       as contracted_cost,
        cast(pricing_public_on_demand_rate as decimal(38, 12))              as list_unit_price,
        cast(null as decimal(38, 12))                                       as contracted_unit_price,
        commitment_arn                                                      as commitment_discount_id,
        commitment_arn                                                      as commitment_discount_name,
        case
            when nullif(reservation_reservation_a_r_n, '') is not null then 'Usage'
            when nullif(savings_plan_savings_plan_a_r_n, '') is not null then 'Spend'
        end                                                                 as commitment_discount_category,
        case
            when nullif(reservation_reservation_a_r_n, '') is not null then 'Reserved Instances (RI)'
            when nullif(savings_plan_savings_plan_a_r_n, '') is not null then 'Savings Plan'
        end                                                                 as commitment_discount_type,
        case
            when line_item_line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Used'
            when line_item_line_item_type in ('RIFee', 'SavingsPlanRecurringFee') then 'Unused'
        end                                                                 as commitment_discount_status,
        case when line_item_line_item_type = 'DiscountedUsage'
            then cast(line_item_usage_amount as decimal(38, 12)) end         as commitment_discount_quantity,
        case when line_item_line_item_type = 'DiscountedUsage' then 'Hours' end as commitment_discount_unit,
        coalesce(nullif(product_region_code, ''), nullif(product_region, ''), product_map['region'], product_map['region_code']) as region_id,
        coalesce(nullif(product_location, ''), product_map['location'])     as region_name,
        nullif(line_item_availability_zone, '')                             as availability_zone,
        nullif(line_item_resource_id, '')                                   as resource_id,
        cast(null as varchar)                                               as resource_name,
        coalesce(product_product_family, product_map['product_family'])     as resource_type,
        -- Service name and category come from ref_service_names in `final`; EC2's volumes and
        -- snapshots and its data transfer are Storage and Networking, as FOCUS exports say.
        case
            when coalesce(product_product_family, product_map['product_family']) in ('Storage', 'Storage Snapshot', 'System Operation', 'Provisioned Throughput')
                then 'Storage'
            when coalesce(product_product_family, product_map['product_family']) = 'Data Transfer' then 'Networking'
        end                                                                 as family_category,
        coalesce(line_item_product_code, product_servicecode)               as service_name,
        nullif(product_map['product_name'], '')                             as product_name,
        coalesce(nullif(product_sku, ''), product_map['sku'])               as sku_id,
        coalesce(pricing_rate_code, pricing_rate_id)                        as sku_price_id,
        -- Keys as analysts know them: `src` has cut CUR's user_ / user: prefixes (key_prefixes).
        tag_map                                                             as tags,
        -- Spot lines may leave the instance-type column empty: 'USE1-SpotUsage:p4d.24xlarge'.
        coalesce(
            nullif(product_instance_type, ''),
            nullif(product_map['instance_type'], ''),
            -- LIKE rather than a regular expression: this runs on every line of a 10M-row month.
            case
                when is_instance_usage and split_part(line_item_usage_type, ':', -1) like '%_._%'
                    then split_part(line_item_usage_type, ':', -1)
            end
        )                                                                   as x_instance_type,
        line_item_usage_type,
        line_item_line_item_type,
        is_instance_usage,
        line_item_usage_type                                                as x_usage_type,
        line_item_operation                                                 as x_operation,
        identity_line_item_id                                               as x_line_item_id,
        cast(try_cast(coalesce(nullif(cast(reservation_end_time as varchar), ''),
                               nullif(cast(savings_plan_end_time as varchar), '')) as timestamptz) as timestamp)
                                                                            as x_commitment_end,
        -- CUR's other columns are AWS's own schema, not extensions: not kept (see sources/cur2.py).
        null::map(varchar, varchar)                                         as x_provider_columns
    from source
),

final as (
    select
        $load_id                                                            as load_id,
        $source_file                                                        as source_file,
        renamed.source_row,
        $source_format                                                      as source_format,
        renamed.* exclude (source_row, x_instance_type, x_provider_columns, x_usage_type, x_operation, x_line_item_id, x_commitment_end, line_item_usage_type, line_item_line_item_type, is_instance_usage,
                           service_name, product_name, family_category, pricing_unit, consumed_unit),
        -- One spelling per service and unit, whatever the export wrote (athanor.reference.services):
        -- CUR names a service by its product code, FOCUS by its product name.
        coalesce(svc.service_name, renamed.product_name, renamed.service_name) as service_name,
        coalesce(renamed.family_category, svc.service_category, 'Other')   as service_category,
        coalesce(pu.unit, renamed.pricing_unit)                             as pricing_unit,
        coalesce(cu.unit, renamed.consumed_unit)                            as consumed_unit,
        renamed.x_instance_type,
        ref.instance_family                                                 as x_instance_family,
        ref.gpu_count                                                       as x_gpu_count,
        ref.gpu_model                                                       as x_gpu_model,
        case
            when renamed.pricing_category = 'Dynamic' then 'spot'
            when renamed.line_item_line_item_type = 'DiscountedUsage' then 'reserved'
            when renamed.line_item_line_item_type = 'SavingsPlanCoveredUsage' then 'savings_plan'
            when renamed.line_item_line_item_type = 'Usage' then 'on_demand'
            else 'other'
        end                                                                 as x_pricing_model,
        case
            when renamed.x_instance_type is not null
                 and renamed.is_instance_usage
                 and renamed.line_item_line_item_type in ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage')
                then renamed.consumed_quantity
        end                                                                 as x_usage_hours,
        renamed.x_usage_type,
        renamed.x_operation,
        renamed.x_line_item_id,
        renamed.x_commitment_end,
        renamed.x_provider_columns
    from renamed
    left join ref_instance_types as ref on ref.instance_type = renamed.x_instance_type
    left join ref_service_names as svc on svc.source_name = renamed.service_name
    left join ref_units as pu on pu.source_unit = lower(trim(renamed.pricing_unit))
    left join ref_units as cu on cu.source_unit = lower(trim(renamed.consumed_unit))
)

select * from final

-- Staging: a FOCUS 1.0-1.2 file (view `src`) -> rows shaped like billing_facts.
-- FOCUS is already the target shape: this query normalises enum case (real exports write
-- both 'Usage-Based' and 'Usage-based') and derives the x_ columns. `src` already gives
-- money as DECIMAL(38,12) and timestamps as UTC TIMESTAMP (typed_source in sources/focus.py).
with source as (
    select * from src
),

typed as (
    select
        __row                                                          as source_row,
        ProviderName                                                   as provider_name,
        PublisherName                                                  as publisher_name,
        InvoiceIssuerName                                              as invoice_issuer_name,
        BillingAccountId                                               as billing_account_id,
        BillingAccountName                                             as billing_account_name,
        SubAccountId                                                   as sub_account_id,
        SubAccountName                                                 as sub_account_name,
        upper(BillingCurrency)                                         as billing_currency,
        BillingPeriodStart                                             as billing_period_start,
        BillingPeriodEnd                                               as billing_period_end,
        ChargePeriodStart                                              as charge_period_start,
        ChargePeriodEnd                                                as charge_period_end,
        case lower(ChargeCategory)
            when 'usage' then 'Usage' when 'purchase' then 'Purchase' when 'tax' then 'Tax'
            when 'credit' then 'Credit' when 'adjustment' then 'Adjustment' else ChargeCategory
        end                                                            as charge_category,
        case lower(ChargeClass) when 'correction' then 'Correction' else ChargeClass end as charge_class,
        ChargeDescription                                              as charge_description,
        case lower(ChargeFrequency)
            when 'usage-based' then 'Usage-Based' when 'one-time' then 'One-Time'
            when 'recurring' then 'Recurring' else ChargeFrequency
        end                                                            as charge_frequency,
        case lower(PricingCategory)
            when 'standard' then 'Standard' when 'dynamic' then 'Dynamic'
            when 'committed' then 'Committed' when 'other' then 'Other' else PricingCategory
        end                                                            as pricing_category,
        cast(PricingQuantity as decimal(38, 12))                       as pricing_quantity,
        PricingUnit                                                    as pricing_unit,
        cast(ConsumedQuantity as decimal(38, 12))                      as consumed_quantity,
        ConsumedUnit                                                   as consumed_unit,
        cast(BilledCost as decimal(38, 12))                            as billed_cost,
        cast(EffectiveCost as decimal(38, 12))                         as effective_cost,
        cast(ListCost as decimal(38, 12))                              as list_cost,
        cast(ContractedCost as decimal(38, 12))                        as contracted_cost,
        cast(ListUnitPrice as decimal(38, 12))                         as list_unit_price,
        cast(ContractedUnitPrice as decimal(38, 12))                   as contracted_unit_price,
        CommitmentDiscountId                                           as commitment_discount_id,
        CommitmentDiscountName                                         as commitment_discount_name,
        case lower(CommitmentDiscountCategory)
            when 'spend' then 'Spend' when 'usage' then 'Usage' else CommitmentDiscountCategory
        end                                                            as commitment_discount_category,
        CommitmentDiscountType                                         as commitment_discount_type,
        case lower(CommitmentDiscountStatus)
            when 'used' then 'Used' when 'unused' then 'Unused' else CommitmentDiscountStatus
        end                                                            as commitment_discount_status,
        cast(CommitmentDiscountQuantity as decimal(38, 12))            as commitment_discount_quantity,
        CommitmentDiscountUnit                                         as commitment_discount_unit,
        RegionId                                                       as region_id,
        RegionName                                                     as region_name,
        AvailabilityZone                                               as availability_zone,
        ResourceId                                                     as resource_id,
        ResourceName                                                   as resource_name,
        ResourceType                                                   as resource_type,
        ServiceCategory                                                as service_category,
        ServiceName                                                    as service_name,
        SkuId                                                          as sku_id,
        SkuPriceId                                                     as sku_price_id,
        coalesce(Tags, map())                                          as tags,
        -- AWS writes spot usage as e.g. 'USE1-SpotUsage:p4d.24xlarge' and may leave the
        -- instance-type column empty for it. Microsoft's FOCUS export names a VM's size in its
        -- x_SkuDetails JSON (the cost details' AdditionalInfo), e.g. ServiceType Standard_ND96asr_v4;
        -- kept among the provider's columns, read from there (text that is no JSON: no type).
        coalesce(
            nullif(x_InstanceType, ''),
            nullif(regexp_extract(x_UsageType, ':([a-z0-9-]+\.[a-z0-9-]+)$', 1), ''),
            nullif(try_cast(map_extract_value(__extras, 'x_SkuDetails') as json) ->> 'ServiceType', '')
        )                                                              as x_instance_type,
        x_UsageType                                                    as x_usage_type,
        x_Operation                                                    as x_operation,
        cast(null as varchar)                                          as x_line_item_id,
        -- Not a FOCUS column: exporters that know the end date add it. A bad value is not
        -- worth failing a month's load over; it reads as unknown. Text in a CSV, a timestamp in
        -- a typed Parquet: comparing a timestamp with '' would fail the load, so read it as text.
        cast(try_cast(nullif(cast(x_CommitmentDiscountEnd as varchar), '') as timestamptz) as timestamp)
                                                                       as x_commitment_end,
        __extras                                                       as x_provider_columns,
        -- FOCUS 1.2 columns kept for analysts (null in a 1.0 / 1.1 file).
        InvoiceId                                                      as invoice_id,
        BillingAccountType                                             as billing_account_type,
        SubAccountType                                                 as sub_account_type,
        ServiceSubcategory                                             as service_subcategory,
        SkuMeter                                                       as sku_meter,
        SkuPriceDetails                                                as sku_price_details,
        upper(PricingCurrency)                                         as pricing_currency,
        PricingCurrencyContractedUnitPrice                             as pricing_currency_contracted_unit_price,
        PricingCurrencyEffectiveCost                                   as pricing_currency_effective_cost,
        PricingCurrencyListUnitPrice                                   as pricing_currency_list_unit_price,
        CapacityReservationId                                          as capacity_reservation_id,
        case lower(CapacityReservationStatus)
            when 'used' then 'Used' when 'unused' then 'Unused' else CapacityReservationStatus
        end                                                            as capacity_reservation_status
    from source
),

final as (
    select
        $load_id                                                       as load_id,
        $source_file                                                   as source_file,
        typed.source_row,
        $source_format                                                as source_format,
        typed.* exclude (source_row, x_instance_type, x_usage_type, x_operation, x_line_item_id, x_commitment_end, x_provider_columns,
                         service_name, pricing_unit, consumed_unit),
        -- One spelling per service and unit, whatever the exporter wrote (athanor.reference.services).
        coalesce(svc.service_name, typed.service_name)                 as service_name,
        coalesce(pu.unit, typed.pricing_unit)                          as pricing_unit,
        coalesce(cu.unit, typed.consumed_unit)                         as consumed_unit,
        typed.x_instance_type,
        ref.instance_family                                            as x_instance_family,
        ref.gpu_count                                                  as x_gpu_count,
        ref.gpu_model                                                  as x_gpu_model,
        case
            when typed.pricing_category = 'Dynamic' then 'spot'
            when typed.pricing_category = 'Committed' and typed.commitment_discount_category = 'Usage' then 'reserved'
            when typed.pricing_category = 'Committed' and typed.commitment_discount_category = 'Spend' then 'savings_plan'
            when typed.pricing_category = 'Committed' then 'committed'
            when typed.pricing_category = 'Standard' then 'on_demand'
            else 'other'
        end                                                            as x_pricing_model,
        case
            when typed.x_instance_type is not null and lower(typed.consumed_unit) in ('hours', 'hour', 'hrs')
                then typed.consumed_quantity
        end                                                            as x_usage_hours,
        typed.x_usage_type,
        typed.x_operation,
        typed.x_line_item_id,
        typed.x_commitment_end,
        typed.x_provider_columns
    from typed
    left join ref_instance_types as ref on ref.instance_type = typed.x_instance_type
    left join ref_service_names as svc on svc.source_name = typed.service_name
    left join ref_units as pu on pu.source_unit = lower(trim(typed.pricing_unit))
    left join ref_units as cu on cu.source_unit = lower(trim(typed.consumed_unit))
)

select * from final

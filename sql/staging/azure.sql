-- Staging: an Azure cost details export, EA or MCA, actual or amortized (view `src`) -> rows shaped like billing_facts.
-- Grain: one row per meter per resource per day (an Azure usage record).
-- Mapping per the FinOps Foundation's Azure -> FOCUS conversion rules, with these choices:
--   * actual and amortized files are told apart row by row, not per file: usage covered by a
--     reservation or savings plan bills 0 (it was prepaid) and costs its amortised share
--     (EffectiveCost = Cost, which is 0 in the actual dataset and the prorated share in the
--     amortized one); unused commitment rows (amortized only) bill 0 and cost their waste;
--     commitment purchases (actual only) bill their price and cost 0, as FOCUS amortises them.
--   * PricingCategory uses FOCUS values: OnDemand -> Standard, Spot -> Dynamic, commitments -> Committed.
--   * ChargePeriod is the usage day [Date, Date + 1 day); BillingPeriodEnd is exclusive (Azure's is the last day).
--   * ConsumedQuantity is in whole units: '10 Hours' with Quantity 3 is 30 Hours.
--   * ListCost = PayG price x quantity, ContractedCost = unit price x quantity (not in the rules).
with source as (
    select
        *,
        cast(CostInBillingCurrency as decimal(38, 12))                               as cost_dec,
        cast(Quantity as decimal(38, 12))                                            as quantity_dec,
        coalesce(nullif(BenefitId, ''), nullif(ReservationId, ''))                   as commitment_id,
        coalesce(nullif(BenefitName, ''), nullif(ReservationName, ''))               as commitment_name,
        -- EA writes tags without the enclosing braces: "env": "prod","org": "trey".
        case when trim(Tags) like '{%' then trim(Tags) when nullif(trim(Tags), '') is not null then '{' || Tags || '}' end as tags_json,
        try_cast(nullif(AdditionalInfo, '') as json)                                 as additional,
        -- '10 Hours' is a block of ten hours; '10K' and '1/Month' are unit names, not blocks.
        coalesce(try_cast(regexp_extract(UnitOfMeasure, '^\s*([0-9]+)\s+\S', 1) as integer), 1) as unit_block
    from src
),

renamed as (
    select
        __row                                                                        as source_row,
        'Microsoft'                                                                  as provider_name,
        coalesce(nullif(PublisherName, ''), 'Microsoft')                             as publisher_name,
        'Microsoft'                                                                  as invoice_issuer_name,
        BillingAccountId                                                             as billing_account_id,
        BillingAccountName                                                           as billing_account_name,
        SubscriptionId                                                               as sub_account_id,
        SubscriptionName                                                             as sub_account_name,
        upper(BillingCurrencyCode)                                                   as billing_currency,
        cast(coalesce(try_strptime(BillingPeriodStartDate::varchar, '%m/%d/%Y')::timestamptz,
                      cast(BillingPeriodStartDate::varchar as timestamptz)) as timestamp) as billing_period_start,
        cast(coalesce(try_strptime(BillingPeriodEndDate::varchar, '%m/%d/%Y')::timestamptz,
                      cast(BillingPeriodEndDate::varchar as timestamptz)) as timestamp) + interval 1 day as billing_period_end,
        cast(coalesce(try_strptime(Date::varchar, '%m/%d/%Y')::timestamptz,
                      cast(Date::varchar as timestamptz)) as timestamp)              as charge_period_start,
        cast(coalesce(try_strptime(Date::varchar, '%m/%d/%Y')::timestamptz,
                      cast(Date::varchar as timestamptz)) as timestamp) + interval 1 day as charge_period_end,
        case lower(ChargeType)
            when 'usage' then 'Usage'
            when 'purchase' then 'Purchase'
            when 'tax' then 'Tax'
            when 'unusedreservation' then 'Usage'
            when 'unusedsavingsplan' then 'Usage'
            when 'refund' then 'Credit'
            else 'Adjustment'
        end                                                                          as charge_category,
        case when lower(ChargeType) = 'refund' then 'Correction' end                 as charge_class,
        ProductName                                                                  as charge_description,
        case lower(Frequency)
            when 'onetime' then 'One-Time'
            when 'recurring' then 'Recurring'
            when 'usagebased' then 'Usage-Based'
        end                                                                          as charge_frequency,
        case
            when lower(ChargeType) = 'tax' then null
            when lower(PricingModel) = 'spot' then 'Dynamic'
            when lower(PricingModel) in ('reservation', 'savingsplan', 'savings plan') then 'Committed'
            when lower(PricingModel) = 'ondemand' then 'Standard'
            else 'Other'
        end                                                                          as pricing_category,
        quantity_dec                                                                 as pricing_quantity,
        UnitOfMeasure                                                                as pricing_unit,
        quantity_dec * unit_block                                                        as consumed_quantity,
        nullif(trim(regexp_replace(UnitOfMeasure, '^\s*[0-9]+\s+(\S)', '\1')), '') as consumed_unit,
        case
            when lower(ChargeType) in ('unusedreservation', 'unusedsavingsplan') then 0
            when lower(ChargeType) = 'usage' and lower(PricingModel) in ('reservation', 'savingsplan', 'savings plan') then 0
            else cost_dec
        end                                                                          as billed_cost,
        case
            when lower(ChargeType) = 'purchase' and commitment_id is not null
                 and lower(PricingModel) in ('reservation', 'savingsplan', 'savings plan') then 0
            else cost_dec
        end                                                                          as effective_cost,
        coalesce(cast(PaygCostInBillingCurrency as decimal(38, 12)),
                 cast(PayGPrice as decimal(38, 12)) * quantity_dec)                      as list_cost,
        cast(UnitPrice as decimal(38, 12))  * quantity_dec                             as contracted_cost,
        cast(PayGPrice as decimal(38, 12))                                           as list_unit_price,
        cast(UnitPrice as decimal(38, 12))                                           as contracted_unit_price,
        commitment_id                                                                as commitment_discount_id,
        commitment_name                                                              as commitment_discount_name,
        case
            when lower(commitment_id) like '%/microsoft.billingbenefits/%' or lower(PricingModel) in ('savingsplan', 'savings plan') then 'Spend'
            when commitment_id is not null then 'Usage'
        end                                                                          as commitment_discount_category,
        case
            when lower(commitment_id) like '%/microsoft.billingbenefits/%' or lower(PricingModel) in ('savingsplan', 'savings plan') then 'Savings Plan'
            when commitment_id is not null then 'Reservation'
        end                                                                          as commitment_discount_type,
        case
            when lower(ChargeType) in ('unusedreservation', 'unusedsavingsplan') then 'Unused'
            when lower(ChargeType) = 'usage' and lower(PricingModel) in ('reservation', 'savingsplan', 'savings plan') then 'Used'
        end                                                                          as commitment_discount_status,
        cast(null as decimal(38, 12))                                                as commitment_discount_quantity,
        cast(null as varchar)                                                        as commitment_discount_unit,
        lower(nullif(ResourceLocation, ''))                                          as region_id,
        nullif(MeterRegion, '')                                                      as region_name,
        nullif(AvailabilityZone, '')                                                 as availability_zone,
        nullif(ResourceId, '')                                                       as resource_id,
        nullif(ResourceName, '')                                                     as resource_name,
        nullif(MeterSubCategory, '')                                                 as resource_type,
        case
            when MeterCategory in ('Virtual Machines', 'Container Instances', 'Azure Kubernetes Service', 'Functions', 'Azure App Service', 'Batch') then 'Compute'
            when MeterCategory in ('Machine Learning', 'Azure OpenAI', 'Cognitive Services', 'Azure Machine Learning') then 'AI and Machine Learning'
            when MeterCategory in ('Storage', 'Backup') then 'Storage'
            when MeterCategory in ('Bandwidth', 'Virtual Network', 'Load Balancer', 'VPN Gateway', 'Azure DNS', 'Content Delivery Network') then 'Networking'
            when MeterCategory in ('SQL Database', 'Azure Cosmos DB', 'Azure Database for PostgreSQL', 'Azure Database for MySQL', 'Redis Cache') then 'Databases'
            when MeterCategory in ('Azure Synapse Analytics', 'Azure Databricks', 'Azure Data Factory v2') then 'Analytics'
            else 'Other'
        end                                                                          as service_category,
        ConsumedService                                                              as service_name,
        nullif(MeterId, '')                                                          as sku_id,
        cast(null as varchar)                                                        as sku_price_id,
        coalesce(try_cast(try_cast(tags_json as json) as map(varchar, varchar)), map()) as tags,
        -- VM usage names its size in AdditionalInfo.ServiceType, e.g. Standard_ND96asr_v4.
        case when MeterCategory = 'Virtual Machines' then nullif(additional ->> 'ServiceType', '') end as x_instance_type,
        MeterCategory                                                                as meter_category,
        unit_block,
        __extras                                                                     as x_provider_columns
    from source
),

final as (
    select
        $load_id                                                                     as load_id,
        $source_file                                                                 as source_file,
        renamed.source_row,
        $source_format                                                               as source_format,
        renamed.* exclude (source_row, x_instance_type, x_provider_columns, meter_category, unit_block,
                           service_name, pricing_unit, consumed_unit),
        -- One spelling per service and unit, whatever the export wrote (athanor.reference.services).
        coalesce(svc.service_name, renamed.service_name)                               as service_name,
        coalesce(pu.unit, renamed.pricing_unit)                                        as pricing_unit,
        coalesce(cu.unit, renamed.consumed_unit)                                       as consumed_unit,
        renamed.x_instance_type,
        ref.instance_family                                                          as x_instance_family,
        ref.gpu_count                                                                as x_gpu_count,
        ref.gpu_model                                                                as x_gpu_model,
        case
            when renamed.pricing_category = 'Dynamic' then 'spot'
            when renamed.pricing_category = 'Committed' and renamed.commitment_discount_category = 'Usage' then 'reserved'
            when renamed.pricing_category = 'Committed' and renamed.commitment_discount_category = 'Spend' then 'savings_plan'
            when renamed.pricing_category = 'Standard' then 'on_demand'
            else 'other'
        end                                                                          as x_pricing_model,
        case
            when renamed.meter_category = 'Virtual Machines' and renamed.charge_category = 'Usage'
                 and lower(renamed.consumed_unit) in ('hour', 'hours')
                then renamed.consumed_quantity
        end                                                                          as x_usage_hours,
        renamed.x_provider_columns
    from renamed
    left join ref_instance_types as ref on ref.instance_type = renamed.x_instance_type
    left join ref_service_names as svc on svc.source_name = renamed.service_name
    left join ref_units as pu on pu.source_unit = lower(trim(renamed.pricing_unit))
    left join ref_units as cu on cu.source_unit = lower(trim(renamed.consumed_unit))
)

select * from final

-- Staging: a Google Cloud billing export (view `src`; records as JSON text) -> rows shaped like billing_facts.
-- Grain: one row per export row, plus one Credit row per credit that export row carries.
-- Mapping per the FinOps Foundation's GCP -> FOCUS conversion rules, with these choices:
--   * Credits (sustained-use, committed-use, promotions, free tier) are netted into the usage
--     row's EffectiveCost as the rules say (cost + credits, floored at 0), AND each credit also
--     becomes its own row: ChargeCategory 'Credit', BilledCost = the (negative) amount,
--     EffectiveCost 0 (already netted). So sum(BilledCost) is the invoice (cost + credits) and
--     sum(EffectiveCost) is the net cost, and no credit is counted twice.
--   * Usage with a committed-use-discount credit is PricingCategory 'Committed' and names the
--     commitment; spot / preemptible SKUs are 'Dynamic'; commitment fee SKUs are Purchases.
--   * BillingPeriod is the invoice month in Pacific time (as Google bills), converted to UTC; its
--     end is the next month's start (the rules set both ends to the month's start).
--   * SubAccount is the project; Tags are the resource labels.
with source as (
    select
        *,
        cast(cost::varchar as decimal(38, 12))                                       as cost_dec,
        coalesce(try_cast(try_cast(credits as json) as json[]), [])                  as credit_list,
        coalesce(lower(cost_type), 'regular')                                        as cost_kind,
        service ->> 'description'                                                    as service_description,
        sku ->> 'description'                                                        as sku_description,
        timezone('America/Los_Angeles', strptime(invoice ->> 'month', '%Y%m'))       as invoice_month_start
    from src
),

with_credits as (
    select
        *,
        coalesce(list_sum(list_transform(credit_list, lambda c: cast(c ->> 'amount' as decimal(38, 12)))), 0) as credits_total,
        list_filter(credit_list, lambda c: (c ->> 'type') like 'COMMITTED_USAGE_DISCOUNT%')[1] as cud_credit,
        list_filter(
            coalesce(try_cast(try_cast(system_labels as json) as struct(key varchar, value varchar)[]), []),
            lambda l: l.key = 'compute.googleapis.com/machine_spec'
        )[1].value                                                                   as machine_spec
    from source
),

renamed as (
    select
        __row                                                                        as source_row,
        'Google Cloud'                                                               as provider_name,
        coalesce(nullif(seller_name, ''), 'Google Cloud')                            as publisher_name,
        'Google'                                                                     as invoice_issuer_name,
        billing_account_id                                                           as billing_account_id,
        cast(null as varchar)                                                        as billing_account_name,
        project ->> 'id'                                                             as sub_account_id,
        project ->> 'name'                                                           as sub_account_name,
        upper(currency)                                                              as billing_currency,
        cast(invoice_month_start as timestamp)                                       as billing_period_start,
        cast(timezone('America/Los_Angeles', strptime(invoice ->> 'month', '%Y%m') + interval 1 month) as timestamp) as billing_period_end,
        cast(cast(usage_start_time as timestamptz) as timestamp)                     as charge_period_start,
        cast(cast(usage_end_time as timestamptz) as timestamp)                       as charge_period_end,
        case
            when cost_kind = 'tax' then 'Tax'
            when cost_kind = 'credit' then 'Credit'
            when cost_kind in ('adjustment', 'rounding_error') then 'Adjustment'
            when sku_description ilike 'commitment%' then 'Purchase'
            else 'Usage'
        end                                                                          as charge_category,
        case when cost_kind = 'adjustment' then 'Correction' end                     as charge_class,
        sku_description                                                              as charge_description,
        case
            when sku_description ilike 'commitment%' then 'Recurring'
            when cost_kind = 'regular' then 'Usage-Based'
            else 'One-Time'
        end                                                                          as charge_frequency,
        case
            when cost_kind <> 'regular' then null
            when sku_description ilike '%spot%' or sku_description ilike '%preemptible%' then 'Dynamic'
            when cud_credit is not null or sku_description ilike 'commitment%' then 'Committed'
            else 'Standard'
        end                                                                          as pricing_category,
        cast(usage ->> 'amount_in_pricing_units' as decimal(38, 12))                 as pricing_quantity,
        usage ->> 'pricing_unit'                                                     as pricing_unit,
        cast(usage ->> 'amount' as decimal(38, 12))                                  as consumed_quantity,
        usage ->> 'unit'                                                             as consumed_unit,
        cost_dec                                                                     as billed_cost,
        greatest(cost_dec + credits_total, 0)                                        as effective_cost,
        cast(cost_at_list::varchar as decimal(38, 12))                               as list_cost,
        cast(null as decimal(38, 12))                                                as contracted_cost,
        cast(null as decimal(38, 12))                                                as list_unit_price,
        cast(price ->> 'effective_price' as decimal(38, 12))                         as contracted_unit_price,
        cud_credit ->> 'id'                                                          as commitment_discount_id,
        cud_credit ->> 'full_name'                                                   as commitment_discount_name,
        case
            when (cud_credit ->> 'type') = 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE' then 'Spend'
            when cud_credit is not null then 'Usage'
        end                                                                          as commitment_discount_category,
        case when cud_credit is not null then 'Committed Use Discount' end           as commitment_discount_type,
        case when cud_credit is not null then 'Used' end                             as commitment_discount_status,
        cast(null as decimal(38, 12))                                                as commitment_discount_quantity,
        cast(null as varchar)                                                        as commitment_discount_unit,
        coalesce(location ->> 'region', location ->> 'location')                     as region_id,
        location ->> 'location'                                                      as region_name,
        location ->> 'zone'                                                          as availability_zone,
        resource ->> 'global_name'                                                   as resource_id,
        resource ->> 'name'                                                          as resource_name,
        cast(null as varchar)                                                        as resource_type,
        case
            when service_description in ('Compute Engine', 'Kubernetes Engine', 'Cloud Run', 'Cloud Functions', 'App Engine') then 'Compute'
            when service_description in ('Vertex AI', 'Cloud TPU', 'Gemini API', 'Cloud AI Platform') then 'AI and Machine Learning'
            when service_description in ('Cloud Storage', 'Filestore', 'Persistent Disk') then 'Storage'
            when service_description in ('Networking', 'Cloud CDN', 'Cloud DNS', 'Cloud Load Balancing') then 'Networking'
            when service_description in ('Cloud SQL', 'Cloud Spanner', 'Cloud Bigtable', 'Firestore') then 'Databases'
            when service_description in ('BigQuery', 'Dataflow', 'Dataproc', 'Pub/Sub') then 'Analytics'
            else 'Other'
        end                                                                          as service_category,
        service_description                                                          as service_name,
        sku ->> 'id'                                                                 as sku_id,
        price ->> 'tier_start_amount'                                                as sku_price_id,
        coalesce(map_from_entries(try_cast(try_cast(labels as json) as struct(key varchar, value varchar)[])), map()) as tags,
        -- The machine type is a system label, e.g. a2-highgpu-8g.
        machine_spec                                                                 as x_instance_type,
        credit_list,
        __extras                                                                     as x_provider_columns
    from with_credits
),

credit_rows as (
    -- One row per credit; everything but the money and the charge names comes from its usage row.
    select
        renamed.* replace (
            'Credit'                                                                 as charge_category,
            cast(null as varchar)                                                    as charge_class,
            coalesce(credit ->> 'full_name', credit ->> 'name')                      as charge_description,
            'One-Time'                                                               as charge_frequency,
            cast(null as varchar)                                                    as pricing_category,
            cast(null as decimal(38, 12))                                            as pricing_quantity,
            cast(null as decimal(38, 12))                                            as consumed_quantity,
            cast(credit ->> 'amount' as decimal(38, 12))                             as billed_cost,
            cast(0 as decimal(38, 12))                                               as effective_cost,
            cast(null as decimal(38, 12))                                            as list_cost,
            case when (credit ->> 'type') like 'COMMITTED_USAGE_DISCOUNT%' then credit ->> 'id' end as commitment_discount_id,
            case when (credit ->> 'type') like 'COMMITTED_USAGE_DISCOUNT%' then credit ->> 'full_name' end as commitment_discount_name,
            case
                when (credit ->> 'type') = 'COMMITTED_USAGE_DISCOUNT_DOLLAR_BASE' then 'Spend'
                when (credit ->> 'type') = 'COMMITTED_USAGE_DISCOUNT' then 'Usage'
            end                                                                      as commitment_discount_category,
            case when (credit ->> 'type') like 'COMMITTED_USAGE_DISCOUNT%' then 'Committed Use Discount' end as commitment_discount_type,
            cast(null as varchar)                                                    as commitment_discount_status
        )
    from renamed, unnest(renamed.credit_list) as c(credit)
),

all_rows as (
    select * from renamed
    union all by name
    select * from credit_rows
),

final as (
    select
        $load_id                                                                     as load_id,
        $source_file                                                                 as source_file,
        all_rows.source_row,
        $source_format                                                               as source_format,
        all_rows.* exclude (source_row, x_instance_type, x_provider_columns, credit_list,
                            service_name, pricing_unit, consumed_unit),
        -- One spelling per service and unit, whatever the export wrote (athanor.reference.services).
        coalesce(svc.service_name, all_rows.service_name)                               as service_name,
        coalesce(pu.unit, all_rows.pricing_unit)                                        as pricing_unit,
        coalesce(cu.unit, all_rows.consumed_unit)                                       as consumed_unit,
        all_rows.x_instance_type,
        ref.instance_family                                                          as x_instance_family,
        ref.gpu_count                                                                as x_gpu_count,
        ref.gpu_model                                                                as x_gpu_model,
        case
            when all_rows.charge_category <> 'Usage' then 'other'
            when all_rows.pricing_category = 'Dynamic' then 'spot'
            when all_rows.pricing_category = 'Committed' then 'committed'
            when all_rows.pricing_category = 'Standard' then 'on_demand'
            else 'other'
        end                                                                          as x_pricing_model,
        -- GPU SKUs meter GPU-seconds; an instance-hour is gpu_count of them.
        case
            when all_rows.charge_category = 'Usage' and all_rows.charge_description ilike '%gpu%'
                 and lower(all_rows.consumed_unit) = 'seconds' and ref.gpu_count > 0
                then all_rows.consumed_quantity / 3600 / ref.gpu_count
        end                                                                          as x_usage_hours,
        all_rows.x_provider_columns
    from all_rows
    left join ref_instance_types as ref on ref.instance_type = all_rows.x_instance_type
    left join ref_service_names as svc on svc.source_name = all_rows.service_name
    left join ref_units as pu on pu.source_unit = lower(trim(all_rows.pricing_unit))
    left join ref_units as cu on cu.source_unit = lower(trim(all_rows.consumed_unit))
)

select * from final

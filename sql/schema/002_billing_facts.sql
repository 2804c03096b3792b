-- Grain: one row per charge per charge period (a provider line item), FOCUS 1.2 aligned.
-- Money is DECIMAL(38,12): providers export up to 11 decimals and totals must reconcile to the cent.
create table if not exists billing_facts (
    load_id                        varchar not null,   -- lineage: loads.load_id
    source_file                    varchar not null,   -- lineage: the file inside the delivery
    source_row                     bigint not null,    -- lineage: 1-based data row in that file
    source_format                  varchar not null,
    provider_name                  varchar,
    publisher_name                 varchar,
    invoice_issuer_name            varchar,
    billing_account_id             varchar not null,
    billing_account_name           varchar,
    sub_account_id                 varchar,
    sub_account_name               varchar,
    billing_currency               varchar not null,
    billing_period_start           timestamp not null,
    billing_period_end             timestamp not null,
    charge_period_start            timestamp not null,
    charge_period_end              timestamp not null,
    charge_category                varchar not null,   -- Usage | Purchase | Tax | Credit | Adjustment
    charge_class                   varchar,            -- Correction or null
    charge_description             varchar,
    charge_frequency               varchar,            -- One-Time | Recurring | Usage-Based
    pricing_category               varchar,            -- Standard | Dynamic (spot) | Committed | Other
    pricing_quantity               decimal(38, 12),
    pricing_unit                   varchar,
    consumed_quantity              decimal(38, 12),
    consumed_unit                  varchar,
    billed_cost                    decimal(38, 12) not null,
    effective_cost                 decimal(38, 12) not null,
    list_cost                      decimal(38, 12),
    contracted_cost                decimal(38, 12),
    list_unit_price                decimal(38, 12),
    contracted_unit_price          decimal(38, 12),
    commitment_discount_id         varchar,
    commitment_discount_name       varchar,
    commitment_discount_category   varchar,            -- Spend (savings plan) | Usage (reservation)
    commitment_discount_type       varchar,
    commitment_discount_status     varchar,            -- Used | Unused
    commitment_discount_quantity   decimal(38, 12),
    commitment_discount_unit       varchar,
    region_id                      varchar,
    region_name                    varchar,
    availability_zone              varchar,
    resource_id                    varchar,
    resource_name                  varchar,
    resource_type                  varchar,
    service_category               varchar,
    service_name                   varchar,
    sku_id                         varchar,
    sku_price_id                   varchar,
    tags                           map(varchar, varchar),
    x_instance_type                varchar,            -- e.g. p4d.24xlarge, derived from the usage type for spot lines
    x_instance_family              varchar,
    x_gpu_count                    integer,            -- GPUs per instance
    x_gpu_model                    varchar,
    x_pricing_model                varchar,            -- on_demand | spot | reserved | savings_plan | other
    x_usage_hours                  decimal(38, 12),    -- instance-hours for compute usage lines
    -- Provider fields Athanor uses, as typed columns: a per-row map of them costs more than the
    -- rest of a 10M-row load (bench/bench_ingest.py).
    x_usage_type                   varchar,            -- e.g. USE1-SpotUsage:p4d.24xlarge
    x_operation                    varchar,            -- e.g. RunInstances
    x_line_item_id                 varchar,            -- the provider's line-item id, where it has one
    x_commitment_end               timestamp,          -- when the commitment covering this line ends
    x_provider_columns             map(varchar, varchar), -- the provider's own x_ / extra columns, kept verbatim
    -- FOCUS 1.2 columns no Athanor logic reads, kept for analysts (null where a source lacks them).
    invoice_id                     varchar,
    billing_account_type           varchar,
    sub_account_type               varchar,
    service_subcategory            varchar,
    sku_meter                      varchar,
    sku_price_details              varchar,            -- JSON text, as the provider writes it
    pricing_currency               varchar,
    pricing_currency_contracted_unit_price decimal(38, 12),
    pricing_currency_effective_cost        decimal(38, 12),
    pricing_currency_list_unit_price       decimal(38, 12),
    capacity_reservation_id        varchar,
    capacity_reservation_status    varchar             -- Used | Unused
);

-- Warehouses created before these columns existed.
alter table billing_facts add column if not exists x_usage_type varchar;
alter table billing_facts add column if not exists x_operation varchar;
alter table billing_facts add column if not exists x_line_item_id varchar;
alter table billing_facts add column if not exists x_commitment_end timestamp;
alter table billing_facts add column if not exists invoice_id varchar;
alter table billing_facts add column if not exists billing_account_type varchar;
alter table billing_facts add column if not exists sub_account_type varchar;
alter table billing_facts add column if not exists service_subcategory varchar;
alter table billing_facts add column if not exists sku_meter varchar;
alter table billing_facts add column if not exists sku_price_details varchar;
alter table billing_facts add column if not exists pricing_currency varchar;
alter table billing_facts add column if not exists pricing_currency_contracted_unit_price decimal(38, 12);
alter table billing_facts add column if not exists pricing_currency_effective_cost decimal(38, 12);
alter table billing_facts add column if not exists pricing_currency_list_unit_price decimal(38, 12);
alter table billing_facts add column if not exists capacity_reservation_id varchar;
alter table billing_facts add column if not exists capacity_reservation_status varchar

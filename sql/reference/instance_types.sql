-- Reference: GPU instance types of every provider (GPUs per instance, GPU model, normalisation
-- factor), each priced in its reference region: the first row of the type in prices.csv (the
-- refreshed copy under the catalogue override folder when there is one: athanor.reference.paths).
-- Azure and GCP publish no normalisation factor; their GPU count stands in (as in
-- athanor.reference.instances), so the family pools of gpu_demand_hourly still weigh sizes.
create or replace table ref_instance_types as
with instances as (
    select * from read_csv($instances, header = true, columns = {
        'provider': 'varchar',
        'instance_type': 'varchar',
        'instance_family': 'varchar',
        'gpu_model': 'varchar',
        'gpu_count': 'integer',
        'gpu_memory_gib': 'double',
        'normalization_factor': 'double',
        'spec_source': 'varchar',
        'memory_source': 'varchar'
    })
),

prices as (
    select *, row_number() over () as file_row
    from read_csv($prices, header = true, columns = {
        'provider': 'varchar',
        'instance_type': 'varchar',
        'region': 'varchar',
        'on_demand_usd_per_h': 'decimal(18, 6)',
        'spot_usd_per_h': 'decimal(18, 6)',
        'capacity_block_usd_per_h': 'decimal(18, 6)',
        'on_demand_source': 'varchar',
        'spot_source': 'varchar',
        'options_source': 'varchar',
        'purchase_options': 'varchar',
        'as_of': 'date'
    })
),

reference_prices as (
    select * from prices
    qualify row_number() over (partition by instance_type order by file_row) = 1
),

catalogue as (
    select
        i.instance_type,
        i.instance_family,
        i.gpu_count,
        i.gpu_model,
        coalesce(i.normalization_factor, i.gpu_count)   as normalization_factor,
        p.on_demand_usd_per_h,
        p.spot_usd_per_h,
        i.provider,
        p.region,
        i.gpu_memory_gib
    from instances as i
    left join reference_prices as p using (instance_type)
)

select * from catalogue
union all
-- SageMaker's ml.* instances: the EC2 shape's GPUs (ml.p4d.24xlarge: 8 A100) in a family of their
-- own ('ml.p4d'), so their hours make pools of their own. EC2 Reserved Instances and EC2 Instance
-- or Compute Savings Plans do not cover SageMaker, only a SageMaker Savings Plan does, and SageMaker
-- prices its instances apart from EC2: the catalogue has no ml.* price, so the demand mart takes a
-- SageMaker pool's on-demand rate from the bill's list price (sql/marts/gpu_demand_hourly.sql).
select
    'ml.' || instance_type,
    'ml.' || instance_family,
    gpu_count,
    gpu_model,
    normalization_factor,
    cast(null as decimal(18, 6)),
    cast(null as decimal(18, 6)),
    provider,
    region,
    gpu_memory_gib
from catalogue
where provider = 'aws'

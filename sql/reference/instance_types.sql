-- Reference: GPU instance types (GPUs per instance, GPU model, normalisation factor, list prices).
create or replace table ref_instance_types as
select * from read_csv($path, header = true, columns = {
    'instance_type': 'varchar',
    'instance_family': 'varchar',
    'gpu_count': 'integer',
    'gpu_model': 'varchar',
    'normalization_factor': 'double',
    'on_demand_usd_per_h': 'decimal(18, 6)',
    'spot_usd_per_h': 'decimal(18, 6)'
})

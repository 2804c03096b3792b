-- Reference: a service as FOCUS names it, for each spelling a source writes (a CUR product
-- code such as AmazonEC2, a provider's own FOCUS spelling such as AmazonCloudWatch).
create or replace table ref_service_names as
select * from read_csv($services, header = true, columns = {
    'source_name': 'varchar',
    'service_name': 'varchar',
    'service_category': 'varchar',
    'note': 'varchar'
})

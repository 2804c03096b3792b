-- Reference: a unit as FOCUS spells it ('Hours', 'GB-Months'), for each source spelling,
-- lower-cased ('hrs', 'gb-mo'): staging matches lower(trim(unit)).
create or replace table ref_units as
select * from read_csv($units, header = true, columns = {
    'source_unit': 'varchar',
    'unit': 'varchar',
    'note': 'varchar'
})

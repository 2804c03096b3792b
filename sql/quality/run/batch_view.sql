-- The batch of a table that holds many loads: the rows of the load being checked.
create or replace temp view {view} as
select * from {table}
where load_id = (select load_id from dq_params)

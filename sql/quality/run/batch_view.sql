-- The batch of a table that holds many loads: the rows of the load being checked. The load
-- is a literal, not a subquery, so that the filter reaches the scan (a lake table's files).
create or replace temp view {view} as
select * from {table}
where load_id = {load_id}

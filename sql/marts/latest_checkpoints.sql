-- Grain: one row per training run with checkpoints in the storage inventory: its latest step
-- that still has current (not deleted) objects, and their size. What a move of the run's
-- workload class to another region copies along (athanor.recommend.gpu_plan.class_data).
with current_steps as (
    select
        run_id,
        step,
        sum(size_bytes)             as size_bytes,
        count(*)                    as objects
    from storage_objects
    where run_id is not null
      and step is not null
      and step >= 0
      and coalesce(is_latest, true)
      and not coalesce(is_delete_marker, false)
    group by run_id, step
)

select run_id, step, size_bytes, objects
from current_steps
qualify row_number() over (partition by run_id order by step desc) = 1

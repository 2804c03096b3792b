-- Grain: one row per storage class and age band, over the latest inventory of each bucket
-- taken on or before $as_of (delete markers excluded: they hold no bytes).
with latest as (
    select bucket, max(inventory_date) as inventory_date
    from storage_objects
    where inventory_date <= $as_of
    group by bucket
),

objects as (
    select
        coalesce(o.storage_class, 'STANDARD') as storage_class,
        date_diff('day', cast(o.last_modified as date), o.inventory_date) as age_days,
        o.size_bytes
    from storage_objects as o
    join latest as l using (bucket, inventory_date)
    where not coalesce(o.is_delete_marker, false)
),

final as (
    select
        storage_class,
        case
            when age_days is null then 5
            when age_days < 30 then 0
            when age_days < 90 then 1
            when age_days < 180 then 2
            when age_days < 365 then 3
            else 4
        end as age_band,
        count(*) as objects,
        coalesce(sum(size_bytes), 0) as size_bytes
    from objects
    group by all
)

select storage_class, age_band, objects, size_bytes
from final
order by age_band, storage_class

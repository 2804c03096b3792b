-- Grain: one row per bucket and top-level prefix (the first two key segments), the
-- biggest first, over the latest inventory of each bucket taken on or before $as_of.
with latest as (
    select bucket, max(inventory_date) as inventory_date
    from storage_objects
    where inventory_date <= $as_of
    group by bucket
),

objects as (
    select
        o.bucket,
        array_to_string(list_slice(string_split(o.key, '/'), 1, least(2, len(string_split(o.key, '/')) - 1)), '/') as prefix,
        o.is_latest,
        o.size_bytes,
        date_diff('day', cast(o.last_modified as date), o.inventory_date) as age_days
    from storage_objects as o
    join latest as l using (bucket, inventory_date)
    where not coalesce(o.is_delete_marker, false)
)

select
    bucket,
    prefix,
    count(*) as objects,
    coalesce(sum(size_bytes), 0) as size_bytes,
    coalesce(sum(size_bytes) filter (where not coalesce(is_latest, true)), 0) as noncurrent_bytes,
    max(age_days) as oldest_days
from objects
group by bucket, prefix
order by size_bytes desc, bucket, prefix
limit $limit

-- Grain: one row per resource the bill names in [$window_start, $window_end), USD lines only:
-- what it cost over the window (EffectiveCost). `resource` is the name a bill and an inventory
-- share: the last part of an ARN ('arn:aws:s3:::b' -> 'b', '...:snapshot/snap-1' -> 'snap-1'),
-- as athanor.recommend.lifecycle.resource_key cuts it.
select
    regexp_extract(rtrim(replace(resource_id, ':', '/'), '/'), '([^/]+)$', 1)  as resource,
    cast(sum(effective_cost) as double)                                      as cost_usd,
    count(*)                                                                 as line_items
from billing_facts
where resource_id is not null and resource_id <> ''
  and billing_currency = 'USD'
  and charge_period_start >= $window_start and charge_period_start < $window_end
group by 1
order by 1

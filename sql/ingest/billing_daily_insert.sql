-- The daily sums of a load's partitions, from the load's own rows (in the lake mode too, where
-- they are still staged): after the load they are all that the partitions hold. Keep the
-- expressions equal to the backfill in sql/schema/045_billing_daily.sql.
insert into billing_daily by name
select
    billing_account_id,
    billing_period_start,
    charge_period_start::date as day,
    billing_currency,
    case when charge_category <> 'Usage' or charge_frequency = 'One-Time' then 'month_start' else 'usage' end as kind,
    coalesce(service_name, '(unknown)') as service,
    coalesce(sub_account_id, billing_account_id) as account,
    coalesce(nullif(tags['team'], ''), '(untagged)') as team,
    sum(effective_cost) as effective_cost,
    count(*) as line_items,
    max(charge_period_end) as last_charge_end
from billing_facts
where load_id = $load_id
group by all

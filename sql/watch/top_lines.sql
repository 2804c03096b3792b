-- Grain: one row per line (service, usage type or description, resource) of one scope,
-- currency and kind per day, for the anomalous $day and the days it is compared with
-- ($history): the watch ranks the groups by their excess over their own median.
-- The scope column (service, account or team) is chosen by code.
with charges as (
    select
        charge_period_start::date as day,
        coalesce(service_name, '(unknown)') as service,
        coalesce(sub_account_id, billing_account_id) as account,
        coalesce(nullif(tags['team'], ''), '(untagged)') as team,
        case
            when charge_category <> 'Usage' or charge_frequency = 'One-Time' then 'month_start'
            else 'usage'
        end as kind,
        coalesce(x_usage_type, charge_description, charge_category) as line,
        resource_id,
        effective_cost
    from billing_facts
    where billing_currency = $currency
      and charge_period_start >= $first
      and charge_period_start < $last + interval 1 day
)

select day, service, line, resource_id, sum(effective_cost)::double as cost
from charges
where {scope_column} = $scope_value
  and kind = $kind
  and list_contains($days::date[], day)
group by all
order by day, service, line, resource_id

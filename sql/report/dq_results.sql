-- Grain: one row per data-quality rule checked on a delivery whose rows the report reads,
-- failures first. Those deliveries are the loads in force (loads.status = 'loaded'; a billing
-- load only when one of its billing periods is among $months, the months the report's windows
-- cover) and the deliveries refused (quarantined or failed) since their source last loaded.
-- The checks are chosen by the data they checked, never by when they ran: a nightly run checks
-- the day before, so every checked_at is later than the period the report shows.
with in_force as (
    select load_id
    from loads
    where status = 'loaded'
      and (kind <> 'billing' or coalesce(len(billing_periods), 0) = 0 or list_has_any(billing_periods, $months))
),

refused as (
    select r.load_id
    from loads as r
    where r.status in ('quarantined', 'failed')
      and not exists (
          select 1
          from loads as later
          where later.source_uri = r.source_uri
            and later.status in ('loaded', 'replaced')
            and later.started_at > r.started_at
      )
),

chosen as (
    select load_id from in_force
    union
    select load_id from refused
)

select
    d.suite,
    d.table_name,
    d.rule,
    d.column_name,
    d.severity,
    d.success,
    d.unexpected_count,
    d.examples,
    d.files,
    d.exception,
    d.checked_at
from dq_results as d
join chosen using (load_id)
order by d.success, d.severity, d.suite, d.rule, d.column_name, d.files

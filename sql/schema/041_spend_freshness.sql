-- The bill's freshness as the spend watch judged it (athanor.watch.freshness), and the budgets'
-- status that follows from it. Written by the watch_spend stage.
create table if not exists spend_freshness (
    run_id           varchar not null,
    as_of            date not null,
    provider         varchar not null,   -- provider_name ('(unknown)' when the bill names none)
    billing_account  varchar not null,   -- billing_account_id
    last_charge_day  date not null,
    lag_days         integer not null,   -- as_of - last_charge_day
    stale            boolean not null    -- lag_days above ATHANOR_FRESHNESS_MAX_LAG_DAYS
);

-- within | breached | unknown (a stale bill: the month's figures miss its charges). Rows written
-- before the column existed have none: their readers take it from breached.
alter table budget_status add column if not exists status varchar;

comment on table spend_freshness is 'The last charge day of every provider and billing account billed in the watch''s history window, per optimize run. Grain: one row per provider and billing account per run.';
comment on column spend_freshness.run_id is 'The optimize run.';
comment on column spend_freshness.as_of is 'The day the run was for.';
comment on column spend_freshness.provider is 'The bill''s provider_name.';
comment on column spend_freshness.billing_account is 'The billing account id.';
comment on column spend_freshness.last_charge_day is 'The last day with charges of the account (charge_period_start, UTC).';
comment on column spend_freshness.lag_days is 'Days from last_charge_day to as_of.';
comment on column spend_freshness.stale is 'True when lag_days is above ATHANOR_FRESHNESS_MAX_LAG_DAYS: the bill stopped arriving; budgets then read unknown.';
comment on column budget_status.status is 'within | breached | unknown (a bill is stale: the month''s figures miss its charges, and no alert is sent).';

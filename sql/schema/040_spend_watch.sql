-- The spend watch (athanor.watch): cost anomalies, the spend forecast and its backtest, budget
-- status, and the ledger of alerts sent so each goes out once. Written by the watch_spend stage.
create table if not exists spend_anomalies (
    run_id          varchar not null,
    as_of           date not null,
    scope_kind      varchar not null,   -- service | account | team
    scope_value     varchar not null,
    currency        varchar not null,
    day             date not null,
    kind            varchar not null,   -- usage | month_start
    expected_cost   decimal(18, 2) not null,
    actual_cost     decimal(18, 2) not null,
    excess_cost     decimal(18, 2) not null,
    threshold_cost  decimal(18, 2) not null,
    history         integer not null,   -- days (usage) or months (month_start) compared with
    top_lines       varchar not null,   -- JSON list of the line groups that caused the excess
    alert_key       varchar not null    -- spend_alerts.alert_key
);

create table if not exists spend_forecasts (
    run_id          varchar not null,
    as_of           date not null,
    scope_kind      varchar not null,   -- total | team
    scope_value     varchar not null,
    currency        varchar not null,
    period          varchar not null,   -- day | month
    day             date not null,      -- the day, or the month's first day
    cost            decimal(18, 2) not null,
    lower_cost      decimal(18, 2) not null,
    upper_cost      decimal(18, 2) not null,
    actual_cost     decimal(18, 2) not null  -- the part already billed (the month to date)
);

create table if not exists spend_forecast_accuracy (
    run_id          varchar not null,
    as_of           date not null,
    scope_kind      varchar not null,
    scope_value     varchar not null,
    currency        varchar not null,
    horizon_days    integer not null,
    folds           integer not null,
    mape            double,             -- null: too little history for this horizon
    coverage        double              -- share of backtest days inside the prediction interval
);

create table if not exists budget_status (
    run_id              varchar not null,
    as_of               date not null,
    budget              varchar not null,   -- the budget's name in the budgets file
    scope_kind          varchar not null,   -- total | team | account | service
    scope_value         varchar not null,
    currency            varchar not null,
    month               date not null,
    amount              decimal(18, 2) not null,
    actual_cost         decimal(18, 2) not null,
    forecast_cost       decimal(18, 2),
    threshold_basis     varchar not null,   -- actual | forecast
    threshold_pct       double not null,
    breached            boolean not null,
    alert_key           varchar not null
);

create table if not exists spend_alerts (
    alert_key       varchar primary key,  -- what the alert is about; the same key is never sent twice
    kind            varchar not null,     -- anomaly | budget
    first_run_id    varchar not null,
    sent_at         timestamp not null,
    channel         varchar not null,     -- webhook | log (no webhook set yet: sent when one is)
    message         varchar not null
);

comment on table spend_anomalies is 'Daily cost anomalies per service, account and team. Grain: one row per scope, day and kind per optimize run. Usage days are compared with the same weekday of the weeks before; month-start charges (purchases, fees, tax, credits, adjustments) with the months before.';
comment on column spend_anomalies.run_id is 'The optimize run that found it.';
comment on column spend_anomalies.as_of is 'The day the run was for.';
comment on column spend_anomalies.scope_kind is 'service | account | team.';
comment on column spend_anomalies.scope_value is 'The service name, account id or team tag (''(untagged)'' for lines without one).';
comment on column spend_anomalies.currency is 'Billing currency; currencies are never added together.';
comment on column spend_anomalies.day is 'The day of the charges (UTC).';
comment on column spend_anomalies.kind is 'usage (usage lines of the day) | month_start (the month''s purchase, fee, tax, credit and adjustment lines).';
comment on column spend_anomalies.expected_cost is 'The seasonal expectation: median effective cost of the same weekday (usage) or of the previous months (month_start).';
comment on column spend_anomalies.actual_cost is 'Effective cost of the scope on that day (usage) or of its month-start charges.';
comment on column spend_anomalies.excess_cost is 'actual_cost - expected_cost.';
comment on column spend_anomalies.threshold_cost is 'The excess above which the day is an anomaly (the largest of the robust spread, share and minimum bounds).';
comment on column spend_anomalies.history is 'How many days (usage) or months (month_start) the expectation is drawn from.';
comment on column spend_anomalies.top_lines is 'JSON list of the line groups (service, usage type or description, resource) with the largest excess over their own expectation.';
comment on column spend_anomalies.alert_key is 'The key of its alert in spend_alerts.';

comment on table spend_forecasts is 'The spend forecast (ETS, weekly seasonality) for the rest of the month and the next days (ATHANOR_FORECAST_HORIZON_DAYS, 90). Grain: one row per scope and day, and per scope and calendar month, per optimize run.';
comment on column spend_forecasts.run_id is 'The optimize run that made it.';
comment on column spend_forecasts.as_of is 'The day the run was for, as in every table: the forecast starts the day after, and the month to date (actual_cost) counts through it.';
comment on column spend_forecasts.scope_kind is 'total | team.';
comment on column spend_forecasts.scope_value is 'The team tag, or ''all'' for the total.';
comment on column spend_forecasts.currency is 'Billing currency.';
comment on column spend_forecasts.period is 'day (one forecast day) | month (a calendar month: the billed month to date plus the forecast of its other days).';
comment on column spend_forecasts.day is 'The day forecast, or the first day of the month (UTC).';
comment on column spend_forecasts.cost is 'Forecast effective cost (for a month, actual_cost included).';
comment on column spend_forecasts.lower_cost is 'Lower bound of the prediction interval (ATHANOR_FORECAST_INTERVAL; a month''s from simulated paths).';
comment on column spend_forecasts.upper_cost is 'Upper bound of the prediction interval.';
comment on column spend_forecasts.actual_cost is 'The part already billed: the month to date for the run''s month, 0 otherwise.';

comment on table spend_forecast_accuracy is 'The forecast backtested on the warehouse''s own history. Grain: one row per scope and horizon per optimize run.';
comment on column spend_forecast_accuracy.run_id is 'The optimize run.';
comment on column spend_forecast_accuracy.as_of is 'The day the run was for.';
comment on column spend_forecast_accuracy.scope_kind is 'total | team.';
comment on column spend_forecast_accuracy.scope_value is 'The team tag, or ''all''.';
comment on column spend_forecast_accuracy.currency is 'Billing currency.';
comment on column spend_forecast_accuracy.horizon_days is 'Days ahead: the error of the horizon''s summed cost.';
comment on column spend_forecast_accuracy.folds is 'Backtest origins evaluated.';
comment on column spend_forecast_accuracy.mape is 'Mean absolute percentage error of the horizon''s total over the folds; null when the history is too short.';
comment on column spend_forecast_accuracy.coverage is 'Share of the backtest''s days whose actual cost fell inside the prediction interval.';

comment on table budget_status is 'Budgets of the budgets file (ATHANOR_BUDGETS) against the month''s actual and forecast spend. Grain: one row per budget and threshold per optimize run.';
comment on column budget_status.run_id is 'The optimize run.';
comment on column budget_status.as_of is 'The day the run was for.';
comment on column budget_status.budget is 'The budget''s name.';
comment on column budget_status.scope_kind is 'total | team | account | service.';
comment on column budget_status.scope_value is 'The team, account or service, or ''all''.';
comment on column budget_status.currency is 'The budget''s currency.';
comment on column budget_status.month is 'First day of the budget month.';
comment on column budget_status.amount is 'The monthly budget.';
comment on column budget_status.actual_cost is 'Effective cost of the scope from the 1st to the run''s day.';
comment on column budget_status.forecast_cost is 'Actual cost to date plus the forecast of the month''s remaining days (null: no forecast for this scope).';
comment on column budget_status.threshold_basis is 'actual | forecast: which figure the threshold is held against.';
comment on column budget_status.threshold_pct is 'The alert threshold, in % of the amount.';
comment on column budget_status.breached is 'True when the figure reached the threshold.';
comment on column budget_status.alert_key is 'The key of its alert in spend_alerts (sent once per budget, threshold and month).';

comment on table spend_alerts is 'Every spend alert sent (anomalies, budget breaches), so that none is sent twice. Grain: one row per alert.';
comment on column spend_alerts.alert_key is 'What the alert is about (kind, scope, day or month, threshold).';
comment on column spend_alerts.kind is 'anomaly | budget.';
comment on column spend_alerts.first_run_id is 'The run that sent it.';
comment on column spend_alerts.sent_at is 'When it went out on its channel (UTC): for one logged before a webhook was set, when the webhook took it.';
comment on column spend_alerts.channel is 'webhook (ATHANOR_ALERT_WEBHOOK) | log (no webhook set: logged only, and sent by the first run that has one; then webhook).';
comment on column spend_alerts.message is 'The text sent.';

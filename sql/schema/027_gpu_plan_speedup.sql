-- The evidence of each GPU plan move across GPU models (issue 28): the speed-up its hours rest
-- on, with its source and range, where the move stops saving, and whether the plan counts it.
alter table gpu_plan add column if not exists speedup double;
alter table gpu_plan add column if not exists speedup_low double;
alter table gpu_plan add column if not exists speedup_high double;
alter table gpu_plan add column if not exists speedup_source varchar;   -- fleet | benchmark | datasheet
alter table gpu_plan add column if not exists speedup_note varchar;
alter table gpu_plan add column if not exists break_even_speedup double;
alter table gpu_plan add column if not exists monthly_savings_low_usd decimal(18, 2);
alter table gpu_plan add column if not exists monthly_savings_high_usd decimal(18, 2);
alter table gpu_plan add column if not exists benchmark_first boolean;
alter table gpu_plan add column if not exists counted boolean;
alter table gpu_plan add column if not exists gpu_window_min double;
alter table gpu_plan add column if not exists gpu_window_max double

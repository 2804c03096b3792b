-- Which fitted quantiles the data support (issue 31): the longest time a job of the group was
-- watched, a flag per quantile above it (extrapolation the report shows as "> N days (beyond
-- the data)", never as a number) and a note for a group with more than half its runs censored.
-- p50_s, p90_s and p99_s keep the fitted values, so drift and the spot simulation see the model.
alter table duration_fits add column if not exists data_limit_s double;
alter table duration_fits add column if not exists p50_beyond_data boolean;
alter table duration_fits add column if not exists p90_beyond_data boolean;
alter table duration_fits add column if not exists p99_beyond_data boolean;
alter table duration_fits add column if not exists censored_note varchar

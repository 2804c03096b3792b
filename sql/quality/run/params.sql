-- The values the SQL rules read, as a one-row temp table: a GX row query takes no parameters,
-- so they are bound here instead of being formatted into the rules.
create or replace temp table dq_params as
select
    $load_id::varchar                   as load_id,
    $restatement_min_share::double      as restatement_min_share,
    $as_of::date                        as as_of  -- the run's day; null: today

-- Rule: per file, the loaded row count equals the file's, and per file and currency the
-- loaded BilledCost total equals the file's to the last decimal (figures in dq_file_figures).
-- Fragments loaded_rows / loaded_total: the format's own expressions (count(*) / billed_cost by default).
with loaded as (
    select source_file, upper(billing_currency) as currency, {loaded_rows} as line_count, sum({loaded_total}) as cost
    from {batch}
    group by all
),

file_money as (
    select source_file, upper(billing_currency) as currency, file_billed_cost as cost
    from dq_file_figures
),

file_rows as (
    select source_file, any_value(file_rows) as line_count from dq_file_figures group by all
),

loaded_rows as (
    select source_file, {loaded_rows} as line_count from {batch} group by all
),

row_mismatch as (
    select
        coalesce(f.source_file, l.source_file) as source_file,
        'file has ' || coalesce(f.line_count::varchar, 'no figures') || ' rows, loaded '
            || coalesce(l.line_count, 0) || ' rows' as value
    from file_rows as f
    full join loaded_rows as l using (source_file)
    -- A header-only file has figures (0 rows) and no loaded rows: that matches.
    where f.line_count is distinct from coalesce(l.line_count, 0)
),

money_mismatch as (
    select
        coalesce(f.source_file, l.source_file) as source_file,
        coalesce(f.currency, l.currency) || ' file ' || coalesce(f.cost::varchar, 'none')
            || ', loaded ' || coalesce(l.cost::varchar, 'none') as value
    from file_money as f
    full join loaded as l on f.source_file = l.source_file and f.currency is not distinct from l.currency
    where f.cost is distinct from l.cost
)

select source_file, null::bigint as source_row, value from row_mismatch
union all
select source_file, null::bigint as source_row, value from money_mismatch
order by source_file, value

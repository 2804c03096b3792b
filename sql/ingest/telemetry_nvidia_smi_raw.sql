-- One nvidia-smi CSV read once: one row per line after the header, numbered from 1 in file order
-- (row_number() over () streams in scan order), each field trimmed of the blank nvidia-smi
-- writes after every comma, then parsed (fragment parsed, from code: the typed value of each
-- field, and beside each checked field the text that would not parse, for the error message).
create or replace temp table {view} as
with fields as (
    select
        row_number() over () as source_row,
        {trimmed}
    from read_csv(
        $path,
        header = false,
        skip = $skip,
        columns = $columns,
        delim = ',',
        quote = '"',
        auto_detect = false,
        null_padding = false,
        encoding = 'utf-8'
    )
)

select
    source_row,
    {parsed}
from fields

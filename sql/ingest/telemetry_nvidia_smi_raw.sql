-- One nvidia-smi CSV as text, one row per line after the header, numbered from 1 in file order
-- (row_number() over () streams in scan order), each field trimmed of the blank nvidia-smi
-- writes after every comma (fragment trimmed: the fields, as code lists them). The values are
-- checked, then parsed by telemetry_nvidia_smi.
create or replace temp table {view} as
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

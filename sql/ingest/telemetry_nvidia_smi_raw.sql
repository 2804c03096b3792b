-- One nvidia-smi CSV as text, one row per line after the header, numbered from 1 in file order
-- (row_number() over () streams in scan order). Every field is text: telemetry_nvidia_smi_insert
-- parses it once the file's values are known to parse.
create or replace temp table {view} as
select
    row_number() over () as source_row,
    *
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

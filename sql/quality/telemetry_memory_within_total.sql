-- Rule: a GPU's memory in use is at most its memory (a unit misread, MB for MiB, or a
-- CloudWatch figure divided among too few GPUs, breaks it). A rounding slack of 1 MiB.
select
    source_file,
    source_row,
    round(memory_used_gib, 3)::varchar || ' GiB used of ' || round(memory_total_gib, 3)::varchar as value
from {batch}
where memory_used_gib > memory_total_gib + 1.0 / 1024
order by source_file, source_row

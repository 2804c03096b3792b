-- Rule on a raw file's column (text, as read): every value casts to the type given.
-- Fragments: column (the quoted column name), type (a DuckDB type); batch is the file's table.
select {column}
from {batch}
where {column} is not null
    and try_cast({column}::varchar as {type}) is null
    and {column}::varchar <> ''

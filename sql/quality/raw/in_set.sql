-- Rule on a raw file's column: every value is one of the allowed ones, in any case (exports
-- differ: 'Usage-based' / 'Usage-Based'; staging normalises it). Fragments: column (the quoted
-- column name), allowed (the lower-case values as SQL literals).
select {column}
from {batch}
where {column} is not null
    and {column}::varchar <> ''
    and lower({column}::varchar) not in ({allowed})

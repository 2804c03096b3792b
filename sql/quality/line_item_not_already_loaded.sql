-- Rule: a line item of the delivery is not already in the warehouse under an account and
-- billing period the delivery does not restate (those rows would stay and count twice). The
-- key is line_item_unique's (every column but lineage) without the billing period: the same
-- charge billed in two periods.
with restated as (
    select distinct billing_account_id, billing_period_start from {batch}
),

-- The partitions the delivery does not restate that have charges in its span: only their lines
-- are read whole. (Reading every column of the restated partitions' earlier lines only to drop
-- them was most of this rule's time in a restated load: 5 s of an 8 M-line month, cold.)
others as (
    select distinct facts.billing_account_id, facts.billing_period_start
    from billing_facts as facts
    where facts.charge_period_start between (select min(charge_period_start) from {batch})
                                        and (select max(charge_period_start) from {batch})
    except
    select billing_account_id, billing_period_start from restated
),

incoming as (
    select
        source_file,
        source_row,
        hash(*columns(* exclude (
            load_id, source_file, source_row, source_format, billing_period_start, billing_period_end
        ))) as line_item_key
    from {batch}
    -- Without other partitions nothing can match: hash no line (DuckDB hashes all 8 M of a
    -- restated month otherwise, though the other side of the join is empty: 2 s, twice a load).
    where exists (select 1 from others)
),

kept as (
    select
        facts.source_file,
        facts.source_row,
        hash(*columns(* exclude (
            load_id, source_file, source_row, source_format, billing_period_start, billing_period_end
        ))) as line_item_key
    from billing_facts as facts
    semi join others using (billing_account_id, billing_period_start)
    where facts.charge_period_start between (select min(charge_period_start) from {batch})
                                        and (select max(charge_period_start) from {batch})
)

select
    incoming.source_file,
    incoming.source_row,
    'already loaded from ' || kept.source_file || ' row ' || kept.source_row as value
from incoming
join kept using (line_item_key)
order by incoming.source_file, incoming.source_row

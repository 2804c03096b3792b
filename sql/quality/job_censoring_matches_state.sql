-- Rule: preempted, cancelled and still-running jobs are right-censored; the others are not.
select source_file, source_row, state || ' with censored=' || censored as value
from {batch}
where censored is distinct from (state in ('preempted', 'cancelled', 'running'))
order by source_file, source_row

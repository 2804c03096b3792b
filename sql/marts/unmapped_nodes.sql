-- Node names jobs held (job_run_facts.node_list) that no source maps to a billed instance: not in
-- node_map, and not an EC2 resource-based name (i-0123456789abcdef0[.ec2.internal]), which
-- gpu_allocation_hourly.sql takes as its instance. Their jobs hold nothing; they are listed, never
-- guessed from a partition or a look-alike host name.
select distinct node
from (
    select unnest(string_split(node_list, ',')) as node
    from job_run_facts
    where coalesce(node_list, '') <> '' and start_time is not null
)
where node not in (select node from node_map)
  and not regexp_matches(node, '^i-[0-9a-f]{8,17}($|\.)')
order by node

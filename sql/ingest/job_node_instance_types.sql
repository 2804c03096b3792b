-- Grain: one row per node name an EC2 instance listing knows, with the instance type of the
-- latest instance launched under it: what a Slurm job's or pod's first node was, at load
-- (include/athanor/ingest/deliveries.py), instead of a partition's name.
select node, arg_max(instance_type, valid_from) as instance_type
from ({ec2_node_names})
where instance_type is not null
group by node

-- Grain: one row per name an instance of an `aws ec2 describe-instances` listing (ec2_instances)
-- had, each a name a scheduler or the telemetry may call its node by: PrivateDnsName's first
-- label (ip-10-0-1-11: Slurm's and nvidia-smi's host name), the whole PrivateDnsName (Kubernetes
-- on EKS), the Name tag and the instance id. valid_from: the instance's launch (a name reused by a
-- replacement instance is the later one's from its launch). Used by node_map.sql and, at load, by
-- sql/ingest/job_node_instance_types.sql.
select split_part(private_dns_name, '.', 1) as node, instance_id, instance_type, launch_time as valid_from
from ec2_instances
where coalesce(private_dns_name, '') <> ''
union all
select private_dns_name, instance_id, instance_type, launch_time
from ec2_instances
where private_dns_name like '%.%'
union all
select name_tag, instance_id, instance_type, launch_time
from ec2_instances
where coalesce(name_tag, '') <> ''
union all
select instance_id, instance_id, instance_type, launch_time
from ec2_instances

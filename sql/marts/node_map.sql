-- Grain: one row per scheduler node name and the billed instance it named (node_map, 075).
-- Sources, each a name the instance really had, never a guess from a look-alike:
-- * describe_instances: PrivateDnsName's first label (ip-10-0-1-11), the Name tag, the id itself;
-- * telemetry: a GPU sample naming both its host and its instance (EC2 resource-based names,
--   i-0123456789abcdef0.ec2.internal, give the instance from the host alone at load);
-- * bill_tag: the value of the bill lines' tag named by the setting node_tag_key (none if unset).
with named as (
    -- describe_instances: sql/marts/ec2_node_names.sql (Kubernetes on EKS names a node by the
    -- whole PrivateDnsName, Slurm by its first label).
    select node, instance_id, instance_type, valid_from, 'describe_instances' as source
    from ({ec2_node_names})
    union all
    select host, instance_id, null, min(sampled_at), 'telemetry'
    from gpu_samples
    where coalesce(instance_id, '') <> '' and coalesce(host, '') <> ''
    group by host, instance_id
    union all
    select split_part(host, '.', 1), instance_id, null, min(sampled_at), 'telemetry'
    from gpu_samples
    where coalesce(instance_id, '') <> '' and host like '%.%'
    group by host, instance_id
    union all
    select tags[$node_tag_key],
           regexp_extract(rtrim(replace(resource_id, ':', '/'), '/'), '([^/]+)$', 1),
           any_value(x_instance_type), min(charge_period_start), 'bill_tag'
    from billing_facts
    where $node_tag_key is not null and coalesce(tags[$node_tag_key], '') <> ''
      and coalesce(resource_id, '') <> ''
    group by 1, 2
)

-- One row per name and instance, from its earliest time in any source (source: the first by name).
select node, instance_id, any_value(instance_type) as instance_type, min(valid_from) as valid_from,
       min(source) as source
from named
group by node, instance_id
order by node, valid_from, instance_id

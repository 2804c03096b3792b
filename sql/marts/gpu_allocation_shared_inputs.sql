-- One row: a digest of what the GPU allocation of every month reads alike: the node map (built
-- first), the machines' owning teams from the instance listings, the job runs of no known start
-- (sagemaker and pod matches read every job), and the nodes any scheduler job ever named (a
-- cluster node's idle hours are idle in every month). A change here reallocates every month.
select md5(concat_ws('|',
    (select coalesce(string_agg(concat_ws(',', node, instance_id, valid_from, source), ';'
                                order by node, instance_id), '') from node_map),
    (select coalesce(string_agg(concat_ws(',', instance_id, team), ';' order by instance_id, team), '')
     from ec2_instances where coalesce(team, '') <> ''),
    (select coalesce(string_agg(concat_ws(',', job_id, source, team, node_list), ';'
                                order by job_id, source), '')
     from job_run_facts where start_time is null),
    (select coalesce(string_agg(distinct node, ';' order by node), '')
     from (select unnest(string_split(node_list, ',')) as node
           from job_run_facts where coalesce(node_list, '') <> '' and gpu_count > 0))
)) as digest

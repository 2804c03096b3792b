-- Catalog comments of the allocation tables (075) and of job_run_facts.node_list; docs/warehouse.md is generated from them.
comment on column job_run_facts.node_list is 'The scheduler nodes the job held, expanded and comma-separated (Slurm NodeList ''ip-10-0-1-[11-12]'' -> ''ip-10-0-1-11,ip-10-0-1-12''); null where the log names none.';
comment on column job_runs.node_list is 'The scheduler nodes the job held, expanded and comma-separated (Slurm NodeList); null where the log names none.';

comment on table ec2_instances is 'EC2 instances from `aws ec2 describe-instances` deliveries: what names a scheduler node had. Grain: one row per instance, from the latest listing that named it (instances terminated since keep their last row).';
comment on column ec2_instances.load_id is 'Lineage: the delivery (loads.load_id) of the listing.';
comment on column ec2_instances.source_file is 'Lineage: the listing''s file.';
comment on column ec2_instances.instance_id is 'InstanceId (i-...), the resource id the bill names.';
comment on column ec2_instances.instance_type is 'InstanceType, e.g. p4d.24xlarge.';
comment on column ec2_instances.private_dns_name is 'PrivateDnsName; its first label (ip-10-0-1-11) is the host name Slurm and the telemetry see.';
comment on column ec2_instances.private_ip is 'PrivateIpAddress.';
comment on column ec2_instances.name_tag is 'The instance''s Name tag (clusters often name nodes by it).';
comment on column ec2_instances.team is 'The instance''s team tag: whose idle time it is.';
comment on column ec2_instances.launch_time is 'LaunchTime (UTC): from when its names mean this instance.';
comment on column ec2_instances.state is 'State.Name at the listing (running, stopped, terminated ...).';
comment on column ec2_instances.tags is 'All the instance''s tags.';

comment on table node_map is 'Which billed instance a scheduler node name was. Grain: one row per node name and instance (a name reused by a later instance has a row for each). Written by the allocate_gpus stage from ec2_instances, the telemetry and the bill''s node tag (ATHANOR_NODE_TAG_KEY); a node in none is listed as unmapped by the stage, never guessed.';
comment on column node_map.node is 'The node name as the scheduler writes it.';
comment on column node_map.instance_id is 'The instance (the bill''s resource id) it was.';
comment on column node_map.instance_type is 'The instance''s type, where the source says it.';
comment on column node_map.valid_from is 'From when the name meant this instance (its launch); null: not known.';
comment on column node_map.source is 'describe_instances | telemetry | bill_tag.';

comment on table gpu_allocation_hourly is 'Each billed GPU machine-hour''s cost split over the jobs that held its GPUs, in proportion to GPU-seconds held, and what no job held as idle. Grain: one row per machine-hour (USD usage lines of a GPU instance type, by resource and charge period) and holder. Its rows add up to the machine-hour''s bill to the cent (cost_cents_usd, largest remainder). Written by the allocate_gpus stage, which rewrites the whole table.';
comment on column gpu_allocation_hourly.hour is 'Start of the charge period (UTC; an hour for hourly bills).';
comment on column gpu_allocation_hourly.day is 'The hour''s UTC day.';
comment on column gpu_allocation_hourly.period_end is 'End of the charge period.';
comment on column gpu_allocation_hourly.resource_id is 'The billed machine: the bill''s resource id (its last part: an instance id; a SageMaker training job''s name).';
comment on column gpu_allocation_hourly.node is 'The scheduler''s name of the machine, where a job named it.';
comment on column gpu_allocation_hourly.instance_type is 'The billed instance type.';
comment on column gpu_allocation_hourly.pool is 'The node pool idle is reported per: the instance type.';
comment on column gpu_allocation_hourly.kind is 'job (held by a Slurm job or a Kubernetes pod, or a SageMaker training job''s instance-hours, named in the resource id) | idle (a cluster node''s GPU-seconds held by none, or a reservation''s unused hour) | tagged (the bill''s job_id tag: the whole machine-hour) | team_tagged (only a team tag) | unattributed (neither).';
comment on column gpu_allocation_hourly.job_id is 'The job as its scheduler wrote it (array tasks 123_1; a pod''s name); null for idle, team_tagged and unattributed rows.';
comment on column gpu_allocation_hourly.job_source is 'Where the holder comes from: slurm | kubernetes (job_runs.source: a job''s node list, a pod''s node) | dcgm (a pod the DCGM exporter named on the GPU; no pod list had it) | sagemaker (the training job the bill''s resource id names, a job log''s TrainingJobName) | bill_tag.';
comment on column gpu_allocation_hourly.team is 'The job''s team; for idle and team_tagged rows the machine''s team tag (bill or instance), if any.';
comment on column gpu_allocation_hourly.gpus is 'GPUs of the machine (the bill''s instance type).';
comment on column gpu_allocation_hourly.billed_gpu_seconds is 'GPU-seconds the machine-hour paid for: GPUs x usage hours x 3600.';
comment on column gpu_allocation_hourly.gpu_seconds is 'GPU-seconds this row held: a job''s overlap with the hour x its GPUs per node; idle: paid and held by none.';
comment on column gpu_allocation_hourly.hour_cost_usd is 'The machine-hour''s EffectiveCost (all its usage lines).';
comment on column gpu_allocation_hourly.cost_usd is 'This row''s exact share: hour_cost_usd x gpu_seconds / max(billed, held) GPU-seconds.';
comment on column gpu_allocation_hourly.cost_cents_usd is 'The share in whole cents: the machine-hour''s cents shared by largest remainder, so its rows add up to its rounded bill.';
comment on column gpu_allocation_hourly.run_id is 'The run that wrote the row.';

comment on view job_allocated_costs is 'Per job, its allocated GPU cost. Grain: one row per job (job_id, job_source) gpu_allocation_hourly reached (scheduler jobs and bill-tagged ones).';
comment on column job_allocated_costs.job_id is 'The job as its scheduler wrote it (array tasks 123_1).';
comment on column job_allocated_costs.job_source is 'slurm | kubernetes | dcgm | sagemaker | bill_tag.';
comment on column job_allocated_costs.team is 'The job''s team.';
comment on column job_allocated_costs.gpu_hours is 'GPU-hours it held on billed machines.';
comment on column job_allocated_costs.cost_usd is 'Its exact share of the machine-hours'' cost.';
comment on column job_allocated_costs.cost_cents_usd is 'The same from the cent-rounded shares (what athanor allocation prints).';
comment on column job_allocated_costs.first_hour is 'The first machine-hour it held.';
comment on column job_allocated_costs.last_hour is 'The last machine-hour it held.';

comment on view team_allocated_costs is 'Per team and day, GPU cost allocated to it and idle on its machines. Grain: one row per day and team (null: nobody''s).';
comment on column team_allocated_costs.day is 'UTC day.';
comment on column team_allocated_costs.team is 'The team; null: machines and hours no team is named for.';
comment on column team_allocated_costs.allocated_usd is 'Cents-rounded cost of its jobs (scheduler and bill tags) and of its team-tagged machine-hours.';
comment on column team_allocated_costs.idle_usd is 'Cents-rounded idle cost of its machines (held by no job).';
comment on column team_allocated_costs.unattributed_usd is 'Cost no job or team is named for (team null only).';

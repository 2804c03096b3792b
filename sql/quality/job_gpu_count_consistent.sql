-- Rule: a job's GPU count is its instance count times the GPUs per instance.
select source_file, source_row, gpu_count as value
from {batch}
where gpu_count is distinct from instance_count * gpus_per_instance
order by source_file, source_row

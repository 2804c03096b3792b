-- The bill lines the GPU allocation shares: USD usage of a GPU instance type on a named resource.
-- Read by sql/marts/gpu_allocation_hourly.sql and by the digest of its inputs
-- (gpu_allocation_inputs.sql), which must see the same lines.
select *
from billing_facts
where billing_currency = 'USD'
  and charge_category = 'Usage'
  and x_instance_type is not null
  and coalesce(x_gpu_count, 0) > 0
  and coalesce(resource_id, '') <> ''

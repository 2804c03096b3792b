-- The samples of one nvidia-smi file (read by telemetry_nvidia_smi_raw), as gpu_samples' columns.
-- Grain: one row per GPU per line. The fragments are each field's value as code parses it:
-- numbers without their unit ('87 %' -> 87; a bracketed [N/A] is null), the timestamp, or null
-- where the file lacks the field. The GPU's index: the index field if queried, else its rank
-- by PCI bus id on its host, the order nvidia-smi numbers GPUs in. The instance: an instance_id
-- field, else an EC2 resource-based host name (i-0123456789abcdef0.ec2.internal).
with source as (
    select
        source_row,
        coalesce({hostname}, $host)     as host,
        {sampled_at}                    as sampled_at,
        {gpu_model}                     as gpu_model,
        {pci_bus_id}                    as pci_bus_id,
        {uuid}                          as uuid,
        {gpu_index}                     as index_given,
        {instance_id}                   as instance_given,
        {utilisation}                   as utilisation_pct,
        {memory_used}                   as memory_used_mib,
        {memory_total}                  as memory_total_mib,
        {power}                         as power_w
    from {raw}
),

numbered as (
    select
        host,
        pci_bus_id,
        (dense_rank() over (partition by host order by pci_bus_id) - 1)::integer as bus_rank
    from (select distinct host, pci_bus_id from source)
),

final as (
    select
        $load_id                                            as load_id,
        $format                                             as source_format,
        $file_name                                          as source_file,
        s.source_row,
        s.host,
        coalesce(s.index_given, n.bus_rank)                 as gpu_index,
        coalesce(s.uuid, s.host || ':' || coalesce(s.index_given, n.bus_rank)::varchar) as gpu_id,
        s.gpu_model,
        coalesce(
            s.instance_given,
            nullif(regexp_extract(s.host, '^(i-[0-9a-f]{8,17})(\.|$)', 1), '')
        )                                                   as instance_id,
        null::varchar                                       as job_name,
        null::varchar                                       as pod,
        null::varchar                                       as namespace,
        s.sampled_at,
        s.utilisation_pct,
        s.memory_used_mib / 1024                            as memory_used_gib,
        s.memory_total_mib / 1024                           as memory_total_gib,
        s.power_w
    from source as s
    left join numbered as n
        on s.host = n.host and s.pci_bus_id is not distinct from n.pci_bus_id
)

select * from final

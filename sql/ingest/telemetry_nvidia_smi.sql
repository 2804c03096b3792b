-- The samples of one nvidia-smi file (read by telemetry_nvidia_smi_raw), as gpu_samples' columns.
-- Grain: one row per GPU per line. Values lose their unit ('87 %' -> 87); bracketed values
-- ([N/A], [Not Supported]) are null. The GPU's index: the index field if queried, else its rank
-- by PCI bus id on its host, the order nvidia-smi numbers GPUs in. The instance: an instance_id
-- field, else an EC2 resource-based host name (i-0123456789abcdef0.ec2.internal).
with source as (
    select
        source_row,
        coalesce({f_hostname}, $host)                                         as host,
        try_strptime({f_timestamp}, ['%Y/%m/%d %H:%M:%S.%g', '%Y/%m/%d %H:%M:%S']) as sampled_at,
        {f_name}                                                              as gpu_model,
        {f_pci_bus_id}                                                        as pci_bus_id,
        {f_uuid}                                                              as uuid,
        {f_index}                                                             as index_text,
        {f_instance_id}                                                       as instance_id,
        {f_utilization_gpu}                                                   as utilisation_text,
        {f_memory_used}                                                       as memory_used_text,
        {f_memory_total}                                                      as memory_total_text,
        {f_power_draw}                                                        as power_text
    from {raw}
),

numbered as (
    select
        host,
        pci_bus_id,
        dense_rank() over (partition by host order by pci_bus_id) - 1 as bus_rank
    from (select distinct host, pci_bus_id from source)
),

final as (
    select
        $load_id                                                              as load_id,
        $format                                                               as source_format,
        $file_name                                                            as source_file,
        s.source_row,
        s.host,
        coalesce(try_cast(s.index_text as integer), n.bus_rank)::integer      as gpu_index,
        case
            when s.uuid is not null and not starts_with(s.uuid, '[') then s.uuid
            else s.host || ':' || coalesce(try_cast(s.index_text as integer), n.bus_rank)::varchar
        end                                                                   as gpu_id,
        case when starts_with(s.gpu_model, '[') then null else s.gpu_model end as gpu_model,
        coalesce(
            case when starts_with(s.instance_id, '[') then null else s.instance_id end,
            nullif(regexp_extract(s.host, '^(i-[0-9a-f]{8,17})(\.|$)', 1), '')
        )                                                                     as instance_id,
        null::varchar                                                         as job_name,
        null::varchar                                                         as pod,
        null::varchar                                                         as namespace,
        s.sampled_at,
        try_cast(regexp_extract(s.utilisation_text, '^-?[0-9.]+') as double)  as utilisation_pct,
        try_cast(regexp_extract(s.memory_used_text, '^-?[0-9.]+') as double) / 1024 as memory_used_gib,
        try_cast(regexp_extract(s.memory_total_text, '^-?[0-9.]+') as double) / 1024 as memory_total_gib,
        try_cast(regexp_extract(s.power_text, '^-?[0-9.]+') as double)        as power_w
    from source as s
    left join numbered as n
        on s.host = n.host and s.pci_bus_id is not distinct from n.pci_bus_id
)

select * from final

-- The samples of one nvidia-smi file (read and parsed by telemetry_nvidia_smi_raw), as
-- gpu_samples' columns. Grain: one row per GPU per line. The GPU's index: the index field if
-- queried, else its rank by PCI bus id on its host (0 first), the order nvidia-smi numbers GPUs in. The
-- instance: an instance_id field, else an EC2 resource-based host name (i-0123456789abcdef0.ec2.internal).
with source as (
    select
        * exclude (hostname, gpu_index),
        coalesce(hostname, $host) as host,
        -- $bus_keys / $bus_ranks: each host's PCI bus ids and their rank, found by code (a
        -- lookup in a bound list: a join would cost more than the rest of the insert)
        coalesce(
            gpu_index,
            $bus_ranks[list_position($bus_keys, coalesce(hostname, $host) || chr(31) || coalesce(pci_bus_id, ''))]
        )::integer as gpu_index
    from {raw}
),

final as (
    select
        $load_id                                            as load_id,
        $format                                             as source_format,
        $file_name                                          as source_file,
        s.source_row,
        s.host,
        s.gpu_index,
        coalesce(s.uuid, s.host || ':' || s.gpu_index::varchar) as gpu_id,
        s.gpu_model,
        coalesce(
            s.instance_id,
            nullif(regexp_extract(s.host, '^(i-[0-9a-f]{8,17})(\.|$)', 1), '')
        )                                                   as instance_id,
        null::varchar                                       as job_name,
        null::varchar                                       as pod,
        null::varchar                                       as namespace,
        s.sampled_at,
        s.utilisation_pct,
        s.memory_used_mib / 1024                            as memory_used_gib,
        s.memory_total_mib / 1024                           as memory_total_gib,
        -- The one-second mean first, then power.draw, then the instant reading (nvidia_smi's
        -- docstring says why).
        coalesce(s.power_average_w, s.power_draw_w, s.power_instant_w) as power_w
    from source as s
)

select * from final

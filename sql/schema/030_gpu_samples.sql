-- Grain: one row per GPU per sampling instant, from any telemetry source (nvidia-smi CSV,
-- Prometheus DCGM exporter query_range JSON, CloudWatch GetMetricData JSON of SageMaker jobs).
-- No primary key: at 100 million rows an index would cost more memory than the table; the
-- quality rule telemetry_sample_unique and the load's restatement keep (gpu_id, sampled_at) single.
create table if not exists gpu_samples (
    load_id           varchar not null,
    source_format     varchar not null,   -- nvidia_smi | prometheus_dcgm | cloudwatch_sagemaker
    source_file       varchar not null,
    source_row        bigint not null,
    host              varchar not null,
    gpu_id            varchar not null,   -- the GPU's UUID, else '<host>:<index>'
    gpu_index         integer,
    gpu_model         varchar,
    instance_id       varchar,            -- the cloud instance (i-...) when the source names it
    job_name          varchar,            -- SageMaker training job
    pod               varchar,
    namespace         varchar,
    sampled_at        timestamp not null, -- UTC
    utilisation_pct   double,             -- 0-100, of this one GPU
    memory_used_gib   double,
    memory_total_gib  double,
    power_w           double
);

comment on table gpu_samples is 'GPU utilisation telemetry. Grain: one row per GPU per sampling instant (nvidia-smi CSV, Prometheus DCGM exporter query_range JSON, CloudWatch GetMetricData of SageMaker training jobs). A sample stands for the time until the next sample of the same GPU. A delivery restates, for each GPU, the span from its first to its last sample: what earlier loads held there is replaced.';
comment on column gpu_samples.load_id is 'Lineage: the delivery (loads.load_id).';
comment on column gpu_samples.source_format is 'nvidia_smi | prometheus_dcgm | cloudwatch_sagemaker.';
comment on column gpu_samples.source_file is 'Lineage: the file the sample was read from.';
comment on column gpu_samples.source_row is 'Lineage: the data row of a CSV (1 = the first row after the header); for JSON sources the position of the sample in the file, series after series (1-based; the GPUs of one CloudWatch host share it).';
comment on column gpu_samples.host is 'The machine: nvidia-smi: the hostname column, else the file name <host>.nvidia-smi.csv; Prometheus: the Hostname label, else the instance label without its port; CloudWatch: the Host dimension (<training-job>/algo-<n>).';
comment on column gpu_samples.gpu_id is 'The GPU: its UUID (GPU-...) where the source gives one, else <host>:<gpu_index>.';
comment on column gpu_samples.gpu_index is 'The GPU''s index on its host: nvidia-smi index column, else its rank by PCI bus id (the order nvidia-smi numbers GPUs in); the DCGM gpu label; CloudWatch: 0..n-1 over the host''s GPUs.';
comment on column gpu_samples.gpu_model is 'As the source names it (nvidia-smi name, DCGM modelName; CloudWatch: the catalogue''s GPU of the job''s instance type).';
comment on column gpu_samples.instance_id is 'The EC2 instance (i-...), the billing lines'' resource id: an instance_id column or label, else the host''s EC2 resource-based name (i-0123456789abcdef0.ec2.internal); null otherwise (SageMaker hosts have none).';
comment on column gpu_samples.job_name is 'The SageMaker training job (the Host dimension before /algo-n); null for other sources.';
comment on column gpu_samples.pod is 'Kubernetes pod using the GPU (DCGM exported_pod, else pod); null outside Kubernetes.';
comment on column gpu_samples.namespace is 'Kubernetes namespace of the pod (DCGM exported_namespace, else namespace).';
comment on column gpu_samples.sampled_at is 'When the sample was taken, UTC (nvidia-smi writes the host''s local time without a zone: hosts are taken to run in UTC).';
comment on column gpu_samples.utilisation_pct is 'Share of the interval the GPU was busy, 0-100, of this GPU: nvidia-smi utilization.gpu; DCGM_FI_PROF_GR_ENGINE_ACTIVE x 100 where present, else DCGM_FI_DEV_GPU_UTIL; CloudWatch GPUUtilization divided by the host''s GPUs (CloudWatch sums it over them: every GPU row of the host carries the host''s mean). Null where the source wrote [N/A].';
comment on column gpu_samples.memory_used_gib is 'GPU memory in use, GiB (MiB / 1024); CloudWatch: GPUMemoryUtilization / GPUs / 100 x the GPU''s memory.';
comment on column gpu_samples.memory_total_gib is 'The GPU''s memory, GiB (DCGM: FB_USED + FB_FREE + FB_RESERVED where exported; CloudWatch: the catalogue''s).';
comment on column gpu_samples.power_w is 'Power draw, W (nvidia-smi power.draw, DCGM_FI_DEV_POWER_USAGE); null where not reported.';

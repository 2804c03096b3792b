-- MIG instances as fractions of their GPU (issue 32, item 3). A GPU partitioned with MIG is
-- exported by DCGM as one series per GPU instance (labels GPU_I_ID, GPU_I_PROFILE), all carrying
-- the parent's UUID: a sample's GPU is (gpu_id, mig_instance), and it stands for gpu_share of
-- its parent, the profile's compute slices out of the GPU's (7 on A100 / H100, 4 on A30).
alter table gpu_samples add column if not exists mig_instance varchar;
alter table gpu_samples add column if not exists mig_profile varchar;
alter table gpu_samples add column if not exists gpu_share double;
alter table gpu_usage_hourly add column if not exists mig_instance varchar;
alter table gpu_usage_hourly add column if not exists mig_profile varchar;
alter table gpu_usage_hourly add column if not exists gpu_share double;

comment on column gpu_samples.mig_instance is 'The MIG GPU instance (DCGM label GPU_I_ID) the sample is of; null: the whole GPU. gpu_id stays the parent GPU''s UUID, so (gpu_id, mig_instance, sampled_at) is one sample.';
comment on column gpu_samples.mig_profile is 'The MIG profile of the instance (DCGM label GPU_I_PROFILE, e.g. 3g.40gb); null: the whole GPU.';
comment on column gpu_samples.gpu_share is 'Share of the parent GPU the sample stands for: the profile''s compute slices over the GPU''s (3g.40gb on an A100 or H100: 3/7; A30: out of 4); null: the whole GPU (1).';
comment on column gpu_usage_hourly.mig_instance is 'The MIG GPU instance of the row (GPU_I_ID); null: the whole GPU. The grain is machine, GPU, MIG instance, hour and job.';
comment on column gpu_usage_hourly.mig_profile is 'The MIG profile of the instance (e.g. 3g.40gb); null: the whole GPU.';
comment on column gpu_usage_hourly.gpu_share is 'Share of the parent GPU the row''s hours are counted at (a MIG instance''s slices / the GPU''s); 1 for a whole GPU. A MIG instance''s GPU-hours are its time x this share, so the instances of a fully partitioned GPU add up to the GPU''s.';

-- A cross-region move's one-off copy of the class's data (issue 31, item 3): its size (the
-- largest latest checkpoint of the class's runs), its price at the provider's published
-- inter-region rate, or a note that it was not priced (size unknown, another cloud).
alter table gpu_plan add column if not exists data_transfer_gib double;
alter table gpu_plan add column if not exists data_transfer_usd decimal(18, 2);
alter table gpu_plan add column if not exists data_transfer_note varchar;

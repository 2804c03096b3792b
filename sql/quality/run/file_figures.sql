-- Grain: one row per file and currency of the batch, as read from the file itself (not from
-- what landed): the figures reconciles_with_file compares the loaded rows with.
create or replace temp table dq_file_figures (
    source_file       varchar,
    billing_currency  varchar,
    file_rows         bigint,
    file_billed_cost  decimal(38, 12)
)

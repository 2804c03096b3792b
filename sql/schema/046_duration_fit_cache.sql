-- Grain: one row per fitted duration group (its label): the latest fit of the group and the
-- fingerprint of what it was fitted on (the group's jobs in the fit window, the parameters, the
-- package version). A night whose group has the same fingerprint reuses the fit instead of
-- fitting again (athanor.model.nightly): a restated bill changes no job, so no fit.
create table if not exists duration_fit_cache (
    group_label   varchar primary key,  -- 'all', or the group's values joined by '/'
    fingerprint   varchar not null,     -- sha256 of the inputs
    record        json not null,        -- the fit's record, as the fit step returned it
    run_id        varchar not null,     -- the run that fitted it
    fitted_at     timestamp not null    -- UTC
);

comment on table duration_fit_cache is 'Grain: one row per duration-fit group label. The latest fit of each group with the fingerprint of its inputs (jobs in the fit window, parameters, package version); a run whose inputs have the same fingerprint reuses the fit.';
comment on column duration_fit_cache.group_label is 'The fitted group: all, or its grouping values (duration_fits.group_key).';
comment on column duration_fit_cache.fingerprint is 'sha256 of the group''s jobs as fitted, the grouping, the minimum group size and the package version.';
comment on column duration_fit_cache.record is 'The fit record (JSON) the fit step returned for these inputs.';
comment on column duration_fit_cache.run_id is 'pipeline_runs.run_id of the run that fitted it.';
comment on column duration_fit_cache.fitted_at is 'When it was fitted (UTC).';

-- What this warehouse's schema was built from: one row per definition (a schema file, or a
-- reference table with its data file) and the SHA-256 of the text last applied. connect()
-- applies nothing while every row matches the package (athanor.warehouse.migrations).
create table if not exists schema_migrations (
    name        varchar primary key,   -- 'schema/001_loads' or 'reference/instance_types'
    sha256      varchar not null,      -- of the file's text (and the reference data file)
    applied_at  timestamp not null
)

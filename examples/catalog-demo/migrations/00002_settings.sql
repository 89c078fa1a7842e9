-- Runtime settings of the catalog service, changed by an operator without a
-- restart (catalog settings set ...; every change is also an admin_audit
-- row). A missing row means the value of the configuration.

-- +goose Up
CREATE TABLE IF NOT EXISTS catalog_settings (
    name       text        PRIMARY KEY,
    value      text        NOT NULL,
    updated_by text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS catalog_settings;

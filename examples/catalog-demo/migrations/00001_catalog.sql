-- The catalog reference domain: its source of truth (videos) and its
-- Postgres read model (video_projection). eventrelay's own tables come from
-- the root migrations set, applied before this one.
--
-- IF NOT EXISTS: databases migrated before the split (one goose_db_version
-- for everything) already hold both tables, created by the old 00001 with
-- this exact shape; migrations.Up adopts their version table as
-- eventrelay's, and this set then records itself without touching the rows.

-- +goose Up

-- Source of truth of the reference domain.
CREATE TABLE IF NOT EXISTS videos (
    id              uuid        PRIMARY KEY,
    uploader_id     uuid        NOT NULL,
    title           text        NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    description     text        NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    duration_micros bigint      NOT NULL DEFAULT 0 CHECK (duration_micros >= 0),
    status          text        NOT NULL DEFAULT 'draft'
                                CHECK (status IN ('draft', 'published', 'archived')),
    media_status    text        NOT NULL DEFAULT 'pending'
                                CHECK (media_status IN ('pending', 'processing', 'ready', 'failed')),
    analysis_status text        NOT NULL DEFAULT 'pending'
                                CHECK (analysis_status IN ('pending', 'processing', 'ready', 'failed')),
    version         bigint      NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    deleted_at      timestamptz
);

-- Postgres read model of the reference domain. deleted_at set = tombstone;
-- version guards every write ("apply if newer").
CREATE TABLE IF NOT EXISTS video_projection (
    video_id        uuid        PRIMARY KEY,
    uploader_id     uuid        NOT NULL,
    title           text        NOT NULL,
    description     text        NOT NULL,
    duration_micros bigint      NOT NULL,
    status          text        NOT NULL,
    media_status    text        NOT NULL,
    analysis_status text        NOT NULL,
    version         bigint      NOT NULL,
    created_at      timestamptz NOT NULL,
    source_updated_at timestamptz NOT NULL,
    deleted_at      timestamptz,
    last_event_id   uuid        NOT NULL,
    occurred_at     timestamptz NOT NULL,
    projected_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS video_projection;
DROP TABLE IF EXISTS videos;

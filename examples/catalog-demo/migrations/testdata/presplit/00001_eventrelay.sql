-- The eventrelay tables and the catalog reference domain.
--
-- Names are unqualified on purpose: the migrate command creates the target
-- schema (default "catalog") and runs with search_path set to it, so one
-- toolkit serves many services, each in its own schema.

-- +goose Up

-- Source of truth of the reference domain.
CREATE TABLE videos (
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

-- Transactional outbox. One row per event; life cycle:
--   pending -> publishing (claimed under a lease, fenced by lock_token)
--           -> published | pending (retry with backoff) | failed (terminal)
CREATE TABLE outbox_events (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id          uuid        NOT NULL UNIQUE,
    aggregate_type    text        NOT NULL,
    aggregate_id      text        NOT NULL,
    aggregate_version bigint      NOT NULL CHECK (aggregate_version >= 1),
    event_type        text        NOT NULL,
    schema_version    integer     NOT NULL DEFAULT 1 CHECK (schema_version >= 1),
    ordering_key      text        NOT NULL,
    topic             text        NOT NULL,
    headers           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    payload           bytea       NOT NULL,
    occurred_at       timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),

    status            text        NOT NULL DEFAULT 'pending'
                                  CHECK (status IN ('pending', 'publishing', 'published', 'failed')),
    attempts          integer     NOT NULL DEFAULT 0,
    -- 'epoch' means "ready now" (fresh, reclaimed and replayed rows). Only a
    -- scheduled retry sets a real time. See outbox_events_blocking_idx.
    next_attempt_at   timestamptz NOT NULL DEFAULT 'epoch',
    locked_by         text,
    lock_token        uuid,
    lease_until       timestamptz,
    claimed_at        timestamptz,
    published_at      timestamptz,
    message_id        text,

    last_error        text,
    error_reason      text,
    error_history     jsonb       NOT NULL DEFAULT '[]'::jsonb,
    failed_at         timestamptz,
    replay_count      integer     NOT NULL DEFAULT 0,
    -- 'write': the event of a business change (one per aggregate version);
    -- 'rebuild': a restatement of the current state emitted by relayctl
    -- rebuild (new event id, same version) so projections can be rebuilt.
    origin            text        NOT NULL DEFAULT 'write' CHECK (origin IN ('write', 'rebuild'))
);

-- One business event per aggregate version; restatements are exempt.
CREATE UNIQUE INDEX outbox_events_aggregate_version_key
    ON outbox_events (aggregate_type, aggregate_id, aggregate_version)
    WHERE origin = 'write';

-- Claim: walk ready rows oldest first (index-only for the candidate scan).
CREATE INDEX outbox_events_pending_idx
    ON outbox_events (id) INCLUDE (next_attempt_at, topic, ordering_key, created_at)
    WHERE status = 'pending';

-- Head-of-line check: rows that may block later rows of the same key (in
-- flight, failed, or scheduled for a retry). Small by construction.
--
-- Why 'epoch' and not now() for "ready now": now() is the start of the
-- writing transaction, and claim transactions wait on the claim lock, so a
-- row whose next_attempt_at = now() of a transaction that started after the
-- claim's own now() would look "not ready" to the claim, yet not blocking:
-- its key's later versions would be claimed ahead of it. With the sentinel,
-- every pending row is either ready or in this index, and the claim decides
-- both with the same now(), so "ready" and "blocking" are complements.
CREATE INDEX outbox_events_blocking_idx
    ON outbox_events (topic, ordering_key, id)
    WHERE status IN ('publishing', 'failed')
       OR (status = 'pending' AND next_attempt_at > 'epoch'::timestamptz);

-- Reclaim of expired leases and stuck-row metrics.
CREATE INDEX outbox_events_publishing_idx
    ON outbox_events (lease_until) INCLUDE (claimed_at, locked_by)
    WHERE status = 'publishing';

-- Failed-row listing and replay filters.
CREATE INDEX outbox_events_failed_idx
    ON outbox_events (failed_at) INCLUDE (error_reason, topic, aggregate_type)
    WHERE status = 'failed';

-- Retention: published rows by age.
CREATE INDEX outbox_events_published_idx
    ON outbox_events (published_at)
    WHERE status = 'published';

-- Audit of every replay: who, when, why, which filter, which rows.
CREATE TABLE outbox_replays (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    requested_by text        NOT NULL CHECK (requested_by <> ''),
    reason       text        NOT NULL CHECK (reason <> ''),
    filter       jsonb       NOT NULL,
    from_status  text        NOT NULL,
    row_count    integer     NOT NULL,
    event_ids    uuid[]      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Audit of every other mutating admin command (dlq replay/purge, seek,
-- snapshot, rebuild, pubsub ensure, migrate).
CREATE TABLE admin_audit (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    command      text        NOT NULL,
    requested_by text        NOT NULL,
    reason       text        NOT NULL,
    details      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Consumer-side dedupe: one row per (consumer, event) applied.
CREATE TABLE inbox_events (
    consumer          text        NOT NULL,
    event_id          uuid        NOT NULL,
    aggregate_type    text        NOT NULL,
    aggregate_id      text        NOT NULL,
    aggregate_version bigint      NOT NULL,
    event_type        text        NOT NULL,
    message_id        text,
    received_at       timestamptz NOT NULL DEFAULT now(),
    processed_at      timestamptz,
    attempts          integer     NOT NULL DEFAULT 1,
    last_error        text,
    PRIMARY KEY (consumer, event_id)
);

CREATE INDEX inbox_events_processed_idx ON inbox_events (consumer, processed_at);

-- Postgres read model of the reference domain. deleted_at set = tombstone;
-- version guards every write ("apply if newer").
CREATE TABLE video_projection (
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
DROP TABLE IF EXISTS inbox_events;
DROP TABLE IF EXISTS admin_audit;
DROP TABLE IF EXISTS outbox_replays;
DROP TABLE IF EXISTS outbox_events;
DROP TABLE IF EXISTS videos;

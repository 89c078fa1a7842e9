-- Room in each outbox page for the row's next versions.
--
-- A row is written three times: inserted by the service, updated by the
-- claim (status publishing, lock token, lease) and by the outcome
-- (published). An update that finds no room in the row's page puts the new
-- version in another page and writes all of it to the WAL, payload
-- included; one that stays in the page writes only the bytes that changed
-- (the status and lock columns, which follow the payload). So with full
-- pages the publisher wrote about twice the writers' WAL again, and the
-- writers' commits wait for those bytes to reach the disk too.
--
-- Measured (10,000 rows of 938 bytes, claims and outcomes of 25 rows, WAL
-- bytes per row): fillfactor 100 (the default): insert 1,626, claim 1,632,
-- outcome 1,418; fillfactor 50: insert 1,627, claim 716, outcome 521, and
-- the heap after the three versions was 20 MB instead of 29 MB (the old
-- versions' space is reused in place). The rest of a claim's WAL is its
-- index entries.
--
-- Only pages written from now on are affected; ALTER TABLE ... SET takes a
-- SHARE UPDATE EXCLUSIVE lock (writers and the publisher keep running).

-- +goose Up
ALTER TABLE outbox_events SET (fillfactor = 50);

-- +goose Down
ALTER TABLE outbox_events RESET (fillfactor);

-- Room in each outbox page for the claim's and the mark's versions of all
-- its rows.
--
-- A row has three versions: the insert, the claim's (a HOT update of the
-- lock columns) and the mark's (status published: not HOT, a status index
-- changes). The mark marks a page's rows in one transaction, so while it
-- runs the page holds every row's claim version and mark version; the
-- insert versions are dead by then and pruned on the mark's first read of
-- the page. With pages filled to 50 % those two versions of every row take
-- the whole page, and the last row's mark version went to another page:
-- written to the WAL in full (payload included, 870 bytes instead of 150)
-- with a row lock besides, about 130 bytes per event in the bench's cost
-- scenario. At 45 % they take 90 % of the page, the rest left for the
-- page's header and line pointers, so every mark stays in its page,
-- whatever the row's size. For rows of about 800 bytes the table after
-- the three versions is the same size (20.7 MB for 10,000 rows at 50 and
-- 45 %): the marks that moved filled other pages. A backlog drains about
-- 12 % slower (four such rows to a page instead of five). See
-- docs/decisions/0021-outbox-fillfactor-45.md.
--
-- Only pages written from now on are affected; ALTER TABLE ... SET takes a
-- SHARE UPDATE EXCLUSIVE lock (writers and the publisher keep running).

-- +goose Up
ALTER TABLE outbox_events SET (fillfactor = 45);

-- +goose Down
ALTER TABLE outbox_events SET (fillfactor = 50);

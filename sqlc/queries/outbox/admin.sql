-- Queries of the admin CLI (relayctl). Read-mostly; every mutation here is
-- paired with an audit row written in the same transaction.

-- ServerIdentity is what the migrate guard compares --expect-db and
-- --expect-host against. server_addr is empty over a Unix socket.
-- name: ServerIdentity :one
SELECT current_database()::text AS database,
       coalesce(host(inet_server_addr()), '')::text AS server_addr,
       coalesce(inet_server_port(), 0)::int AS server_port;

-- name: AdminAuditExists :one
SELECT (to_regclass('admin_audit') IS NOT NULL)::boolean AS present;

-- name: InsertAdminAudit :one
INSERT INTO admin_audit (command, requested_by, reason, details)
VALUES (@command, @requested_by, @reason, @details)
RETURNING id, created_at;

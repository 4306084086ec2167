-- Upgrade: creates ductus_take_1, the stored procedure that runs a fenced take (lock the actor, check the lease, re-adopt an earlier generation's claims, move the first due ready rows to claimed, read them) in one CALL
-- Heavy: none (a procedure only)

-- Why a procedure: the same take sent as a multi-statement text batch was
-- eleven statements, each parsed and optimized again on every take and
-- each answered with a packet of its own; a procedure's statements are
-- parsed once per connection, it answers with its two result sets only,
-- and local variables let LIMIT take the computed room (an earlier
-- generation's claims count against the limit), which a text statement
-- could only express with a window function over a derived table.
--
-- It runs inside the caller's transaction (READ COMMITTED): MessageTake
-- wraps it in START TRANSACTION ... COMMIT, and TurnCommit calls it after
-- its writes to take the next batch. p_guard is the caller's own fence
-- (TurnCommit passes its @ductus_ok): with it false the procedure takes
-- nothing.
--
-- The fence is evaluated with SYSDATE(6), the time at which the statement
-- runs, after the actor row is locked: NOW(6) inside a procedure is the
-- time the CALL started, and a take that waited for the lock past its
-- lease's expiry must be refused. The guard is a query's answer, never
-- ROW_COUNT() (see adapters/mysql/turn.go).
--
-- Result sets: (ok, taken): ok is 1 when owner, generation and an
-- unexpired lease matched, taken how many rows it re-adopted or moved;
-- then the generation's claimed messages in sequence order (none when it
-- took nothing).
-- Expand-only: a change makes ductus_take_2 and leaves this one for
-- binaries that still call it.
-- +ductus StatementBegin
CREATE PROCEDURE ductus_take_1(
    IN p_pk BIGINT, IN p_owner VARBINARY(255), IN p_gen BIGINT, IN p_limit INT, IN p_guard TINYINT)
    MODIFIES SQL DATA
BEGIN
    DECLARE v_ok INT DEFAULT 0;
    DECLARE v_take INT DEFAULT 0;
    DECLARE v_taken INT DEFAULT 0;
    DECLARE v_old INT DEFAULT 0;
    DECLARE v_room INT DEFAULT 0;
    DECLARE v_ready INT DEFAULT 0;
    DECLARE v_moved TINYINT DEFAULT 0;
    DECLARE v_first BIGINT DEFAULT NULL;
    DECLARE v_stop BIGINT DEFAULT NULL;
    DECLARE v_at DATETIME(6);
    -- Lock the row first (held until the caller's COMMIT: a claimer skips
    -- a locked row), then read the fence under the lock.
    UPDATE ductus_actors SET state_version = state_version WHERE pk = p_pk;
    SET v_at = SYSDATE(6);
    SELECT COUNT(*), COALESCE(SUM(paused = 0), 0) INTO v_ok, v_take FROM ductus_actors
        WHERE pk = p_pk AND lease_owner = p_owner AND generation = p_gen AND lease_expires > v_at;
    IF v_take = 1 AND p_guard THEN
        -- "generation + 0" keeps the test off the index: the scan is the
        -- actor's own rows, never a range reaching another actor's.
        SELECT COUNT(*) INTO v_old FROM ductus_claimed FORCE INDEX (ductus_claimed_actor)
            WHERE actor_pk = p_pk AND generation + 0 < p_gen;
        IF v_old > 0 THEN
            UPDATE ductus_claimed FORCE INDEX (ductus_claimed_actor) SET generation = p_gen, attempt = attempt + 1, claimed_at = v_at
                WHERE actor_pk = p_pk AND generation + 0 < p_gen;
        END IF;
        SET v_room = p_limit - v_old;
        IF v_room > 0 THEN
            -- The first ready message not yet due (backing off, or
            -- delayed) holds back every later one; only the first v_room
            -- rows are looked at, so a take costs the same whatever the
            -- mailbox or the history holds. With nothing due, nothing is
            -- written (a commit's TakeNext often finds nothing).
            SELECT COUNT(*), MIN(x.seq), MIN(CASE WHEN x.due_at > v_at THEN x.seq END) INTO v_ready, v_first, v_stop FROM (
                SELECT seq, due_at FROM ductus_ready FORCE INDEX (ductus_ready_actor_seq)
                WHERE actor_pk = p_pk ORDER BY seq LIMIT v_room) x;
            IF v_ready > 0 AND (v_stop IS NULL OR v_stop > v_first) THEN
                INSERT INTO ductus_claimed (message_id, actor_pk, seq, generation, attempt, claimed_at)
                    SELECT r.message_id, r.actor_pk, r.seq, p_gen, m.attempts + 1, v_at
                    FROM ductus_ready r FORCE INDEX (ductus_ready_actor_seq) STRAIGHT_JOIN ductus_messages m ON m.id = r.message_id
                    WHERE r.actor_pk = p_pk AND (v_stop IS NULL OR r.seq < v_stop)
                    ORDER BY r.seq LIMIT v_room;
                DELETE r FROM ductus_claimed c FORCE INDEX (ductus_claimed_actor) STRAIGHT_JOIN ductus_ready r ON r.message_id = c.message_id
                    WHERE c.actor_pk = p_pk AND c.generation = p_gen AND c.claimed_at = v_at;
                SET v_moved = 1;
            END IF;
        END IF;
        IF v_old > 0 OR v_moved THEN
            SELECT COUNT(*) INTO v_taken FROM ductus_claimed FORCE INDEX (ductus_claimed_actor)
                WHERE actor_pk = p_pk AND generation = p_gen AND claimed_at = v_at;
        END IF;
    END IF;
    SELECT v_ok, v_taken;
    SELECT c.message_id, c.seq, m.name, m.args, c.attempt, m.ask, m.enqueued_at, m.available_at
        FROM ductus_claimed c FORCE INDEX (ductus_claimed_actor) STRAIGHT_JOIN ductus_messages m ON m.id = c.message_id
        WHERE c.actor_pk = p_pk AND c.generation = p_gen AND v_taken > 0 ORDER BY c.seq;
END;
-- +ductus StatementEnd

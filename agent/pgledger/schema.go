package pgledger

// schema creates the store's tables and functions; New runs it once per
// process, under an advisory lock, so that processes starting together do
// not race on CREATE. Every statement is idempotent. Every operation of
// the store is one call of one function: one round trip, one transaction,
// with the scope's row locked (FOR UPDATE) for its whole length, so that
// the operations of one scope are serialised and those of different
// scopes never wait on each other.
//
// Money is numeric: exact decimal arithmetic, any precision.
const schema = `
CREATE TABLE IF NOT EXISTS preflight_scopes (
	scope text PRIMARY KEY,
	spent numeric NOT NULL DEFAULT 0,
	held  numeric NOT NULL DEFAULT 0,
	calls bigint  NOT NULL DEFAULT 0,
	seq   bigint  NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS preflight_holds (
	scope   text        NOT NULL,
	id      text        NOT NULL,
	amount  numeric     NOT NULL,
	started boolean     NOT NULL,
	expires timestamptz NOT NULL,
	PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS preflight_holds_expires ON preflight_holds (scope, expires);
-- state: 0 settled, 1 settled late, 3 released, 4 charged at lease expiry.
CREATE TABLE IF NOT EXISTS preflight_ended (
	scope text        NOT NULL,
	id    text        NOT NULL,
	state smallint    NOT NULL,
	cost  numeric     NOT NULL,
	nonce text        NOT NULL DEFAULT '',
	at    timestamptz NOT NULL,
	PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS preflight_ended_at ON preflight_ended (scope, at);
CREATE TABLE IF NOT EXISTS preflight_entries (
	scope   text        NOT NULL,
	seq     bigint      NOT NULL,
	call_id text        NOT NULL,
	fp      text        NOT NULL,
	outcome text        NOT NULL,
	ref     text        NOT NULL,
	goal    text        NOT NULL,
	rank    smallint    NOT NULL,
	at      timestamptz NOT NULL,
	PRIMARY KEY (scope, seq)
);
CREATE INDEX IF NOT EXISTS preflight_entries_fp ON preflight_entries (scope, fp, seq);
CREATE INDEX IF NOT EXISTS preflight_entries_rank ON preflight_entries (scope, rank, seq);

-- preflight_open locks the scope's row (creating it), charges or gives
-- back the holds whose lease expired and forgets ended ids older than
-- keep_ms (a few per call).
CREATE OR REPLACE FUNCTION preflight_open(s text, keep_ms bigint) RETURNS preflight_scopes
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	r preflight_scopes;
	gone_held numeric;
	gone_spent numeric;
BEGIN
	INSERT INTO preflight_scopes (scope) VALUES (s) ON CONFLICT DO NOTHING;
	SELECT * INTO r FROM preflight_scopes WHERE scope = s FOR UPDATE;
	WITH gone AS (
		DELETE FROM preflight_holds WHERE scope = s AND expires <= clock_timestamp()
		RETURNING id, amount, started
	), charged AS (
		INSERT INTO preflight_ended (scope, id, state, cost, at)
		SELECT s, id, 4, amount, clock_timestamp() FROM gone WHERE started
		ON CONFLICT DO NOTHING
	)
	SELECT coalesce(sum(amount), 0), coalesce(sum(amount) FILTER (WHERE started), 0)
	INTO gone_held, gone_spent FROM gone;
	IF gone_held > 0 OR gone_spent > 0 THEN
		UPDATE preflight_scopes SET held = held - gone_held, spent = spent + gone_spent
		WHERE scope = s RETURNING * INTO r;
	END IF;
	IF keep_ms > 0 THEN
		DELETE FROM preflight_ended WHERE ctid IN (
			SELECT ctid FROM preflight_ended
			WHERE scope = s AND at < clock_timestamp() - keep_ms * interval '1 millisecond' LIMIT 8);
	END IF;
	RETURN r;
END $$;

CREATE OR REPLACE FUNCTION preflight_reserve(s text, rid text, amount numeric, lim numeric,
	max_calls bigint, lease_ms bigint, is_started boolean, keep_ms bigint,
	OUT ok int, OUT spent numeric, OUT held numeric, OUT calls bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	r preflight_scopes;
BEGIN
	r := preflight_open(s, keep_ms);
	spent := r.spent; held := r.held; calls := r.calls;
	IF EXISTS (SELECT 1 FROM preflight_holds h WHERE h.scope = s AND h.id = rid) THEN
		ok := 1; RETURN;
	END IF;
	IF EXISTS (SELECT 1 FROM preflight_ended e WHERE e.scope = s AND e.id = rid) THEN
		ok := -1; RETURN;
	END IF;
	IF (amount > 0 AND lim IS NOT NULL AND r.spent + r.held + amount > lim)
		OR (max_calls > 0 AND r.calls + 1 > max_calls) THEN
		ok := 0; RETURN;
	END IF;
	INSERT INTO preflight_holds VALUES (s, rid, amount, is_started,
		clock_timestamp() + lease_ms * interval '1 millisecond');
	UPDATE preflight_scopes SET held = preflight_scopes.held + amount, calls = preflight_scopes.calls + 1
	WHERE scope = s RETURNING preflight_scopes.spent, preflight_scopes.held, preflight_scopes.calls
	INTO spent, held, calls;
	ok := 1;
END $$;

-- preflight_record appends an entry under the retention rules of
-- agent.Ledger. The caller holds the scope's row.
CREATE OR REPLACE FUNCTION preflight_record(s text, e_id text, e_fp text, e_outcome text,
	e_ref text, e_goal text, max_entries int) RETURNS void
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	n bigint;
	e_rank smallint;
	e_seq bigint;
BEGIN
	IF e_outcome = 'success' THEN
		DELETE FROM preflight_entries WHERE scope = s AND fp = e_fp AND outcome = 'success'
			AND goal = e_goal AND (e_ref <> '' OR ref = '');
	ELSIF e_outcome = 'transient_failure' THEN
		DELETE FROM preflight_entries WHERE scope = s AND fp = e_fp AND outcome = 'transient_failure';
	END IF;
	e_rank := CASE WHEN e_outcome = 'transient_failure' THEN 0
		WHEN e_outcome = 'success' AND e_ref = '' THEN 1
		WHEN e_outcome = 'success' THEN 2 ELSE 3 END;
	UPDATE preflight_scopes SET seq = seq + 1 WHERE scope = s RETURNING seq INTO e_seq;
	INSERT INTO preflight_entries VALUES (s, e_seq, e_id, e_fp, e_outcome, e_ref, e_goal, e_rank, clock_timestamp());
	SELECT count(*) INTO n FROM preflight_entries WHERE scope = s;
	WHILE n > max_entries LOOP
		DELETE FROM preflight_entries WHERE scope = s AND seq = (
			SELECT seq FROM preflight_entries WHERE scope = s AND seq <> e_seq ORDER BY rank, seq LIMIT 1);
		n := n - 1;
	END LOOP;
END $$;

CREATE OR REPLACE FUNCTION preflight_settle(s text, rid text, p_cost numeric, p_nonce text, keep_ms bigint,
	e_id text, e_fp text, e_outcome text, e_ref text, e_goal text, max_entries int,
	OUT state int, OUT late boolean, OUT counted numeric, OUT spent numeric, OUT held numeric, OUT calls bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	r preflight_scopes;
	d preflight_ended;
	h preflight_holds;
BEGIN
	r := preflight_open(s, keep_ms);
	SELECT * INTO d FROM preflight_ended WHERE scope = s AND id = rid;
	late := true;
	IF FOUND AND d.state IN (0, 1) THEN
		late := d.state = 1; counted := d.cost;
		spent := r.spent; held := r.held; calls := r.calls;
		state := CASE WHEN d.nonce = p_nonce THEN d.state ELSE 2 END;
		RETURN;
	END IF;
	IF FOUND AND d.state = 4 THEN
		r.spent := r.spent - d.cost;
	ELSIF NOT FOUND THEN
		DELETE FROM preflight_holds WHERE scope = s AND id = rid RETURNING * INTO h;
		IF FOUND THEN
			r.held := r.held - h.amount; late := false;
		END IF;
	END IF;
	r.spent := r.spent + p_cost;
	INSERT INTO preflight_ended VALUES (s, rid, CASE WHEN late THEN 1 ELSE 0 END, p_cost, p_nonce, clock_timestamp())
		ON CONFLICT (scope, id) DO UPDATE SET state = excluded.state, cost = excluded.cost,
			nonce = excluded.nonce, at = excluded.at;
	UPDATE preflight_scopes SET spent = r.spent, held = r.held WHERE scope = s;
	IF e_fp <> '' THEN
		PERFORM preflight_record(s, e_id, e_fp, e_outcome, e_ref, e_goal, max_entries);
	END IF;
	state := CASE WHEN late THEN 1 ELSE 0 END; counted := p_cost;
	spent := r.spent; held := r.held; calls := r.calls;
END $$;

CREATE OR REPLACE FUNCTION preflight_release(s text, rid text, keep_ms bigint) RETURNS void
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	r preflight_scopes;
	h preflight_holds;
	d preflight_ended;
BEGIN
	r := preflight_open(s, keep_ms);
	DELETE FROM preflight_holds WHERE scope = s AND id = rid RETURNING * INTO h;
	IF FOUND THEN
		UPDATE preflight_scopes SET held = held - h.amount WHERE scope = s;
		INSERT INTO preflight_ended VALUES (s, rid, 3, 0, '', clock_timestamp()) ON CONFLICT DO NOTHING;
		RETURN;
	END IF;
	SELECT * INTO d FROM preflight_ended WHERE scope = s AND id = rid;
	IF FOUND AND d.state = 4 THEN
		UPDATE preflight_scopes SET spent = spent - d.cost WHERE scope = s;
		UPDATE preflight_ended SET state = 3, cost = 0 WHERE scope = s AND id = rid;
	END IF;
END $$;

CREATE OR REPLACE FUNCTION preflight_cancel(s text, rid text, keep_ms bigint) RETURNS void
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	r preflight_scopes;
	h preflight_holds;
	d preflight_ended;
BEGIN
	r := preflight_open(s, keep_ms);
	DELETE FROM preflight_holds WHERE scope = s AND id = rid RETURNING * INTO h;
	IF FOUND THEN
		UPDATE preflight_scopes SET held = held - h.amount, calls = calls - 1 WHERE scope = s;
		INSERT INTO preflight_ended VALUES (s, rid, 3, 0, '', clock_timestamp()) ON CONFLICT DO NOTHING;
		RETURN;
	END IF;
	SELECT * INTO d FROM preflight_ended WHERE scope = s AND id = rid;
	IF FOUND AND d.state = 4 THEN
		UPDATE preflight_scopes SET spent = spent - d.cost, calls = calls - 1 WHERE scope = s;
		UPDATE preflight_ended SET state = 3, cost = 0 WHERE scope = s AND id = rid;
	END IF;
END $$;

CREATE OR REPLACE FUNCTION preflight_renew(s text, ids text[], lease_ms bigint, keep_ms bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
	n bigint;
BEGIN
	PERFORM preflight_open(s, keep_ms);
	UPDATE preflight_holds SET expires = clock_timestamp() + lease_ms * interval '1 millisecond'
	WHERE scope = s AND id = ANY (ids);
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;

CREATE OR REPLACE FUNCTION preflight_append(s text, e_id text, e_fp text, e_outcome text,
	e_ref text, e_goal text, max_entries int, keep_ms bigint) RETURNS void
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	PERFORM preflight_open(s, keep_ms);
	PERFORM preflight_record(s, e_id, e_fp, e_outcome, e_ref, e_goal, max_entries);
END $$;

-- preflight_state returns the balance and the store's clock, then, one row
-- each, the entries of fingerprint fp (every entry when all), oldest
-- first. The first row carries the balance; it has no entry when there is
-- none. It only reads (no lock, nothing to commit): holds whose lease
-- expired are counted as the next writer will reap them.
CREATE OR REPLACE FUNCTION preflight_state(s text, fp_want text, all_entries boolean, keep_ms bigint)
RETURNS TABLE (spent numeric, held numeric, calls bigint, now_ms bigint,
	call_id text, fp text, outcome text, ref text, goal text, at_ms bigint)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
	r preflight_scopes;
	t timestamptz := clock_timestamp();
	gone_held numeric;
	gone_spent numeric;
BEGIN
	SELECT * INTO r FROM preflight_scopes WHERE scope = s;
	IF NOT FOUND THEN
		r.spent := 0; r.held := 0; r.calls := 0;
	END IF;
	SELECT coalesce(sum(h.amount), 0), coalesce(sum(h.amount) FILTER (WHERE h.started), 0)
	INTO gone_held, gone_spent
	FROM preflight_holds h WHERE h.scope = s AND h.expires <= t;
	RETURN QUERY SELECT r.spent + gone_spent, r.held - gone_held, r.calls,
		(extract(epoch FROM t) * 1000)::bigint, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::bigint;
	RETURN QUERY SELECT NULL::numeric, NULL::numeric, NULL::bigint, NULL::bigint,
		e.call_id, e.fp, e.outcome, e.ref, e.goal, (extract(epoch FROM e.at) * 1000)::bigint
	FROM preflight_entries e
	WHERE e.scope = s AND (all_entries OR e.fp = fp_want) ORDER BY e.seq;
END $$;
`

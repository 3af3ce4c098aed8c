"""The PostgreSQL schema, as an ordered list of migrations recorded in the ``migrations``
table, under the discipline of ``sqlite_migrations``: never edit a shipped migration,
append a new function to ``MIGRATIONS``.

The first migration creates what SQLite has after all of its own: the same tables,
columns (in the same order: some inserts name none), indexes and triggers, with
PostgreSQL's types: BIGINT for INTEGER (SQLite's are 64-bit), DOUBLE PRECISION for
REAL, BYTEA for vectors (little-endian float32, as in SQLite). The keyword indexes are
tables of ``tsvector`` kept by triggers (SQLite: FTS5 tables), so ``SELECT *`` of a
lesson or a run reads the same columns on both backends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reflect.store.base import NewerSchema

# Words as SQLite's unicode61 tokenizer (remove_diacritics 2) splits them: lowercase runs
# of letters and digits, the common Latin diacritics folded; no stemmer and no stop
# words, so recall can pick a goal's rarest terms. A word a tsvector cannot hold (2 kB
# and more: a blob in an error message) is left out.
WORDS = """
CREATE FUNCTION reflect_words(body TEXT) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_remove(regexp_split_to_array(translate(lower(body),
        'àáâãäåāăąçćčďèéêëēėęěìíîïīįłñńňòóôõöøōőŕřśšşťùúûüūůűųýÿźżž',
        'aaaaaaaaacccdeeeeeeeeiiiiiilnnnooooooooorrsssstuuuuuuuuyyzzz'),
        '[^[:alnum:]]+'), '')
$$;
-- The words with their positions (1, 2, …): a term's count in the text is the number
-- of its positions, as BM25 wants it.
CREATE FUNCTION reflect_tsvector(words TEXT[]) RETURNS TSVECTOR
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(string_agg(format('''%s'':%s', w, p), ' '), '')::tsvector
    FROM unnest(words) WITH ORDINALITY AS t (w, p) WHERE octet_length(w) < 2000
$$;
"""

TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE lessons (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    fingerprint TEXT NOT NULL,
    trigger TEXT NOT NULL,
    guidance TEXT NOT NULL,
    category TEXT NOT NULL,
    severity TEXT NOT NULL,
    kind TEXT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    resolution TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    cost_usd DOUBLE PRECISION,
    quarantine TEXT NOT NULL DEFAULT '',
    superseded_by TEXT NOT NULL DEFAULT '',
    evidence BIGINT NOT NULL DEFAULT 1,
    scope TEXT NOT NULL DEFAULT 'global',
    error_text TEXT NOT NULL DEFAULT '',
    prior DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    wins DOUBLE PRECISION NOT NULL DEFAULT 0,
    losses BIGINT NOT NULL DEFAULT 0,
    injected BIGINT NOT NULL DEFAULT 0,
    last_used DOUBLE PRECISION NOT NULL DEFAULT 0,
    pinned BIGINT NOT NULL DEFAULT 0,
    origin TEXT NOT NULL DEFAULT 'here'
);
CREATE INDEX lessons_fingerprint ON lessons (fingerprint, status);
CREATE INDEX lessons_elsewhere ON lessons (status) WHERE origin != 'here';
-- No foreign key to lessons: SQLite does not enforce its own (foreign_keys is off), and
-- the store relies on that: a forgotten lesson leaves its failures in place.
CREATE TABLE failures (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL,
    iteration BIGINT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    goal TEXT NOT NULL,
    phase TEXT NOT NULL,
    action TEXT NOT NULL,
    exit_code BIGINT,
    error_type TEXT NOT NULL,
    message TEXT NOT NULL,
    signature TEXT NOT NULL,
    friction TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    source TEXT NOT NULL,
    redactions BIGINT NOT NULL,
    category TEXT NOT NULL,
    severity TEXT NOT NULL,
    lesson_id TEXT NOT NULL,
    resolution TEXT NOT NULL DEFAULT '',
    cause TEXT NOT NULL DEFAULT ''
);
CREATE INDEX failures_run_seq ON failures (run, seq);
CREATE INDEX failures_fingerprint ON failures (fingerprint);
CREATE INDEX failures_fingerprint_run ON failures (fingerprint, run);
CREATE INDEX failures_cause_run ON failures (cause, run);
CREATE INDEX failures_cause_seq ON failures (cause, seq);
-- The durable queue: workers on any number of machines lease from it with
-- FOR UPDATE SKIP LOCKED; a lease that runs out makes the job available again.
CREATE TABLE jobs (
    id BIGSERIAL PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    run TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'queued',
    attempts BIGINT NOT NULL DEFAULT 0,
    due DOUBLE PRECISION NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    reason TEXT NOT NULL DEFAULT '',
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL
);
CREATE INDEX jobs_state_due ON jobs (state, due);
CREATE UNIQUE INDEX jobs_queued_once ON jobs (kind, target) WHERE state = 'queued';
CREATE TABLE breaker (
    provider TEXT PRIMARY KEY,
    failures BIGINT NOT NULL,
    open_until DOUBLE PRECISION NOT NULL
);
CREATE TABLE spend (
    day TEXT NOT NULL,
    run TEXT NOT NULL,
    calls BIGINT NOT NULL,
    cost_usd DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (day, run)
);
CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    pid BIGINT NOT NULL,
    host TEXT NOT NULL,
    started DOUBLE PRECISION NOT NULL,
    heartbeat DOUBLE PRECISION NOT NULL
);
CREATE TABLE lesson_vectors (
    lesson_id TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (lesson_id, model)
);
CREATE TABLE vector_generations (model TEXT PRIMARY KEY, generation BIGINT NOT NULL);
CREATE TABLE query_vectors (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    vector BYTEA,
    created DOUBLE PRECISION NOT NULL
);
CREATE TABLE injections (
    id BIGSERIAL PRIMARY KEY,
    run TEXT NOT NULL,
    iteration BIGINT NOT NULL,
    lesson_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    section TEXT NOT NULL,
    rank BIGINT NOT NULL,
    score DOUBLE PRECISION NOT NULL,
    tokens BIGINT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX injections_run_iteration ON injections (run, iteration);
CREATE INDEX injections_lesson ON injections (lesson_id);
CREATE TABLE removals (
    lesson_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    reason TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL
);
CREATE TABLE fingerprints (fingerprint TEXT PRIMARY KEY, cause TEXT NOT NULL);
CREATE INDEX fingerprints_cause ON fingerprints (cause);
CREATE TABLE causes (
    cause TEXT PRIMARY KEY,
    runs BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL
);
CREATE INDEX causes_runs ON causes (runs);
CREATE TABLE benign (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    run TEXT NOT NULL,
    iteration BIGINT NOT NULL,
    ts DOUBLE PRECISION NOT NULL,
    phase TEXT NOT NULL,
    action TEXT NOT NULL,
    exit_code BIGINT,
    program TEXT NOT NULL
);
CREATE INDEX benign_run_seq ON benign (run, seq);
CREATE TABLE successes (
    seq BIGSERIAL PRIMARY KEY,
    run TEXT NOT NULL,
    iteration BIGINT NOT NULL,
    action TEXT NOT NULL,
    ts DOUBLE PRECISION NOT NULL
);
CREATE INDEX successes_run_iteration ON successes (run, iteration);
CREATE TABLE runs (
    seq BIGSERIAL PRIMARY KEY,
    run TEXT NOT NULL UNIQUE,
    goal TEXT NOT NULL,
    goal_key TEXT NOT NULL,
    scope TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    vector_change BIGINT
);
CREATE INDEX runs_goal_key ON runs (goal_key);
CREATE INDEX runs_scope ON runs (scope);
CREATE INDEX runs_vector_change ON runs (vector_change);
"""

# SQLite's FTS5 tables and their vocabularies, and the triggers that keep them.
KEYWORDS = """
-- A lesson's words (trigger, guidance, error text), for keyword search.
CREATE TABLE lesson_words (
    seq BIGINT PRIMARY KEY REFERENCES lessons (seq) ON DELETE CASCADE,
    words TSVECTOR NOT NULL,
    tokens INTEGER NOT NULL
);
CREATE INDEX lesson_words_gin ON lesson_words USING gin (words);
CREATE FUNCTION lessons_words() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found TEXT[] := reflect_words(concat_ws(' ', new.trigger, new.guidance, new.error_text));
BEGIN
    INSERT INTO lesson_words VALUES (new.seq, reflect_tsvector(found), cardinality(found))
    ON CONFLICT (seq) DO UPDATE SET words = excluded.words, tokens = excluded.tokens;
    RETURN NULL;
END $$;
CREATE TRIGGER lessons_words AFTER INSERT OR UPDATE OF trigger, guidance, error_text
ON lessons FOR EACH ROW EXECUTE FUNCTION lessons_words();
-- A deleted lesson takes its vectors with it.
CREATE FUNCTION lessons_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lesson_vectors WHERE lesson_id = old.id;
    RETURN NULL;
END $$;
CREATE TRIGGER lessons_delete AFTER DELETE ON lessons
FOR EACH ROW EXECUTE FUNCTION lessons_delete();

-- A run goal's words, and how many goals hold each word (SQLite: runs_vocab), by which
-- recall picks a goal's rarest terms. The words are counted in order, so that two runs
-- registered at once lock the same rows in the same order.
CREATE TABLE run_words (
    seq BIGINT PRIMARY KEY REFERENCES runs (seq) ON DELETE CASCADE,
    words TSVECTOR NOT NULL,
    tokens INTEGER NOT NULL
);
CREATE INDEX run_words_gin ON run_words USING gin (words);
CREATE TABLE runs_vocab (term TEXT PRIMARY KEY, doc BIGINT NOT NULL);
CREATE FUNCTION runs_words_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found TEXT[] := reflect_words(new.goal);
    terms TSVECTOR := reflect_tsvector(found);
BEGIN
    INSERT INTO run_words VALUES (new.seq, terms, cardinality(found));
    INSERT INTO runs_vocab
        SELECT t, 1 FROM unnest(tsvector_to_array(terms)) AS t ORDER BY t
    ON CONFLICT (term) DO UPDATE SET doc = runs_vocab.doc + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_words_insert AFTER INSERT ON runs
FOR EACH ROW EXECUTE FUNCTION runs_words_insert();
CREATE FUNCTION runs_words_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    terms TEXT[] := ARRAY(SELECT DISTINCT t FROM unnest(reflect_words(old.goal)) AS t
                          ORDER BY t);
BEGIN
    UPDATE runs_vocab SET doc = doc - 1 WHERE term = ANY (terms);
    DELETE FROM runs_vocab WHERE term = ANY (terms) AND doc <= 0;
    RETURN NULL;
END $$;
CREATE TRIGGER runs_words_delete AFTER DELETE ON runs
FOR EACH ROW EXECUTE FUNCTION runs_words_delete();
"""

# Stamps kept by triggers: a model's vector generation (stamps the lesson index file),
# the count of run goals with a vector, each such run stamped with the count's value
# then (a process brings its run-goal index file up to date with the runs changed
# since), and a count of removals (after which the file is rebuilt). PostgreSQL's WHEN
# clauses cannot hold a subquery: SQLite's tests of other tables move into the functions.
STAMPS = """
CREATE FUNCTION lesson_vectors_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_generations VALUES (new.model, 1)
    ON CONFLICT (model) DO UPDATE SET generation = vector_generations.generation + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER lesson_vectors_insert AFTER INSERT ON lesson_vectors
FOR EACH ROW EXECUTE FUNCTION lesson_vectors_insert();
CREATE FUNCTION lesson_vectors_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE vector_generations SET generation = generation + 1 WHERE model = old.model;
    RETURN NULL;
END $$;
CREATE TRIGGER lesson_vectors_delete AFTER DELETE ON lesson_vectors
FOR EACH ROW EXECUTE FUNCTION lesson_vectors_delete();

INSERT INTO meta VALUES ('run_vectors', '0'), ('run_vector_removals', '0');
CREATE FUNCTION bump_meta(counter TEXT) RETURNS BIGINT LANGUAGE sql AS $$
    UPDATE meta SET value = (value::BIGINT + 1)::TEXT WHERE key = counter
    RETURNING value::BIGINT
$$;
CREATE FUNCTION run_vectors_query() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM runs WHERE goal_key = new.key) THEN
        UPDATE runs SET vector_change = bump_meta('run_vectors') WHERE goal_key = new.key;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER run_vectors_update AFTER UPDATE OF vector, model ON query_vectors
FOR EACH ROW WHEN (new.vector IS NOT NULL) EXECUTE FUNCTION run_vectors_query();
CREATE TRIGGER run_vectors_insert AFTER INSERT ON query_vectors
FOR EACH ROW WHEN (new.vector IS NOT NULL) EXECUTE FUNCTION run_vectors_query();
CREATE FUNCTION run_vectors_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM query_vectors WHERE key = new.goal_key
               AND vector IS NOT NULL) THEN
        UPDATE runs SET vector_change = bump_meta('run_vectors') WHERE seq = new.seq;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER run_vectors_run AFTER INSERT ON runs
FOR EACH ROW EXECUTE FUNCTION run_vectors_run();
CREATE FUNCTION run_vectors_removal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM bump_meta('run_vector_removals');
    RETURN NULL;
END $$;
CREATE TRIGGER run_vectors_run_delete AFTER DELETE ON runs
FOR EACH ROW WHEN (old.vector_change IS NOT NULL) EXECUTE FUNCTION run_vectors_removal();
CREATE FUNCTION run_vectors_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM runs WHERE goal_key = old.key) THEN
        PERFORM bump_meta('run_vector_removals');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER run_vectors_delete AFTER DELETE ON query_vectors
FOR EACH ROW WHEN (old.vector IS NOT NULL) EXECUTE FUNCTION run_vectors_delete();
"""


def create_schema(tx: Any) -> None:
    for script in (WORDS, TABLES, KEYWORDS, STAMPS):
        tx.execute(script)


def pool_families(tx: Any) -> None:
    """As SQLite's migration of the same name: families beside causes, the failures stored
    before counted as a family of their own cause."""
    tx.execute("""
        ALTER TABLE failures ADD COLUMN family TEXT NOT NULL DEFAULT '';
        UPDATE failures SET family = cause;
        CREATE INDEX failures_family_run ON failures (family, run);
        CREATE INDEX failures_family_seq ON failures (family, seq);
        CREATE TABLE families (
            family TEXT PRIMARY KEY,
            runs BIGINT NOT NULL,
            failures BIGINT NOT NULL,
            last_seen DOUBLE PRECISION NOT NULL
        );
        INSERT INTO families SELECT cause, runs, failures, last_seen FROM causes;
        CREATE INDEX families_runs ON families (runs)
    """)


def log_eligible_lessons(tx: Any) -> None:
    """As SQLite's migration of the same name: the holdout's log of eligible lessons."""
    tx.execute("""
        CREATE TABLE eligible (
            id BIGSERIAL PRIMARY KEY,
            run TEXT NOT NULL,
            iteration BIGINT NOT NULL,
            lesson_id TEXT NOT NULL,
            family TEXT NOT NULL,
            arm TEXT NOT NULL,
            predicted DOUBLE PRECISION NOT NULL,
            hit BIGINT NOT NULL DEFAULT 0,
            ts DOUBLE PRECISION NOT NULL
        );
        CREATE UNIQUE INDEX eligible_lesson_run ON eligible (lesson_id, run);
        CREATE INDEX eligible_run ON eligible (run);
        -- Per lesson and arm, the counts the holdout judges by: a recall reads a few rows.
        CREATE TABLE holdout_counts (
            lesson_id TEXT NOT NULL,
            arm TEXT NOT NULL,
            family TEXT NOT NULL,
            runs BIGINT NOT NULL,
            hits BIGINT NOT NULL,
            predicted DOUBLE PRECISION NOT NULL,
            last DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (lesson_id, arm)
        )
    """)


def key_steps(tx: Any) -> None:
    """As SQLite's migration of the same name: a step is stored once, by its key."""
    tx.execute("""
        ALTER TABLE failures ADD COLUMN step TEXT;
        ALTER TABLE benign ADD COLUMN step TEXT;
        ALTER TABLE successes ADD COLUMN step TEXT;
        CREATE UNIQUE INDEX failures_step ON failures (step);
        CREATE UNIQUE INDEX benign_step ON benign (step);
        CREATE UNIQUE INDEX successes_step ON successes (step)
    """)


def record_members(tx: Any) -> None:
    """As SQLite's migration of the same name: each run's member."""
    tx.execute("""
        ALTER TABLE runs ADD COLUMN member TEXT NOT NULL DEFAULT '';
        CREATE INDEX runs_scope_member ON runs (scope, member)
    """)


MIGRATIONS: list[Callable[[Any], None]] = [create_schema, pool_families, log_eligible_lessons,
                                           key_steps, record_members]


def _newer(version: int, where: str) -> NewerSchema:
    return NewerSchema(version, len(MIGRATIONS), store=f"the PostgreSQL store {where}",
                       extra=" with its [postgres] extra on every machine that shares it",
                       elsewhere="point REFLECT_STORE at another database")


def migrate(conn: Any, where: str) -> None:
    """Bring the schema (of the connection's search path) up to date in one transaction.

    Many processes may open a new database at once: an advisory lock on the schema lets
    the first migrate while the others wait, then find the work done.
    """
    applied = _applied(conn)
    if applied == len(MIGRATIONS):
        return
    if applied > len(MIGRATIONS):
        raise _newer(applied, where)
    with conn.upkeep(), conn.transaction():  # the server answered: it may take its time
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('reflect migrate '"
                     " || current_schema()))")
        conn.execute("CREATE TABLE IF NOT EXISTS migrations (version BIGINT PRIMARY KEY,"
                     " name TEXT NOT NULL, applied TIMESTAMPTZ NOT NULL DEFAULT now())")
        done = _applied(conn)
        if done > len(MIGRATIONS):
            raise _newer(done, where)
        for version, step in enumerate(MIGRATIONS[done:], start=done + 1):
            step(conn)
            conn.execute("INSERT INTO migrations (version, name) VALUES (%s, %s)",
                         (version, step.__name__))


def _applied(conn: Any) -> int:
    if conn.execute("SELECT to_regclass('migrations')").fetchone()[0] is None:
        return 0  # an empty database
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM migrations").fetchone()[0])

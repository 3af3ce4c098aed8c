"""Schema, as an ordered list of migrations recorded in the ``migrations`` table.

Never edit a shipped migration: append a new function to ``MIGRATIONS``.
"""

from __future__ import annotations

import sqlite3

from reflect.base.text import text_key
from reflect.store.base import NewerSchema


def create_failures_and_lessons(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE lessons (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            fingerprint TEXT NOT NULL,
            trigger TEXT NOT NULL,
            guidance TEXT NOT NULL,
            category TEXT NOT NULL,
            severity TEXT NOT NULL,
            kind TEXT NOT NULL,
            confidence REAL NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',
            resolution TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX lessons_fingerprint ON lessons (fingerprint, status);
        -- seq is the true order of captures: AUTOINCREMENT never reuses a value.
        CREATE TABLE failures (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            run TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            ts REAL NOT NULL,
            goal TEXT NOT NULL,
            phase TEXT NOT NULL,
            action TEXT NOT NULL,
            exit_code INTEGER,
            error_type TEXT NOT NULL,
            message TEXT NOT NULL,
            signature TEXT NOT NULL,
            friction TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            source TEXT NOT NULL,
            redactions INTEGER NOT NULL,
            category TEXT NOT NULL,
            severity TEXT NOT NULL,
            lesson_id TEXT NOT NULL REFERENCES lessons (id),
            resolution TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX failures_run_seq ON failures (run, seq);
        CREATE INDEX failures_fingerprint ON failures (fingerprint);
        """
    )


def add_jobs_and_model_lessons(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- The durable queue: a job is leased for a while, and a lease that runs out
        -- (its worker was killed) makes the job available again.
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            run TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'queued',
            attempts INTEGER NOT NULL DEFAULT 0,
            due REAL NOT NULL,
            lease_owner TEXT NOT NULL DEFAULT '',
            lease_until REAL NOT NULL DEFAULT 0,
            reason TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX jobs_state_due ON jobs (state, due);
        -- One queued job per target: work that arrives while a job is leased
        -- queues a second one, so nothing added meanwhile is missed.
        CREATE UNIQUE INDEX jobs_queued_once ON jobs (kind, target) WHERE state = 'queued';
        CREATE TABLE breaker (
            provider TEXT PRIMARY KEY,
            failures INTEGER NOT NULL,
            open_until REAL NOT NULL
        );
        CREATE TABLE spend (
            day TEXT NOT NULL,
            run TEXT NOT NULL,
            calls INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            PRIMARY KEY (day, run)
        );
        CREATE TABLE workers (
            id TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started REAL NOT NULL,
            heartbeat REAL NOT NULL
        );
        ALTER TABLE lessons ADD COLUMN model TEXT NOT NULL DEFAULT '';
        ALTER TABLE lessons ADD COLUMN prompt_tokens INTEGER;
        ALTER TABLE lessons ADD COLUMN completion_tokens INTEGER;
        ALTER TABLE lessons ADD COLUMN cost_usd REAL;
        ALTER TABLE lessons ADD COLUMN quarantine TEXT NOT NULL DEFAULT '';
        ALTER TABLE lessons ADD COLUMN superseded_by TEXT NOT NULL DEFAULT '';
        ALTER TABLE lessons ADD COLUMN evidence INTEGER NOT NULL DEFAULT 1
        """,
    )


def add_search(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        ALTER TABLE lessons ADD COLUMN scope TEXT NOT NULL DEFAULT 'global';
        ALTER TABLE lessons ADD COLUMN error_text TEXT NOT NULL DEFAULT '';
        UPDATE lessons SET error_text = COALESCE((
            SELECT f.error_type || ': ' || f.message FROM failures f
            WHERE f.fingerprint = lessons.fingerprint ORDER BY f.seq LIMIT 1), '');
        -- Keyword search, kept in step with lessons by triggers whatever writes them.
        -- No stemmer: the vocabulary must hold the words a query is made of, so
        -- recall can pick a goal's rarest terms (meaning is the dense half's job).
        CREATE VIRTUAL TABLE lessons_fts USING fts5 (
            trigger, guidance, error, tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE lessons_vocab USING fts5vocab (lessons_fts, 'row');
        INSERT INTO lessons_fts (rowid, trigger, guidance, error)
            SELECT seq, trigger, guidance, error_text FROM lessons;
        CREATE TRIGGER lessons_fts_insert AFTER INSERT ON lessons BEGIN
            INSERT INTO lessons_fts (rowid, trigger, guidance, error)
            VALUES (new.seq, new.trigger, new.guidance, new.error_text);
        END;
        CREATE TRIGGER lessons_fts_update AFTER UPDATE OF trigger, guidance, error_text
        ON lessons BEGIN
            UPDATE lessons_fts SET trigger = new.trigger, guidance = new.guidance,
                error = new.error_text WHERE rowid = old.seq;
        END;
        CREATE TRIGGER lessons_fts_delete AFTER DELETE ON lessons BEGIN
            DELETE FROM lessons_fts WHERE rowid = old.seq;
            DELETE FROM lesson_vectors WHERE lesson_id = old.id;
        END;
        -- Vectors are little-endian float32 blobs, one per lesson and model: the
        -- source of truth for the memory-mapped index file.
        CREATE TABLE lesson_vectors (
            lesson_id TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (lesson_id, model)
        );
        -- Every change to a model's vectors bumps its generation, which stamps the
        -- index file: a file with another stamp is stale and rebuilt.
        CREATE TABLE vector_generations (model TEXT PRIMARY KEY, generation INTEGER NOT NULL);
        CREATE TRIGGER lesson_vectors_insert AFTER INSERT ON lesson_vectors BEGIN
            INSERT INTO vector_generations VALUES (new.model, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1;
        END;
        CREATE TRIGGER lesson_vectors_delete AFTER DELETE ON lesson_vectors BEGIN
            UPDATE vector_generations SET generation = generation + 1 WHERE model = old.model;
        END;
        -- How widely each root cause recurs: evidence that outweighs the goal's words.
        CREATE TABLE fingerprints (
            fingerprint TEXT PRIMARY KEY,
            runs INTEGER NOT NULL,
            failures INTEGER NOT NULL,
            last_seen REAL NOT NULL
        );
        INSERT INTO fingerprints
            SELECT fingerprint, COUNT(DISTINCT run), COUNT(*), MAX(ts) FROM failures
            GROUP BY fingerprint;
        CREATE INDEX failures_fingerprint_run ON failures (fingerprint, run);
        CREATE INDEX fingerprints_runs ON fingerprints (runs);
        -- Query texts (goals, error lines) and their vectors once the worker has them.
        CREATE TABLE query_vectors (
            key TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            model TEXT NOT NULL DEFAULT '',
            vector BLOB,
            created REAL NOT NULL
        )
        """,
    )


def add_credit_and_controls(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- What went into which prompt, and how the iteration after it ended.
        CREATE TABLE injections (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            lesson_id TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            section TEXT NOT NULL,
            rank INTEGER NOT NULL,
            score REAL NOT NULL,
            tokens INTEGER NOT NULL,
            ts REAL NOT NULL,
            outcome TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX injections_run_iteration ON injections (run, iteration);
        CREATE INDEX injections_lesson ON injections (lesson_id);
        -- Credit: confidence follows a smoothed win rate around the lesson's prior.
        ALTER TABLE lessons ADD COLUMN prior REAL NOT NULL DEFAULT 0.5;
        UPDATE lessons SET prior = confidence;
        ALTER TABLE lessons ADD COLUMN wins REAL NOT NULL DEFAULT 0;
        ALTER TABLE lessons ADD COLUMN losses INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE lessons ADD COLUMN injected INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE lessons ADD COLUMN last_used REAL NOT NULL DEFAULT 0;
        ALTER TABLE lessons ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
        -- Every removal, by whom and why; never the removed text.
        CREATE TABLE removals (
            lesson_id TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            reason TEXT NOT NULL,
            ts REAL NOT NULL
        )
        """,
    )


def count_causes(conn: sqlite3.Connection) -> None:
    """Count recurrence by cause (the fingerprint without frames): a mistake repeated in
    another run sits in other code, so a fingerprint's own run count undercounts it."""
    conn.execute("ALTER TABLE failures ADD COLUMN cause TEXT NOT NULL DEFAULT ''")
    rows = conn.execute("SELECT seq, error_type, message FROM failures").fetchall()
    if rows:  # a new store has none: the rule's copy (and OpenSSL, its digests') stays unloaded
        from reflect.store.frozen_cause import cause  # the rule as this migration shipped

        conn.executemany("UPDATE failures SET cause = ? WHERE seq = ?",
                         [(cause(r[1], r[2]), r[0]) for r in rows])
    _script(
        conn,
        """
        CREATE INDEX failures_cause_run ON failures (cause, run);
        CREATE INDEX failures_cause_seq ON failures (cause, seq);
        -- Which cause a fingerprint is: kept when old failures are pruned, so their
        -- lessons keep their evidence.
        DROP INDEX fingerprints_runs;
        ALTER TABLE fingerprints RENAME TO fingerprint_runs;
        CREATE TABLE fingerprints (fingerprint TEXT PRIMARY KEY, cause TEXT NOT NULL);
        INSERT INTO fingerprints SELECT DISTINCT fingerprint, cause FROM failures;
        CREATE INDEX fingerprints_cause ON fingerprints (cause);
        -- How widely each mistake recurs: evidence that outweighs the goal's words.
        CREATE TABLE causes (
            cause TEXT PRIMARY KEY,
            runs INTEGER NOT NULL,
            failures INTEGER NOT NULL,
            last_seen REAL NOT NULL
        );
        INSERT INTO causes
            SELECT cause, COUNT(DISTINCT run), COUNT(*), MAX(ts) FROM failures GROUP BY cause;
        -- A fingerprint whose failures were all pruned keeps its counts as its own cause.
        INSERT INTO fingerprints SELECT fingerprint, fingerprint FROM fingerprint_runs
            WHERE fingerprint NOT IN (SELECT fingerprint FROM fingerprints);
        INSERT OR IGNORE INTO causes SELECT fingerprint, runs, failures, last_seen
            FROM fingerprint_runs WHERE fingerprint NOT IN (SELECT fingerprint FROM failures);
        DROP TABLE fingerprint_runs;
        CREATE INDEX causes_runs ON causes (runs)
        """,
    )


def add_runs_and_steps(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- Exits that answered a question (grep found nothing): kept and counted, but
        -- apart from failures, so nothing that recalls or counts failures sees them.
        CREATE TABLE benign (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            run TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            ts REAL NOT NULL,
            phase TEXT NOT NULL,
            action TEXT NOT NULL,
            exit_code INTEGER,
            program TEXT NOT NULL
        );
        CREATE INDEX benign_run_seq ON benign (run, seq);
        -- Steps that succeeded after a failure: what changed before the rerun that passed.
        CREATE TABLE successes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            action TEXT NOT NULL,
            ts REAL NOT NULL
        );
        CREATE INDEX successes_run_iteration ON successes (run, iteration);
        -- Every run with its goal: the neighbourhood in which recall predicts failures.
        -- goal_key names the goal's vector in query_vectors.
        CREATE TABLE runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run TEXT NOT NULL UNIQUE,
            goal TEXT NOT NULL,
            goal_key TEXT NOT NULL,
            scope TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE VIRTUAL TABLE runs_fts USING fts5 (goal, tokenize = 'unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE runs_vocab USING fts5vocab (runs_fts, 'row');
        CREATE TRIGGER runs_fts_insert AFTER INSERT ON runs BEGIN
            INSERT INTO runs_fts (rowid, goal) VALUES (new.seq, new.goal);
        END;
        CREATE TRIGGER runs_fts_delete AFTER DELETE ON runs BEGIN
            DELETE FROM runs_fts WHERE rowid = old.seq;
        END;
        INSERT INTO runs (run, goal, goal_key, scope, created)
            SELECT f.run, f.goal, '', COALESCE(l.scope, 'global'), f.ts FROM failures f
            LEFT JOIN lessons l ON l.id = f.lesson_id
            WHERE f.seq IN (SELECT MIN(seq) FROM failures GROUP BY run);
        -- What worked used to be the next step that exited 0, whatever it was (`ls`, a
        -- heredoc); now it is only a rerun that passed, with what changed before it.
        UPDATE failures SET resolution = '';
        UPDATE lessons SET resolution = ''
        """,
    )
    conn.executemany("UPDATE runs SET goal_key = ? WHERE seq = ?",
                     [(text_key(goal), seq)
                      for seq, goal in conn.execute("SELECT seq, goal FROM runs").fetchall()])


def mark_origins_and_run_vectors(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- Where a lesson comes from: 'here' (failures of this store), 'taught' or
        -- 'imported'. The last two have no runs to predict from and enter on their words.
        ALTER TABLE lessons ADD COLUMN origin TEXT NOT NULL DEFAULT 'here';
        UPDATE lessons SET origin = 'taught' WHERE kind = 'taught';
        UPDATE lessons SET origin = 'imported' WHERE kind != 'taught'
            AND fingerprint NOT IN (SELECT fingerprint FROM fingerprints);
        CREATE INDEX lessons_elsewhere ON lessons (status) WHERE origin != 'here';
        -- A count of run goals that have a vector, kept by triggers: the stamp of the
        -- run-goal index, read on every recall without counting anything.
        CREATE INDEX runs_goal_key ON runs (goal_key);
        CREATE INDEX runs_scope ON runs (scope);
        INSERT OR REPLACE INTO meta SELECT 'run_vectors', COUNT(*) FROM runs r
            JOIN query_vectors q ON q.key = r.goal_key WHERE q.vector IS NOT NULL;
        CREATE TRIGGER run_vectors_update AFTER UPDATE OF vector, model ON query_vectors
        WHEN new.vector IS NOT NULL AND EXISTS (SELECT 1 FROM runs WHERE goal_key = new.key)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vectors';
        END;
        CREATE TRIGGER run_vectors_insert AFTER INSERT ON query_vectors
        WHEN new.vector IS NOT NULL AND EXISTS (SELECT 1 FROM runs WHERE goal_key = new.key)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vectors';
        END;
        CREATE TRIGGER run_vectors_run AFTER INSERT ON runs
        WHEN EXISTS (SELECT 1 FROM query_vectors WHERE key = new.goal_key
                     AND vector IS NOT NULL)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vectors';
        END
        """,
    )


def sequence_run_vector_changes(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- Each run whose goal gets a vector (or a new one) is stamped with the counter's
        -- next value: a process brings its local index file up to date by reading only
        -- the runs changed since the file was written. A removal counts apart: the file
        -- is then rebuilt.
        ALTER TABLE runs ADD COLUMN vector_change INTEGER;
        UPDATE runs SET vector_change = 0 WHERE goal_key IN (
            SELECT key FROM query_vectors WHERE vector IS NOT NULL);
        CREATE INDEX runs_vector_change ON runs (vector_change);
        INSERT INTO meta VALUES ('run_vector_removals', '0') ON CONFLICT DO NOTHING;
        DROP TRIGGER run_vectors_update;
        DROP TRIGGER run_vectors_insert;
        DROP TRIGGER run_vectors_run;
        CREATE TRIGGER run_vectors_update AFTER UPDATE OF vector, model ON query_vectors
        WHEN new.vector IS NOT NULL AND EXISTS (SELECT 1 FROM runs WHERE goal_key = new.key)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vectors';
            UPDATE runs SET vector_change = (SELECT value FROM meta WHERE key = 'run_vectors')
                WHERE goal_key = new.key;
        END;
        CREATE TRIGGER run_vectors_insert AFTER INSERT ON query_vectors
        WHEN new.vector IS NOT NULL AND EXISTS (SELECT 1 FROM runs WHERE goal_key = new.key)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vectors';
            UPDATE runs SET vector_change = (SELECT value FROM meta WHERE key = 'run_vectors')
                WHERE goal_key = new.key;
        END;
        CREATE TRIGGER run_vectors_run AFTER INSERT ON runs
        WHEN EXISTS (SELECT 1 FROM query_vectors WHERE key = new.goal_key
                     AND vector IS NOT NULL)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vectors';
            UPDATE runs SET vector_change = (SELECT value FROM meta WHERE key = 'run_vectors')
                WHERE seq = new.seq;
        END;
        CREATE TRIGGER run_vectors_run_delete AFTER DELETE ON runs
        WHEN old.vector_change IS NOT NULL
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vector_removals';
        END;
        CREATE TRIGGER run_vectors_delete AFTER DELETE ON query_vectors
        WHEN old.vector IS NOT NULL AND EXISTS (SELECT 1 FROM runs WHERE goal_key = old.key)
        BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'run_vector_removals';
        END
        """,
    )


def pool_families(conn: sqlite3.Connection) -> None:
    """Count recurrence by family too (``fingerprint.family``: the cause with its subject
    masked). Failures stored before count as a family of their own cause: the rule is not
    run here, so what this migration writes never changes with it."""
    _script(
        conn,
        """
    ALTER TABLE failures ADD COLUMN family TEXT NOT NULL DEFAULT '';
    UPDATE failures SET family = cause;
    CREATE INDEX failures_family_run ON failures (family, run);
    CREATE INDEX failures_family_seq ON failures (family, seq);
    CREATE TABLE families (
        family TEXT PRIMARY KEY,
        runs INTEGER NOT NULL,
        failures INTEGER NOT NULL,
        last_seen REAL NOT NULL
    );
    INSERT INTO families SELECT cause, runs, failures, last_seen FROM causes;
    CREATE INDEX families_runs ON families (runs)
    """,
    )


def log_eligible_lessons(conn: sqlite3.Connection) -> None:
    """The holdout's log (``recall.holdout``): each lesson of an earlier run that recall
    would show, once per run (where it first would), with its arm (shown, withheld,
    promoted, demoted), the predicted p of its family then and whether the family
    followed in that run (``hit``, set by capture): what showing it changes can be
    measured."""
    _script(
        conn,
        """
    CREATE TABLE eligible (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        lesson_id TEXT NOT NULL,
        family TEXT NOT NULL,
        arm TEXT NOT NULL,
        predicted REAL NOT NULL,
        hit INTEGER NOT NULL DEFAULT 0,
        ts REAL NOT NULL
    );
    CREATE UNIQUE INDEX eligible_lesson_run ON eligible (lesson_id, run);
    CREATE INDEX eligible_run ON eligible (run);
    -- Per lesson and arm, the counts the holdout judges by: a recall reads a few rows.
    CREATE TABLE holdout_counts (
        lesson_id TEXT NOT NULL,
        arm TEXT NOT NULL,
        family TEXT NOT NULL,
        runs INTEGER NOT NULL,
        hits INTEGER NOT NULL,
        predicted REAL NOT NULL,
        last REAL NOT NULL,
        PRIMARY KEY (lesson_id, arm)
    )
    """,
    )


def key_steps(conn: sqlite3.Connection) -> None:
    """A step of an agent (a client's tool call) is stored once, whoever records it: a live
    hook, ``reflect learn`` of its transcript, several of them at once. Its key
    (``tool_calls.step_key``) is unique in each table a step lands in; rows stored before
    have none, and so do captures that name no step."""
    _script(
        conn,
        """
    ALTER TABLE failures ADD COLUMN step TEXT;
    ALTER TABLE benign ADD COLUMN step TEXT;
    ALTER TABLE successes ADD COLUMN step TEXT;
    CREATE UNIQUE INDEX failures_step ON failures (step);
    CREATE UNIQUE INDEX benign_step ON benign (step);
    CREATE UNIQUE INDEX successes_step ON successes (step)
    """,
    )


def record_members(conn: sqlite3.Connection) -> None:
    """Each run's member (``base.member``: a digest of its user and host, or of a name
    configured): a store shared by several counts a house rule by members as well as runs.
    Runs stored before are of no member ("")."""
    _script(
        conn,
        """
    ALTER TABLE runs ADD COLUMN member TEXT NOT NULL DEFAULT '';
    CREATE INDEX runs_scope_member ON runs (scope, member)
    """,
    )


MIGRATIONS = [create_failures_and_lessons, add_jobs_and_model_lessons, add_search,
              add_credit_and_controls, count_causes, add_runs_and_steps,
              mark_origins_and_run_vectors, sequence_run_vector_changes, pool_families,
              log_eligible_lessons, key_steps, record_members]


def _script(conn: sqlite3.Connection, sql: str) -> None:
    # Not executescript(): it commits first, which would split the migration
    # from its record in the migrations table. complete_statement() keeps a
    # trigger's body, semicolons and all, in one statement.
    statement = ""
    for part in sql.split(";"):
        statement += part + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                conn.execute(statement)
            statement = ""


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the schema up to date inside one write transaction.

    Safe when several processes open a new store at once: the first takes the
    write lock and migrates, the others find the work done.
    """
    applied = _applied(conn)
    if applied == len(MIGRATIONS):
        return
    if applied > len(MIGRATIONS):
        raise NewerSchema(applied, len(MIGRATIONS))
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
        )
        done = _applied(conn)
        for version, step in enumerate(MIGRATIONS[done:], start=done + 1):
            step(conn)
            conn.execute(
                "INSERT INTO migrations VALUES (?, ?, julianday('now'))", (version, step.__name__)
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _applied(conn: sqlite3.Connection) -> int:
    """The version of the last migration applied (a newer reflect's may be past ours)."""
    try:
        return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM migrations"
                                ).fetchone()[0])
    except sqlite3.OperationalError:  # no migrations table yet: an empty database
        return 0


def schema_names(kinds: tuple[str, ...] = ("table", "trigger")) -> frozenset[str]:
    """The tables and triggers the migrations make: what a store at the current version
    holds (an empty store in memory, migrated)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(conn)
        return frozenset(r[0] for r in conn.execute(
            f"SELECT name FROM sqlite_master WHERE type IN ({', '.join('?' * len(kinds))})",
            kinds))
    finally:
        conn.close()

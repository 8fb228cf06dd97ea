-- worker-task-api: the whole database schema.
-- A new database gets this file and is stamped with the latest schema version
-- (PRAGMA user_version); an older one gets it too (every statement is idempotent, so new tables
-- and indexes appear) and then the migrations of lib/store/migrations.ts for changes this file
-- cannot express, such as a new column. Enumerations, keys and uniqueness are
-- enforced here as the last line of defence behind the request schemas and the domain rules.
-- Times: columns ending in _utc hold epoch milliseconds (INTEGER); columns ending in _local hold
-- canonical Europe/London wall times 'YYYY-MM-DDTHH:mm:ss' (TEXT, which sorts chronologically
-- except inside the autumn repeated hour, where the wall time itself is the value).

CREATE TABLE IF NOT EXISTS organisations (
  id                INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
  name              TEXT    NOT NULL,
  is_active         INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1)),
  -- One optimistic-concurrency version for the whole organisation: every successful mutation
  -- bumps it once, and every task ETag embeds it.
  workspace_version INTEGER NOT NULL DEFAULT 1 CHECK (workspace_version >= 1)
);

-- Each backup copy put back in place of the database (see moveVersionsPastRestore): the floor its
-- organisations' workspace versions were moved to, which an organisation loaded later starts
-- from, so no ETag issued before the restore comes round again.
CREATE TABLE IF NOT EXISTS restores (
  restored_utc  INTEGER NOT NULL,
  version_floor INTEGER NOT NULL CHECK (version_floor >= 1)
);

CREATE TABLE IF NOT EXISTS staff (
  id              INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
  organisation_id INTEGER NOT NULL REFERENCES organisations (id),
  name            TEXT    NOT NULL,
  kind            TEXT    NOT NULL CHECK (kind IN ('agent', 'human')),
  is_active       INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);
CREATE INDEX IF NOT EXISTS staff_by_organisation ON staff (organisation_id);

-- Weekly working calendar in London wall time; a staff member with no rows has no working time.
-- The loader materialises the default (Monday-Friday 09:00-17:00) as rows.
CREATE TABLE IF NOT EXISTS calendar_intervals (
  staff_id     INTEGER NOT NULL REFERENCES staff (id) ON DELETE CASCADE,
  weekday      INTEGER NOT NULL CHECK (weekday BETWEEN 1 AND 7), -- ISO: 1 Monday .. 7 Sunday
  start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
  end_minute   INTEGER NOT NULL CHECK (end_minute BETWEEN 1 AND 1440),
  CHECK (start_minute < end_minute),
  PRIMARY KEY (staff_id, weekday, start_minute)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS api_clients (
  id              INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
  organisation_id INTEGER NOT NULL REFERENCES organisations (id),
  name            TEXT    NOT NULL,
  -- SHA-256 of the bearer token, lowercase hex; the token itself is never stored.
  token_hash      TEXT    NOT NULL UNIQUE CHECK (length(token_hash) = 64),
  sponsor_id      INTEGER NOT NULL REFERENCES staff (id),
  resource_id     INTEGER REFERENCES staff (id),
  is_active       INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);

CREATE TABLE IF NOT EXISTS api_client_scopes (
  client_id INTEGER NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
  scope     TEXT    NOT NULL CHECK (scope IN ('tasks:read', 'tasks:update', 'tasks:time',
                                              'tasks:notes', 'human-requests:create',
                                              'human-requests:read')),
  PRIMARY KEY (client_id, scope)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS projects (
  id                   INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
  organisation_id      INTEGER NOT NULL REFERENCES organisations (id),
  name                 TEXT    NOT NULL,
  priority_name        TEXT    NOT NULL DEFAULT 'normal'
                               CHECK (priority_name IN ('critical', 'high', 'normal', 'low')),
  -- The deprecated numeric compatibility value, derived so it can never disagree with the name.
  priority             INTEGER GENERATED ALWAYS AS (
                         CASE priority_name WHEN 'critical' THEN 0 WHEN 'high' THEN 50
                                            WHEN 'normal' THEN 100 ELSE 101 END) VIRTUAL,
  target_date_local    TEXT,
  hard_deadline_local  TEXT,
  deadline_reason      TEXT,
  is_active            INTEGER NOT NULL DEFAULT 1 CHECK (is_active IN (0, 1))
);
CREATE INDEX IF NOT EXISTS projects_by_organisation ON projects (organisation_id);

-- Tasks and assistance stages share one id space ("stages"): this table hands out and reserves
-- the ids, so a task and an assistance stage can never collide.
CREATE TABLE IF NOT EXISTS stages (
  id   INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
  kind TEXT    NOT NULL CHECK (kind IN ('task', 'assistance'))
);

CREATE TABLE IF NOT EXISTS tasks (
  id                   INTEGER PRIMARY KEY REFERENCES stages (id),
  organisation_id      INTEGER NOT NULL REFERENCES organisations (id),
  project_id           INTEGER NOT NULL REFERENCES projects (id),
  title                TEXT    NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
  description          TEXT    CHECK (description IS NULL OR length(description) <= 20000),
  status               TEXT    NOT NULL DEFAULT 'Ready' CHECK (status IN ('Ready', 'InProgress', 'Done')),
  sequence             INTEGER NOT NULL DEFAULT 0 CHECK (sequence BETWEEN 0 AND 100000),
  estimated_minutes    INTEGER NOT NULL DEFAULT 0 CHECK (estimated_minutes BETWEEN 0 AND 1000000),
  started_at_local     TEXT,
  completed_at_local   TEXT,
  earliest_start_local TEXT,
  release_date_local   TEXT,
  is_waiting           INTEGER NOT NULL DEFAULT 0 CHECK (is_waiting IN (0, 1)),
  resource_mode        TEXT    NOT NULL DEFAULT 'Independent'
                               CHECK (resource_mode IN ('Independent', 'Collaboration'))
);
CREATE INDEX IF NOT EXISTS tasks_by_organisation ON tasks (organisation_id);
CREATE INDEX IF NOT EXISTS tasks_by_project ON tasks (project_id);

CREATE TABLE IF NOT EXISTS task_assignments (
  task_id           INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  staff_id          INTEGER NOT NULL REFERENCES staff (id),
  -- An assignee's own estimate (Independent mode); null means the task's estimate applies.
  estimated_minutes INTEGER CHECK (estimated_minutes IS NULL OR estimated_minutes BETWEEN 0 AND 1000000),
  PRIMARY KEY (task_id, staff_id)
) WITHOUT ROWID;
-- For the foreign key from staff (no statement of the service walks a resource's every assignment:
-- that grows with every task it finished).
CREATE INDEX IF NOT EXISTS task_assignments_by_staff ON task_assignments (staff_id, task_id);

-- The assignments of tasks that are not Done, kept by the triggers below, never written directly.
-- The offer, the waiting list and the plan start from here, so the tasks a resource has finished
-- (an agent's whole history) cost them nothing. They still check each task's status, which costs
-- nothing and keeps them right should a change ever reach these tables past the triggers.
CREATE TABLE IF NOT EXISTS open_assignments (
  staff_id INTEGER NOT NULL,
  task_id  INTEGER NOT NULL,
  PRIMARY KEY (staff_id, task_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS open_assignments_assign AFTER INSERT ON task_assignments
  WHEN (SELECT status FROM tasks WHERE id = NEW.task_id) <> 'Done'
  BEGIN INSERT OR IGNORE INTO open_assignments (staff_id, task_id) VALUES (NEW.staff_id, NEW.task_id); END;
-- Also on the cascade from a deleted task.
CREATE TRIGGER IF NOT EXISTS open_assignments_unassign AFTER DELETE ON task_assignments
  BEGIN DELETE FROM open_assignments WHERE staff_id = OLD.staff_id AND task_id = OLD.task_id; END;
CREATE TRIGGER IF NOT EXISTS open_assignments_reassign AFTER UPDATE OF task_id, staff_id ON task_assignments
  BEGIN
    DELETE FROM open_assignments WHERE staff_id = OLD.staff_id AND task_id = OLD.task_id;
    INSERT OR IGNORE INTO open_assignments (staff_id, task_id)
      SELECT NEW.staff_id, NEW.task_id WHERE (SELECT status FROM tasks WHERE id = NEW.task_id) <> 'Done';
  END;
-- Through task_assignments' key, so finding a task's rows here needs no index of its own.
CREATE TRIGGER IF NOT EXISTS open_assignments_finish AFTER UPDATE OF status ON tasks
  WHEN NEW.status = 'Done' AND OLD.status <> 'Done'
  BEGIN
    DELETE FROM open_assignments
     WHERE task_id = NEW.id AND staff_id IN (SELECT staff_id FROM task_assignments WHERE task_id = NEW.id);
  END;
CREATE TRIGGER IF NOT EXISTS open_assignments_reopen AFTER UPDATE OF status ON tasks
  WHEN OLD.status = 'Done' AND NEW.status <> 'Done'
  BEGIN
    INSERT OR IGNORE INTO open_assignments (staff_id, task_id)
      SELECT staff_id, task_id FROM task_assignments WHERE task_id = NEW.id;
  END;
-- INSERT OR REPLACE deletes the old row and inserts a new one: with foreign keys off (the sqlite3
-- shell's default) no cascade reaches task_assignments, so the new row's status is taken here.
CREATE TRIGGER IF NOT EXISTS open_assignments_task_written AFTER INSERT ON tasks
  BEGIN
    DELETE FROM open_assignments
     WHERE NEW.status = 'Done' AND task_id = NEW.id
       AND staff_id IN (SELECT staff_id FROM task_assignments WHERE task_id = NEW.id);
    INSERT OR IGNORE INTO open_assignments (staff_id, task_id)
      SELECT staff_id, task_id FROM task_assignments WHERE task_id = NEW.id AND NEW.status <> 'Done';
  END;

CREATE TABLE IF NOT EXISTS task_dependencies (
  task_id         INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  prerequisite_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  CHECK (task_id <> prerequisite_id),
  PRIMARY KEY (task_id, prerequisite_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS task_dependencies_by_prerequisite ON task_dependencies (prerequisite_id, task_id);

CREATE TABLE IF NOT EXISTS actual_intervals (
  id           INTEGER PRIMARY KEY,
  task_id      INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  staff_id     INTEGER NOT NULL REFERENCES staff (id),
  start_local  TEXT    NOT NULL,
  end_local    TEXT    NOT NULL,
  -- The instants behind the wall times (ambiguous autumn times at their first occurrence), kept
  -- so overlap checks and actualMinutes need no time-zone arithmetic at read time.
  start_utc    INTEGER NOT NULL,
  end_utc      INTEGER NOT NULL,
  CHECK (start_utc < end_utc)
);
CREATE INDEX IF NOT EXISTS actual_intervals_by_task ON actual_intervals (task_id, staff_id, start_utc);

CREATE TABLE IF NOT EXISTS notes (
  id          INTEGER PRIMARY KEY,
  task_id     INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  client_id   INTEGER NOT NULL REFERENCES api_clients (id),
  staff_id    INTEGER NOT NULL REFERENCES staff (id),
  text        TEXT    NOT NULL CHECK (length(text) BETWEEN 1 AND 20000),
  created_utc INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS notes_by_task ON notes (task_id, id);

CREATE TABLE IF NOT EXISTS claims (
  id           INTEGER PRIMARY KEY,
  task_id      INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  client_id    INTEGER NOT NULL REFERENCES api_clients (id),
  token        TEXT    NOT NULL UNIQUE CHECK (length(token) = 36),
  acquired_utc INTEGER NOT NULL,
  expires_utc  INTEGER NOT NULL,
  released_utc INTEGER
);
CREATE INDEX IF NOT EXISTS claims_by_task ON claims (task_id, expires_utc);
CREATE INDEX IF NOT EXISTS claims_by_expiry ON claims (expires_utc);

CREATE TABLE IF NOT EXISTS idempotency_receipts (
  organisation_id INTEGER NOT NULL REFERENCES organisations (id),
  client_id       INTEGER NOT NULL REFERENCES api_clients (id),
  key             TEXT    NOT NULL CHECK (length(key) BETWEEN 1 AND 100),
  fingerprint     TEXT    NOT NULL,
  status          INTEGER NOT NULL CHECK (status BETWEEN 200 AND 299),
  headers         TEXT    NOT NULL, -- JSON object of the replayable headers
  body            TEXT,
  created_utc     INTEGER NOT NULL,
  expires_utc     INTEGER NOT NULL,
  PRIMARY KEY (organisation_id, client_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_receipts_by_expiry ON idempotency_receipts (expires_utc);

-- An assistance stage: a request for human help raised from a task. Its lifecycle, content and
-- response live on its Incoming item, which is what the recipient acts on.
CREATE TABLE IF NOT EXISTS assistance_stages (
  id                      INTEGER PRIMARY KEY REFERENCES stages (id),
  organisation_id         INTEGER NOT NULL REFERENCES organisations (id),
  origin_task_id          INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  requested_by_client_id  INTEGER NOT NULL REFERENCES api_clients (id),
  requested_by_staff_id   INTEGER NOT NULL REFERENCES staff (id),
  assistance_kind         TEXT    NOT NULL DEFAULT 'Question'
                                  CHECK (assistance_kind IN ('Question', 'Review', 'Approval', 'Action')),
  is_blocking             INTEGER NOT NULL DEFAULT 1 CHECK (is_blocking IN (0, 1)),
  publish_externally      INTEGER NOT NULL DEFAULT 0 CHECK (publish_externally IN (0, 1)),
  created_utc             INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS assistance_stages_by_origin ON assistance_stages (origin_task_id, id);

CREATE TABLE IF NOT EXISTS incoming_items (
  id                    INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
  organisation_id       INTEGER NOT NULL REFERENCES organisations (id),
  stage_id              INTEGER UNIQUE REFERENCES assistance_stages (id) ON DELETE CASCADE,
  recipient_id          INTEGER NOT NULL REFERENCES staff (id),
  title                 TEXT    NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
  details               TEXT,
  estimated_minutes     INTEGER NOT NULL CHECK (estimated_minutes BETWEEN 1 AND 1000000),
  priority_name         TEXT    NOT NULL DEFAULT 'normal'
                                CHECK (priority_name IN ('critical', 'high', 'normal', 'low')),
  priority_rank         INTEGER GENERATED ALWAYS AS (
                          CASE priority_name WHEN 'critical' THEN 0 WHEN 'high' THEN 1
                                             WHEN 'normal' THEN 2 ELSE 3 END) VIRTUAL,
  requester             TEXT    NOT NULL,
  requested_at_utc      INTEGER NOT NULL,
  lifecycle             TEXT    NOT NULL DEFAULT 'floating'
                                CHECK (lifecycle IN ('floating', 'planned', 'inprogress', 'completed')),
  planned_start_local   TEXT,
  actual_start_utc      INTEGER,
  actual_effort_minutes INTEGER,
  response              TEXT    CHECK (response IS NULL OR length(response) <= 20000),
  response_state        TEXT    NOT NULL DEFAULT 'open'
                                CHECK (response_state IN ('open', 'responded', 'resolved')),
  responded_at_utc      INTEGER,
  completed_utc         INTEGER,
  revision              TEXT    NOT NULL CHECK (length(revision) = 36)
);
CREATE INDEX IF NOT EXISTS incoming_by_recipient ON incoming_items (recipient_id, lifecycle);
-- The requests still awaiting an answer, for the reply poll: it then costs what humans have left
-- unanswered, not every request ever asked (nor every task an agent finished).
CREATE INDEX IF NOT EXISTS incoming_open_by_organisation ON incoming_items (organisation_id, stage_id)
  WHERE response_state = 'open';

-- External items (issue trackers, ticketing) that tasks are linked to, with their last known
-- business facts. Connection data never leaves the provider; only facts are kept.
CREATE TABLE IF NOT EXISTS source_items (
  id                   INTEGER PRIMARY KEY,
  organisation_id      INTEGER NOT NULL REFERENCES organisations (id),
  provider_key         TEXT    NOT NULL,
  item_id              TEXT    NOT NULL,
  title                TEXT    NOT NULL,
  description          TEXT,
  business_status      TEXT,
  has_baseline         INTEGER NOT NULL DEFAULT 0 CHECK (has_baseline IN (0, 1)),
  is_available         INTEGER NOT NULL DEFAULT 0 CHECK (is_available IN (0, 1)),
  last_success_utc     INTEGER,
  last_attempt_utc     INTEGER,
  UNIQUE (organisation_id, provider_key, item_id)
);

CREATE TABLE IF NOT EXISTS task_sources (
  task_id        INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  source_item_id INTEGER NOT NULL REFERENCES source_items (id),
  position       INTEGER NOT NULL,
  PRIMARY KEY (task_id, source_item_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS task_sources_by_item ON task_sources (source_item_id);

-- Replies already turned into changes, so a reply is recorded once however often it is seen.
CREATE TABLE IF NOT EXISTS source_replies_seen (
  source_item_id INTEGER NOT NULL REFERENCES source_items (id),
  reply_id       TEXT    NOT NULL,
  PRIMARY KEY (source_item_id, reply_id)
) WITHOUT ROWID;

-- Where a published assistance request lives in the external system (kept internal).
-- external_ref: null until the source took the request; '' when the ref the source gave for it
-- was too long for a reply to name (so it is not kept), which still marks the request as sent.
CREATE TABLE IF NOT EXISTS source_publications (
  stage_id         INTEGER PRIMARY KEY REFERENCES assistance_stages (id) ON DELETE CASCADE,
  source_item_id   INTEGER NOT NULL REFERENCES source_items (id),
  external_ref     TEXT,
  state            TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'published', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_utc INTEGER,
  pending_message  TEXT,
  -- Bumped each time the request is queued again (a follow-up): a send that was already in
  -- flight then cannot mark the newer content as published.
  generation       INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS source_changes (
  id               INTEGER PRIMARY KEY,
  task_id          INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  source_item_id   INTEGER NOT NULL REFERENCES source_items (id),
  incoming_id      INTEGER REFERENCES incoming_items (id),
  kind             TEXT    NOT NULL CHECK (kind IN ('source', 'reply')),
  before_facts     TEXT, -- JSON SourceFacts
  after_facts      TEXT, -- JSON SourceFacts
  response         TEXT,
  author           TEXT,
  occurred_utc     INTEGER NOT NULL,
  received_utc     INTEGER NOT NULL,
  acknowledged_utc INTEGER
);
CREATE INDEX IF NOT EXISTS source_changes_by_task ON source_changes (task_id, id);

CREATE TABLE IF NOT EXISTS source_activations (
  id            INTEGER PRIMARY KEY,
  task_id       INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  activated_utc INTEGER NOT NULL,
  sources       TEXT    NOT NULL -- JSON SourceFacts[]
);
CREATE INDEX IF NOT EXISTS source_activations_by_task ON source_activations (task_id, id);

-- Every reference a publication of an assistance request got (a follow-up is published again and
-- gets a new one), so a reply to any of them finds its request.
CREATE TABLE IF NOT EXISTS source_publication_refs (
  source_item_id INTEGER NOT NULL REFERENCES source_items (id),
  external_ref   TEXT    NOT NULL,
  stage_id       INTEGER NOT NULL REFERENCES assistance_stages (id) ON DELETE CASCADE,
  PRIMARY KEY (source_item_id, external_ref)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS source_publications_due ON source_publications (state, next_attempt_utc);

-- Moved on by every change to what authentication reads (triggers below), by any connection, so
-- the service can keep verified credentials in memory and still see a revocation, a scope change
-- or a deactivation on the very next request.
CREATE TABLE IF NOT EXISTS credential_generation (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL
);
-- The row appears with the first change (until then the generation reads as 0), so opening a
-- database never writes. New rows need no trigger: a new client has no cached credential, and a new scope row is caught
-- below; rows that existed before a delete were caught by the delete.
CREATE TRIGGER IF NOT EXISTS credentials_client_update AFTER UPDATE ON api_clients
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_client_delete AFTER DELETE ON api_clients
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_scope_insert AFTER INSERT ON api_client_scopes
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_scope_update AFTER UPDATE ON api_client_scopes
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_scope_delete AFTER DELETE ON api_client_scopes
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_staff_update AFTER UPDATE OF organisation_id, name, kind, is_active ON staff
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_staff_delete AFTER DELETE ON staff
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
-- Not on workspace_version, which every write moves.
CREATE TRIGGER IF NOT EXISTS credentials_organisation_update AFTER UPDATE OF name, is_active ON organisations
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;
CREATE TRIGGER IF NOT EXISTS credentials_organisation_delete AFTER DELETE ON organisations
  BEGIN INSERT INTO credential_generation (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1; END;

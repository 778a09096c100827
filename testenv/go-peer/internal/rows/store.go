package rows

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/singleflight"
)

// ledger lists every row this operator wrote (table, id, owner). Its hyphen keeps any PostgresWriter,
// whose table names cannot hold one, from naming it.
const ledger = `"postgres-writer-rows"`

// checkTTL is how long a table found compatible is trusted before its columns are read again; a
// statement that fails on it forgets it at once.
const checkTTL = 30 * time.Second

// undefinedTable is PostgreSQL's SQLSTATE for a table that does not exist.
const undefinedTable = "42P01"

// Outcome is what an upsert found and did.
type Outcome int

const (
	Written Outcome = iota
	Unchanged
	// OwnedByOther: the id holds a row another resource wrote; nothing was written.
	OwnedByOther
)

// Store runs PostgresWriter's statements on a pool.
type Store struct {
	pool       *pgxpool.Pool
	autoCreate bool
	// stepTimeout bounds one database step (a connection, then one statement), so a database that
	// stops answering fails the reconcile instead of holding its worker.
	stepTimeout time.Duration

	mu      sync.Mutex
	checked map[string]time.Time
	// checks lets concurrent reconciles that name the same table share one check: 64 workers
	// meeting a new table at once would otherwise each read the catalog and race to create it
	// (concurrent CREATE TABLE IF NOT EXISTS can fail on the catalog's unique index).
	checks singleflight.Group
}

// NewStore returns a store over pool; autoCreate creates missing tables.
func NewStore(pool *pgxpool.Pool, autoCreate bool, stepTimeout time.Duration) *Store {
	return &Store{pool: pool, autoCreate: autoCreate, stepTimeout: stepTimeout, checked: map[string]time.Time{}}
}

// Ping tells whether the database answers now.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.stepTimeout)
	defer cancel()
	return s.pool.Ping(ctx)
}

func (s *Store) fresh(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.checked[key]
	return ok && time.Since(at) < checkTTL
}

func (s *Store) record(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked[key] = time.Now()
}

func (s *Store) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.checked, key)
}

// checked is what a table check found, and why when the table cannot be used.
type checked struct {
	state TableState
	why   string
}

// once runs check for key unless it found the table Ready within checkTTL, sharing one run among
// concurrent callers.
func (s *Store) once(ctx context.Context, key string, check func(ctx context.Context) (checked, error)) (checked, error) {
	if s.fresh(key) {
		return checked{state: Ready}, nil
	}
	found, err, _ := s.checks.Do(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, s.stepTimeout)
		defer cancel()
		found, err := check(ctx)
		if err == nil && found.state == Ready {
			s.record(key)
		}
		return found, err
	})
	if err != nil {
		return checked{}, err
	}
	return found.(checked), nil
}

// EnsureTable checks that table can hold rows, creating it when it is missing and auto-creation is
// on; the ledger is created with the first table. A state other than Ready comes with its reason.
func (s *Store) EnsureTable(ctx context.Context, table TableName) (TableState, string, error) {
	if _, err := s.once(ctx, ledger, s.createLedger); err != nil {
		return Missing, "", err
	}
	found, err := s.once(ctx, string(table), func(ctx context.Context) (checked, error) {
		return s.checkTable(ctx, table)
	})
	return found.state, found.why, err
}

func (s *Store) createLedger(ctx context.Context) (checked, error) {
	// Looked up first: CREATE TABLE IF NOT EXISTS needs the right to create tables even when the
	// table exists, which a role given the ledger ready-made may lack.
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ledger).Scan(&exists); err != nil {
		return checked{}, err
	}
	if !exists {
		_, err := s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ledger+` (row_table text NOT NULL, `+
			`row_id text NOT NULL, owner_uid text NOT NULL, PRIMARY KEY (row_table, row_id))`)
		if err != nil {
			return checked{}, err
		}
	}
	return checked{state: Ready}, nil
}

func (s *Store) checkTable(ctx context.Context, table TableName) (checked, error) {
	rows, err := s.pool.Query(ctx, `SELECT column_name::text, data_type::text FROM information_schema.columns `+
		`WHERE table_schema = current_schema() AND table_name = $1`, string(table))
	if err != nil {
		return checked{}, err
	}
	types := map[string]string{}
	var name, typ string
	if _, err := pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		types[name] = typ
		return nil
	}); err != nil {
		return checked{}, err
	}
	if len(types) == 0 {
		if !s.autoCreate {
			return checked{Missing, fmt.Sprintf("table %s does not exist and auto-creation is off", table)}, nil
		}
		_, err := s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table.quoted()+` (id text PRIMARY KEY, `+
			`name text NOT NULL, age integer NOT NULL, country text NOT NULL, owner_uid text NOT NULL)`)
		if err != nil {
			return checked{}, err
		}
		return checked{state: Ready}, nil
	}
	var problems []string
	for column, expected := range columns {
		switch actual, ok := types[column]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("column %s is missing", column))
		case actual != expected:
			problems = append(problems, fmt.Sprintf("column %s is %s, expected %s", column, actual, expected))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return checked{Incompatible, fmt.Sprintf("table %s cannot hold the row: %s", table, strings.Join(problems, "; "))}, nil
	}
	return checked{state: Ready}, nil
}

// Upsert makes row hold its values in table and records it in the ledger, in one statement: a row
// already holding them is not written, and a row another resource wrote is left alone (its owner is
// returned).
func (s *Store) Upsert(ctx context.Context, table TableName, row Row) (Outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.stepTimeout)
	defer cancel()
	// The last SELECT sees the table as it was before the insert (one snapshot for the statement):
	// the stored owner, or NULL for a new row.
	sql := `WITH written AS (
	    INSERT INTO ` + table.quoted() + ` AS target (id, owner_uid, name, age, country) VALUES ($1, $2, $3, $4, $5)
	    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, age = EXCLUDED.age, country = EXCLUDED.country
	    WHERE target.owner_uid = EXCLUDED.owner_uid
	      AND (target.name, target.age, target.country) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.age, EXCLUDED.country)
	    RETURNING target.id),
	  recorded AS (
	    INSERT INTO ` + ledger + ` AS l (row_table, row_id, owner_uid) SELECT $6, id, $2 FROM written
	    ON CONFLICT (row_table, row_id) DO UPDATE SET owner_uid = EXCLUDED.owner_uid
	    WHERE l.owner_uid <> EXCLUDED.owner_uid)
	SELECT EXISTS (SELECT 1 FROM written), (SELECT owner_uid FROM ` + table.quoted() + ` WHERE id = $1)`
	var wrote bool
	var owner *string
	err := s.pool.QueryRow(ctx, sql, row.ID, row.OwnerUID, row.Name, row.Age, row.Country, string(table)).Scan(&wrote, &owner)
	switch {
	case err != nil:
		s.distrust(table, err)
		return Written, "", err
	case wrote:
		return Written, "", nil
	case owner == nil:
		// Inserted by another writer while the statement ran: the next reconcile looks again.
		return Written, "", fmt.Errorf("row %s in table %s was written by someone else meanwhile", row.ID, table)
	case *owner != row.OwnerUID:
		return OwnedByOther, *owner, nil
	default:
		return Unchanged, "", nil
	}
}

// Delete deletes the row id from table if owner wrote it, and forgets it in the ledger, in one
// statement. A table that is gone holds nothing to delete.
func (s *Store) Delete(ctx context.Context, table TableName, id, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, s.stepTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM `+table.quoted()+` WHERE id = $1 AND owner_uid = $2 RETURNING id), `+
		`forgotten AS (DELETE FROM `+ledger+` WHERE row_table = $3 AND row_id = $1 AND owner_uid = $2) `+
		`SELECT count(*) FROM gone`, id, owner, string(table))
	if isUndefinedTable(err) {
		s.distrust(table, err)
		return s.forgetRow(ctx, table, id, owner)
	}
	return err
}

// Release forgets the row in the ledger and leaves it in its table: it is no longer this
// operator's.
func (s *Store) Release(ctx context.Context, table TableName, id, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, s.stepTimeout)
	defer cancel()
	return s.forgetRow(ctx, table, id, owner)
}

func (s *Store) forgetRow(ctx context.Context, table TableName, id, owner string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM `+ledger+` WHERE row_table = $1 AND row_id = $2 AND owner_uid = $3`,
		string(table), id, owner)
	if isUndefinedTable(err) {
		// No ledger: nothing is recorded to forget.
		s.forget(ledger)
		return nil
	}
	return err
}

// distrust forgets a table's check after a statement on it failed in a way a hand edit (a table
// dropped, a column altered) explains, so the next reconcile checks it again.
func (s *Store) distrust(table TableName, err error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		s.forget(string(table))
		if pgErr.Code == undefinedTable {
			s.forget(ledger)
		}
	}
}

func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == undefinedTable
}

// Unavailable tells a database that did not answer (no SQLSTATE: a refused or broken connection,
// a timeout) from one that answered with an error.
func Unavailable(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr)
}

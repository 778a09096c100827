// Package rows is the SQL of PostgresWriter: one row per resource, in the table its spec names, and
// the ledger of the rows this operator wrote. Table names are validated identifiers, always quoted;
// every value is a bound parameter.
package rows

import (
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// identifier is the CRD schema's pattern for spec.table; the length is checked apart.
var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// TableName is a table name that is a valid lower-case PostgreSQL identifier.
type TableName string

// ParseTable accepts 1-63 lower-case letters, digits and underscores, not starting with a digit.
func ParseTable(name string) (TableName, error) {
	if len(name) > 63 || !identifier.MatchString(name) {
		return "", fmt.Errorf("table %q is not a valid identifier: use 1-63 lower-case letters, digits and underscores, not starting with a digit", name)
	}
	return TableName(name), nil
}

// quoted is the name as SQL text. Parsing admits no quote, so the quoting never has to escape.
func (t TableName) quoted() string {
	return pgx.Identifier{string(t)}.Sanitize()
}

// Row is one resource's row.
type Row struct {
	// ID is "<namespace>/<name>".
	ID string
	// OwnerUID is the uid of the resource that wrote the row.
	OwnerUID string
	Name     string
	Age      int32
	Country  string
}

// columns are the row table's columns and the types the catalog reports for them.
var columns = map[string]string{
	"id":        "text",
	"name":      "text",
	"age":       "integer",
	"country":   "text",
	"owner_uid": "text",
}

// TableState is what a table check found.
type TableState int

const (
	Ready TableState = iota
	// Missing: the table does not exist and auto-creation is off.
	Missing
	// Incompatible: the table exists with columns the row cannot be written to.
	Incompatible
)

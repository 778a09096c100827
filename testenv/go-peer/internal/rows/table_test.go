package rows

import (
	"strings"
	"testing"
)

func TestTableNamesAreIdentifiersAndRenderQuoted(t *testing.T) {
	for _, good := range []string{"students", "_t1", strings.Repeat("a", 63)} {
		table, err := ParseTable(good)
		if err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
		if table.quoted() != `"`+good+`"` {
			t.Errorf("%q quoted as %s", good, table.quoted())
		}
	}
	for _, bad := range []string{"", "1abc", "Students", "a-b", `x"; DROP TABLE y; --`, strings.Repeat("a", 64)} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

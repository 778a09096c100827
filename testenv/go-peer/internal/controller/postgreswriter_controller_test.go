package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	demov1 "operator.test/go-peer/api/v1"
)

func TestOnlyChangesThatUnsettleAWriterReconcileIt(t *testing.T) {
	writer := func(version string, finalized bool, observed int64) *demov1.PostgresWriter {
		pw := &demov1.PostgresWriter{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "n", Generation: 2, ResourceVersion: version}}
		if finalized {
			pw.Finalizers = []string{demov1.Finalizer}
		}
		pw.Status.ObservedGeneration = observed
		return pw
	}
	deleting := writer("4", true, 2)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for _, c := range []struct {
		what     string
		old, new *demov1.PostgresWriter
		want     bool
	}{
		{"its own status write coming back", writer("1", true, 1), writer("2", true, 2), false},
		{"the finalizer added, no status yet", writer("1", false, 0), writer("2", true, 0), true},
		{"the spec changed", writer("2", true, 2), writer("3", true, 1), true},
		{"the finalizer removed by hand", writer("2", true, 2), writer("3", false, 2), true},
		{"a deletion", writer("3", true, 2), deleting, true},
		{"a resync of a settled writer", writer("2", true, 2), writer("2", true, 2), true},
	} {
		if got := unsettled.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: reconciled %v, want %v", c.what, got, c.want)
		}
	}
}

func TestDesiredRowIsKeyedByNamespaceAndNameAndOwnedByTheUID(t *testing.T) {
	pw := &demov1.PostgresWriter{
		ObjectMeta: metav1.ObjectMeta{Name: "sample-student", Namespace: "default", UID: "uid-1"},
		Spec:       demov1.PostgresWriterSpec{Table: "students", Name: "O'Brien", Age: 23, Country: "canada"},
	}
	row, err := desiredRow(pw)
	if err != nil || row.ID != "default/sample-student" || row.OwnerUID != "uid-1" || row.Age != 23 {
		t.Fatalf("row %+v, error %v", row, err)
	}
	pw.Spec.Age = 1 << 31
	if _, err := desiredRow(pw); err == nil {
		t.Fatal("an age past an integer column was accepted")
	}
}

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Finalizer holds a PostgresWriter until its row's delete has committed.
	Finalizer = "demo.yash.com/row"
	// LeaveRowAnnotation set to "true" lets a PostgresWriter go without deleting its row.
	LeaveRowAnnotation = "demo.yash.com/leave-row"
	// ConditionReady is the one condition a PostgresWriter reports.
	ConditionReady = "Ready"
)

// PostgresWriterSpec is the row a PostgresWriter asks for.
type PostgresWriterSpec struct {
	// Table the row lives in: a lower-case PostgreSQL identifier (the CRD's schema checks it too).
	Table   string `json:"table"`
	Name    string `json:"name"`
	Age     int64  `json:"age"`
	Country string `json:"country"`
}

// PostgresWriterStatus says where the row is and whether it holds the spec's values.
type PostgresWriterStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	// Table the row lives in now; differs from spec.table only mid-move.
	Table string `json:"table,omitempty"`
	// LastWriteTime is when the row was last written (RFC 3339).
	LastWriteTime string `json:"lastWriteTime,omitempty"`
}

// PostgresWriter is exactly one row in a PostgreSQL table.
type PostgresWriter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgresWriterSpec   `json:"spec,omitempty"`
	Status PostgresWriterStatus `json:"status,omitempty"`
}

// PostgresWriterList is a list of PostgresWriters.
type PostgresWriterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgresWriter `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PostgresWriter{}, &PostgresWriterList{})
}

package v1

// The deep copies the scheme needs. Kubebuilder would generate them with controller-gen; three
// small types are written by hand here so that building the module needs the Go toolchain alone.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the status into out.
func (in *PostgresWriterStatus) DeepCopyInto(out *PostgresWriterStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopy returns a copy of the status.
func (in *PostgresWriterStatus) DeepCopy() *PostgresWriterStatus {
	if in == nil {
		return nil
	}
	out := new(PostgresWriterStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the object into out.
func (in *PostgresWriter) DeepCopyInto(out *PostgresWriter) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of the object.
func (in *PostgresWriter) DeepCopy() *PostgresWriter {
	if in == nil {
		return nil
	}
	out := new(PostgresWriter)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *PostgresWriter) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

// DeepCopyInto copies the list into out.
func (in *PostgresWriterList) DeepCopyInto(out *PostgresWriterList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]PostgresWriter, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of the list.
func (in *PostgresWriterList) DeepCopy() *PostgresWriterList {
	if in == nil {
		return nil
	}
	out := new(PostgresWriterList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *PostgresWriterList) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

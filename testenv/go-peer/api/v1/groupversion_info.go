// Package v1 holds the PostgresWriter type of demo.yash.com/v1, as the Rust operator's CRD defines
// it (the bench installs that CRD; this module only reads and writes objects of it).
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version PostgresWriter is served in.
	GroupVersion = schema.GroupVersion{Group: "demo.yash.com", Version: "v1"}

	// SchemeBuilder registers the types of this group-version with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

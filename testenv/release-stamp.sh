# Sourced by the Go builds of upstream programs (testenv/control-plane, testenv/e2e), in their module's
# directory: sets `version` to the k8s.io/kubernetes release the module pins and `stamp_flags` to the
# linker flags that stamp it into the binaries. A released binary reports its release (/version,
# `e2e.test --version`) and clients and specs pick behaviour by it; an unstamped build says v0.0.0.
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$version" | cut -d. -f2)
stamp_flags=""
for key in "gitVersion=$version" "gitMajor=1" "gitMinor=$minor" "gitTreeState=clean" "buildDate=1970-01-01T00:00:00Z"; do
  stamp_flags+=" -X k8s.io/component-base/version.$key -X k8s.io/client-go/pkg/version.$key"
done

// The small images the cluster tier's node runs besides the operator: the pod sandbox and a web server
// for WebApps. Standard library only; test-only.
module operator.test/images

go 1.24.0

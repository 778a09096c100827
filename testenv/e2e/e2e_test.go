// The upstream e2e suite's main, cut down to the specs this project runs: sig-api-machinery's tests
// and the framework they build on. It registers the flags and runs Ginkgo as upstream's
// test/e2e/e2e_test.go does, but it does not import test/e2e itself: that package links every
// cloud provider and its suite set-up waits for schedulable nodes and running kube-system pods,
// which a control plane without nodes never has. Each spec's framework still creates and deletes
// its own namespace.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"

	// Client authentication plugins, and the logging flags on the command line, as upstream links them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "k8s.io/component-base/logs/testinit"

	// The feature and environment names the specs are labelled with, defined and frozen first.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// The specs: sig-api-machinery only.
	_ "k8s.io/kubernetes/test/e2e/apimachinery"

	// Gomega prints API objects as YAML in failure messages, as upstream's reports do.
	_ "k8s.io/kubernetes/test/utils/format"
)

func TestMain(m *testing.M) {
	var versionFlag bool
	flag.CommandLine.BoolVar(&versionFlag, "version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()

	if versionFlag {
		fmt.Printf("%s\n", version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s\n", flag.CommandLine.Args())
		os.Exit(1)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestE2E(t *testing.T) {
	// InitLogs turns contextual logging off; upstream's suite turns it back on, and so does this one.
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)

	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "Kubernetes e2e suite", suiteConfig, reporterConfig)
}

// postgres-writer is the PostgresWriter operator as a controller-runtime user would write it, with
// the Rust operator's semantics: the convergence benchmark runs it beside the Rust operator against
// the same servers and PostgreSQL. Test-only: nothing here ships in the product.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	demov1 "operator.test/go-peer/api/v1"
	"operator.test/go-peer/internal/controller"
	"operator.test/go-peer/internal/rows"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(demov1.AddToScheme(scheme))
}

func main() {
	var metricsAddr, probeAddr, databaseURL, passwordFile string
	var leaderElect, autoCreate bool
	var concurrency, poolSize int
	var resync, connectTimeout, statementTimeout time.Duration
	// --kubeconfig is controller-runtime's own flag (KUBECONFIG and in-cluster config otherwise).
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "The address /metrics is served on; 0 turns it off.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "The address /healthz and /readyz are served on.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Hold a Lease so that one replica at a time reconciles.")
	flag.StringVar(&databaseURL, "database-url", "", "The PostgreSQL URL (default: $DATABASE_URL). Its password is better given by --database-password-file.")
	flag.StringVar(&passwordFile, "database-password-file", "", "A file holding the database password (default: $PSQL_PASSWORD_FILE); it wins over the URL's.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 64, "Reconciles running at once.")
	flag.IntVar(&poolSize, "db-pool-size", 8, "Database connections at most.")
	flag.DurationVar(&connectTimeout, "db-connect-timeout", 5*time.Second, "Time to open a database connection.")
	flag.DurationVar(&statementTimeout, "db-statement-timeout", 10*time.Second, "PostgreSQL's statement_timeout on every connection.")
	flag.DurationVar(&resync, "resync-interval", 5*time.Minute, "Every object is reconciled again this often (drift repair).")
	flag.BoolVar(&autoCreate, "auto-create-tables", true, "Create a missing table with the row's columns.")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	if err := run(runOptions{
		metricsAddr: metricsAddr, probeAddr: probeAddr, leaderElect: leaderElect,
		databaseURL: databaseURL, passwordFile: passwordFile, autoCreate: autoCreate,
		concurrency: concurrency, poolSize: poolSize, resync: resync,
		connectTimeout: connectTimeout, statementTimeout: statementTimeout,
	}); err != nil {
		setupLog.Error(err, "stopped")
		os.Exit(1)
	}
}

type runOptions struct {
	metricsAddr, probeAddr, databaseURL, passwordFile string
	leaderElect, autoCreate                           bool
	concurrency, poolSize                             int
	resync, connectTimeout, statementTimeout          time.Duration
}

func run(o runOptions) error {
	ctx := ctrl.SetupSignalHandler()
	pool, err := openPool(ctx, o)
	if err != nil {
		return err
	}
	defer pool.Close()
	store := rows.NewStore(pool, o.autoCreate, o.connectTimeout+o.statementTimeout)

	// ctrl.GetConfig turns client-go's client-side rate limit off (QPS -1), controller-runtime's
	// default: the API server's priority and fairness is the limit.
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       "go-peer.demo.yash.com",
		Cache:                  cache.Options{SyncPeriod: &o.resync},
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	reconciler := &controller.PostgresWriterReconciler{
		Client:   mgr.GetClient(),
		Rows:     store,
		Recorder: mgr.GetEventRecorder(controller.Name),
	}
	if err := reconciler.SetupWithManager(mgr, o.concurrency); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once the informers have synced and the database answers.
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informers not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("database", func(req *http.Request) error {
		return store.Ping(req.Context())
	}); err != nil {
		return err
	}
	setupLog.Info("starting manager")
	return mgr.Start(ctx)
}

// openPool configures the pool; connections open on demand, so a database that is down at start is
// waited for by the reconciles (DatabaseUnavailable) rather than stopping start-up.
func openPool(ctx context.Context, o runOptions) (*pgxpool.Pool, error) {
	url := o.databaseURL
	if url == "" {
		url = os.Getenv("DATABASE_URL")
	}
	if url == "" {
		return nil, errors.New("no database: set --database-url or DATABASE_URL")
	}
	config, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The URL may hold a password: say what is wrong, not what it was.
		return nil, errors.New("--database-url is not a valid PostgreSQL URL")
	}
	passwordFile := o.passwordFile
	if passwordFile == "" {
		passwordFile = os.Getenv("PSQL_PASSWORD_FILE")
	}
	if passwordFile != "" {
		password, err := os.ReadFile(passwordFile)
		if err != nil {
			return nil, fmt.Errorf("database password file: %w", err)
		}
		config.ConnConfig.Password = strings.TrimRight(string(password), "\r\n")
	}
	config.MaxConns = int32(o.poolSize)
	config.ConnConfig.ConnectTimeout = o.connectTimeout
	config.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(o.statementTimeout.Milliseconds())
	return pgxpool.NewWithConfig(ctx, config)
}

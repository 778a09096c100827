// Package controller reconciles PostgresWriters: each resource is exactly one row, id
// "<namespace>/<name>", in the table its spec names. The finalizer holds the resource until its
// row's delete has committed. Every step is idempotent, and the next reconcile tells where the last
// one stopped from what it observes (spec, status.table, the row).
package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	demov1 "operator.test/go-peer/api/v1"
	"operator.test/go-peer/internal/rows"
)

// Name is the controller's name: its logs, metrics and the Events' reporting controller.
const Name = "postgres-writer"

// action is the Event action of everything this controller records.
const action = "Reconcile"

// PostgresWriterReconciler writes each PostgresWriter's row.
type PostgresWriterReconciler struct {
	client.Client
	Rows     *rows.Store
	Recorder recorder.EventRecorder
}

// SetupWithManager registers the controller with mgr, running up to concurrency reconciles at once.
func (r *PostgresWriterReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1.PostgresWriter{}, builder.WithPredicates(unsettled)).
		Named(Name).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: concurrency,
			// A failing resource is retried with exponential back-off up to 30 s (the default goes
			// to 1000 s), so that a database back from an outage is seen within half a minute.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 30*time.Second),
		}).
		Complete(r)
}

// settled tells a PostgresWriter as its last reconcile left it: finalizer held, not being deleted,
// status answering its generation (Ready or not).
func settled(pw *demov1.PostgresWriter) bool {
	return pw.DeletionTimestamp.IsZero() &&
		controllerutil.ContainsFinalizer(pw, demov1.Finalizer) &&
		pw.Status.ObservedGeneration == pw.Generation
}

// unsettled drops the updates that leave a PostgresWriter settled, such as its own status write
// coming back or a label: each would cost a reconcile and a database statement for nothing. A
// failed reconcile is retried by its back-off; the periodic resync, which delivers every object
// unchanged, still reconciles them all (drift repair: a row edited or deleted by hand).
var unsettled = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion() {
			return true
		}
		pw, ok := e.ObjectNew.(*demov1.PostgresWriter)
		return !ok || !settled(pw)
	},
}

// Reconcile brings pw's row and status in line with its spec, or deletes the row of a resource being
// deleted.
func (r *PostgresWriterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pw demov1.PostgresWriter
	if err := r.Get(ctx, req.NamespacedName, &pw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pw.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&pw, demov1.Finalizer) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.deleteRow(ctx, &pw)
	}
	if !controllerutil.ContainsFinalizer(&pw, demov1.Finalizer) {
		// Before any row exists, so that no row is ever left without a finalizer to delete it. The
		// update comes back through the watch and reconciles the row.
		controllerutil.AddFinalizer(&pw, demov1.Finalizer)
		return ctrl.Result{}, r.Update(ctx, &pw)
	}
	return r.writeRow(ctx, &pw)
}

// desiredRow is the row pw's spec asks for.
func desiredRow(pw *demov1.PostgresWriter) (rows.Row, error) {
	if pw.Spec.Age < 0 || pw.Spec.Age > math.MaxInt32 {
		return rows.Row{}, fmt.Errorf("age %d does not fit an integer column", pw.Spec.Age)
	}
	return rows.Row{
		ID:       pw.Namespace + "/" + pw.Name,
		OwnerUID: string(pw.UID),
		Name:     pw.Spec.Name,
		Age:      int32(pw.Spec.Age),
		Country:  pw.Spec.Country,
	}, nil
}

func (r *PostgresWriterReconciler) writeRow(ctx context.Context, pw *demov1.PostgresWriter) (ctrl.Result, error) {
	// Observe.
	table, err := rows.ParseTable(pw.Spec.Table)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, pw, "InvalidSpec", err)
	}
	row, err := desiredRow(pw)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, pw, "InvalidSpec", err)
	}
	state, why, err := r.Rows.EnsureTable(ctx, table)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, pw, databaseReason(err), err)
	}
	if state != rows.Ready {
		// Needs a human: looked at again at each resync rather than in a tight back-off loop.
		reason := map[rows.TableState]string{rows.Missing: "TableMissing", rows.Incompatible: "TableIncompatible"}[state]
		_ = r.fail(ctx, pw, reason, errors.New(why))
		return ctrl.Result{}, nil
	}

	// Compare and act: the row (the upsert writes only a row that differs).
	outcome, owner, err := r.Rows.Upsert(ctx, table, row)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, pw, databaseReason(err), err)
	}
	if outcome == rows.OwnedByOther {
		_ = r.fail(ctx, pw, "RowConflict", fmt.Errorf(
			"row %s in table %s was written by another owner (%s); it is left untouched", row.ID, table, owner))
		return ctrl.Result{}, nil
	}
	// A table move: the row is in the new table; now remove it from the old one.
	if pw.Status.Table != "" && pw.Status.Table != pw.Spec.Table {
		if previous, err := rows.ParseTable(pw.Status.Table); err == nil {
			if err := r.Rows.Delete(ctx, previous, row.ID, row.OwnerUID); err != nil {
				return ctrl.Result{}, r.fail(ctx, pw, databaseReason(err), err)
			}
			r.Recorder.Eventf(pw, nil, corev1.EventTypeNormal, "Moved", action, "row moved from %s to %s", previous, table)
		}
	}
	if outcome == rows.Written {
		r.Recorder.Eventf(pw, nil, corev1.EventTypeNormal, "Written", action, "row %s written to %s", row.ID, table)
	}

	// Compare and act: the status.
	status := *pw.Status.DeepCopy()
	status.ObservedGeneration = pw.Generation
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               demov1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             "Synced",
		Message:            fmt.Sprintf("row %s is in table %s", row.ID, table),
		ObservedGeneration: pw.Generation,
	})
	status.Table = string(table)
	if outcome == rows.Written || status.LastWriteTime == "" {
		status.LastWriteTime = time.Now().UTC().Format(time.RFC3339)
	}
	return ctrl.Result{}, r.writeStatus(ctx, pw, status)
}

// deleteRow deletes pw's row (or, with the leave-row annotation, lets it go) and then releases the
// finalizer.
func (r *PostgresWriterReconciler) deleteRow(ctx context.Context, pw *demov1.PostgresWriter) error {
	id, owner := pw.Namespace+"/"+pw.Name, string(pw.UID)
	// Mid-move the row may be in either table: both are cleaned.
	var tables []rows.TableName
	for _, name := range []string{pw.Spec.Table, pw.Status.Table} {
		if table, err := rows.ParseTable(name); err == nil && (len(tables) == 0 || tables[0] != table) {
			tables = append(tables, table)
		}
	}
	if pw.Annotations[demov1.LeaveRowAnnotation] == "true" {
		// The row is no longer ours: off the ledger, and left in its table. Unlike the Rust operator,
		// a release the database cannot take now is not recorded elsewhere: the deletion waits.
		for _, table := range tables {
			if err := r.Rows.Release(ctx, table, id, owner); err != nil {
				return r.fail(ctx, pw, "DeletePending", fmt.Errorf(
					"the row cannot be released yet (%w); deletion waits for the database", err))
			}
		}
		r.Recorder.Eventf(pw, nil, corev1.EventTypeNormal, "RowLeft", action, "%s is set: the row stays", demov1.LeaveRowAnnotation)
	} else {
		for _, table := range tables {
			if err := r.Rows.Delete(ctx, table, id, owner); err != nil {
				return r.fail(ctx, pw, "DeletePending", fmt.Errorf(
					"the row cannot be deleted yet (%w); deletion waits for the database, or set the annotation %s=true to leave the row",
					err, demov1.LeaveRowAnnotation))
			}
		}
		r.Recorder.Eventf(pw, nil, corev1.EventTypeNormal, "Deleted", action, "row %s deleted", id)
	}
	controllerutil.RemoveFinalizer(pw, demov1.Finalizer)
	return client.IgnoreNotFound(r.Update(ctx, pw))
}

// fail reports a failure on pw (Ready=False with reason, and a Warning Event when that is news) and
// returns err for the back-off.
func (r *PostgresWriterReconciler) fail(ctx context.Context, pw *demov1.PostgresWriter, reason string, err error) error {
	status := *pw.Status.DeepCopy()
	status.ObservedGeneration = pw.Generation
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               demov1.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             reason,
		Message:            err.Error(),
		ObservedGeneration: pw.Generation,
	})
	news := !equality.Semantic.DeepEqual(pw.Status, status)
	if statusErr := r.writeStatus(ctx, pw, status); statusErr != nil {
		logf.FromContext(ctx).Error(statusErr, "could not write the failure status")
	}
	if news {
		r.Recorder.Eventf(pw, nil, corev1.EventTypeWarning, reason, action, "%s", err.Error())
	}
	return err
}

// writeStatus writes status unless pw already has it: a converged reconcile writes nothing. A merge
// patch needs no resourceVersion, so it does not conflict with the finalizer's update.
func (r *PostgresWriterReconciler) writeStatus(ctx context.Context, pw *demov1.PostgresWriter, status demov1.PostgresWriterStatus) error {
	if equality.Semantic.DeepEqual(pw.Status, status) {
		return nil
	}
	before := pw.DeepCopy()
	pw.Status = status
	return r.Status().Patch(ctx, pw, client.MergeFrom(before))
}

func databaseReason(err error) string {
	if rows.Unavailable(err) {
		return "DatabaseUnavailable"
	}
	return "DatabaseError"
}

// Added to sigs.k8s.io/kueue/pkg/controller/jobs/pod at build time (toolchain/build.sh
// whatif_kueue): Kueue's own Pod webhook, which the API server would call when a plain Pod is
// created, for the what-if engine to call on the Pods of a mix. No public API serves:
// SetupWebhook makes the webhook only to register it with a manager's webhook server, and
// PodWebhook has no constructor and unexported fields.
package pod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
)

// WhatIfAdmit: what Kueue's mutating and validating Pod webhooks do to a Pod being created
// (the scheduling gate, the managed label, the finalizer; or a refusal), configured as
// SetupWebhook configures them.
func WhatIfAdmit(ctx context.Context, c client.Client, queues *qcache.Manager, manageWithoutQueueName bool, namespaces labels.Selector, p *corev1.Pod) error {
	w := &PodWebhook{client: c, queues: queues, manageJobsWithoutQueueName: manageWithoutQueueName, managedJobsNamespaceSelector: namespaces}
	if err := w.Default(ctx, p); err != nil {
		return err
	}
	_, err := w.ValidateCreate(ctx, p)
	return err
}

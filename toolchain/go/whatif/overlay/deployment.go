// Added to sigs.k8s.io/kueue/pkg/controller/jobs/deployment at build time (toolchain/build.sh
// whatif_kueue): Kueue's own Deployment webhook, which the API server would call when a
// Deployment is created, for the what-if engine to call on the Deployments of a mix. No public
// API serves: SetupWebhook makes the webhook only to register it with a manager's webhook
// server, and Webhook has no constructor and unexported fields.
package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
)

// WhatIfAdmit: what Kueue's mutating and validating Deployment webhooks do to a Deployment
// being created (its pod template marked suspended by it, with its queue and priority; or a
// refusal), configured as SetupWebhook configures them.
func WhatIfAdmit(ctx context.Context, c client.Client, queues *qcache.Manager, manageWithoutQueueName bool, namespaces labels.Selector, d *appsv1.Deployment) error {
	w := &Webhook{client: c, queues: queues, manageJobsWithoutQueueName: manageWithoutQueueName, managedJobsNamespaceSelector: namespaces}
	if err := w.Default(ctx, d); err != nil {
		return err
	}
	_, err := w.ValidateCreate(ctx, d)
	return err
}

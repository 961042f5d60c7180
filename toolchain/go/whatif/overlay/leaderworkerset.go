// Added to sigs.k8s.io/kueue/pkg/controller/jobs/leaderworkerset at build time
// (toolchain/build.sh whatif_kueue): Kueue's own LeaderWorkerSet webhook, which the API server
// would call when a LeaderWorkerSet is created, for the what-if engine to call on the LWSs of
// a mix. No public API serves: SetupWebhook makes the webhook only to register it with a
// manager's webhook server, and Webhook has no constructor and unexported fields.
package leaderworkerset

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	leaderworkersetv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
)

// WhatIfAdmit: what Kueue's mutating and validating LeaderWorkerSet webhooks do to an LWS
// being created (its leader and worker templates marked suspended by it and serving; or a
// refusal), configured as SetupWebhook configures them.
func WhatIfAdmit(ctx context.Context, c client.Client, queues *qcache.Manager, manageWithoutQueueName bool, namespaces labels.Selector, lws *leaderworkersetv1.LeaderWorkerSet) error {
	w := &Webhook{client: c, queues: queues, manageJobsWithoutQueueName: manageWithoutQueueName, managedJobsNamespaceSelector: namespaces}
	if err := w.Default(ctx, lws); err != nil {
		return err
	}
	_, err := w.ValidateCreate(ctx, lws)
	return err
}

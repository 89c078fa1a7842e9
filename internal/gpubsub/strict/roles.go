package strict

import "slices"

// Roles are the predefined Pub/Sub roles the double knows, each with the
// Pub/Sub permissions it holds, as listed by "Pub/Sub roles and
// permissions" (https://cloud.google.com/iam/docs/roles-permissions/pubsub)
// and the roles section of "Access control with IAM"
// (https://cloud.google.com/pubsub/docs/access-control#roles). Permissions
// of other services (resourcemanager.projects.get, ...) are left out:
// the double answers Pub/Sub's RPCs only.
var Roles = map[string][]string{
	"roles/pubsub.publisher": {"pubsub.topics.publish"},
	"roles/pubsub.subscriber": {
		"pubsub.snapshots.seek", "pubsub.subscriptions.consume", "pubsub.topics.attachSubscription",
	},
	"roles/pubsub.viewer": viewer,
	"roles/pubsub.editor": editor,
	"roles/pubsub.admin": append(slices.Clone(editor),
		"pubsub.schemas.getIamPolicy", "pubsub.schemas.setIamPolicy",
		"pubsub.snapshots.getIamPolicy", "pubsub.snapshots.setIamPolicy",
		"pubsub.subscriptions.getIamPolicy", "pubsub.subscriptions.setIamPolicy",
		"pubsub.topics.getIamPolicy", "pubsub.topics.setIamPolicy"),
}

var viewer = []string{
	"pubsub.schemas.get", "pubsub.schemas.list", "pubsub.schemas.listRevisions", "pubsub.schemas.validate",
	"pubsub.snapshots.get", "pubsub.snapshots.list",
	"pubsub.subscriptions.get", "pubsub.subscriptions.list",
	"pubsub.topics.get", "pubsub.topics.list",
}

var editor = append(slices.Clone(viewer),
	"pubsub.schemas.attach", "pubsub.schemas.commit", "pubsub.schemas.create", "pubsub.schemas.delete", "pubsub.schemas.rollback",
	"pubsub.snapshots.create", "pubsub.snapshots.delete", "pubsub.snapshots.seek", "pubsub.snapshots.update", "pubsub.snapshots.updateTag",
	"pubsub.subscriptions.consume", "pubsub.subscriptions.create", "pubsub.subscriptions.delete", "pubsub.subscriptions.update",
	"pubsub.subscriptions.updateTag",
	"pubsub.topics.attachSubscription", "pubsub.topics.create", "pubsub.topics.delete", "pubsub.topics.detachSubscription",
	"pubsub.topics.publish", "pubsub.topics.update", "pubsub.topics.updateTag")

// grants reports whether role (predefined or one of a's custom roles)
// holds perm.
func (a *IAM) grants(role, perm string) bool {
	return slices.Contains(Roles[role], perm) || slices.Contains(a.CustomRoles[role], perm)
}

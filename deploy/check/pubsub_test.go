package check

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite generated deploy files (gke-resources/pubsub.yaml, overlays/gke/rules.yaml, monitoring/prometheusrule.yaml)")

const (
	pubsubManifest = "deploy/k8s/gke-resources/pubsub.yaml"
	gkeResources   = "deploy/k8s/gke-resources"
)

// TestPubSubObjectsMatchConfig fails when the Config Connector objects of
// deploy/k8s/gke-resources differ from configs/pubsub.yaml (what relayctl pubsub
// ensure creates). go test -run TestPubSubObjectsMatchConfig -update
// regenerates them.
func TestPubSubObjectsMatchConfig(t *testing.T) {
	res, err := LoadPubSubYAML()
	if err != nil {
		t.Fatal(err)
	}
	topics, subs := ExpectedPubSub(res)
	if *update {
		writeManifest(t, pubsubManifest, "# Generated from configs/pubsub.yaml by deploy/check (go test -run TestPubSubObjectsMatchConfig -update); do not edit.\n",
			append(anySlice(topics), anySlice(subs)...))
	}
	objs := render(t, gkeResources)
	for _, o := range objs.Topics {
		unrender(&o.ObjectMeta)
	}
	for _, o := range objs.Subscriptions {
		unrender(&o.ObjectMeta)
	}
	if !reflect.DeepEqual(objs.Topics, topics) {
		t.Errorf("%s topics differ from configs/pubsub.yaml:\n got %s\nwant %s\n(run go test -run TestPubSubObjectsMatchConfig -update)", pubsubManifest, dump(objs.Topics), dump(topics))
	}
	if !reflect.DeepEqual(objs.Subscriptions, subs) {
		t.Errorf("%s subscriptions differ from configs/pubsub.yaml:\n got %s\nwant %s\n(run go test -run TestPubSubObjectsMatchConfig -update)", pubsubManifest, dump(objs.Subscriptions), dump(subs))
	}
}

// writeManifest writes objs as one YAML document each under header.
func writeManifest(t *testing.T, rel, header string, objs []any) {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(header)
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(bytes.ReplaceAll(b, []byte("  creationTimestamp: null\n"), nil))
	}
	if err := os.WriteFile(filepath.Join(Repo(), rel), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// unrender drops what the kustomization adds (namespace, part-of label),
// so a rendered object compares with a generated one.
func unrender(m *metav1.ObjectMeta) {
	m.Namespace = ""
	delete(m.Labels, "app.kubernetes.io/part-of")
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}

func dump(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

package check

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPI is a Kubernetes API server small enough to read: the discovery,
// OpenAPI v3 and REST endpoints kubectl apply, wait and rollout status use,
// over an in-memory store. It records what kubectl asked in order (creates,
// the waits' list requests, other calls) and plays the controllers: a
// created Job gets the condition jobResult, a created Deployment the
// status deploymentStatus returns. There is no Docker and no kube-apiserver
// on this machine (Debian packages only kubectl; envtest downloads its
// binaries), so the rollout script is exercised against this instead.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	store  map[string]map[string]any // path of the object -> object
	events []string
	rv     int
	// jobResult is the condition type a created Job gets: Complete or Failed.
	jobResult string
	// stuck names Deployments whose rollout exceeds its progress deadline.
	stuck map[string]bool
}

// apiResource is one kind the fake serves.
type apiResource struct {
	group, version, kind, resource string
	namespaced                     bool
}

var fakeResources = []apiResource{
	{"", "v1", "Namespace", "namespaces", false},
	{"", "v1", "ConfigMap", "configmaps", true},
	{"", "v1", "Service", "services", true},
	{"", "v1", "ServiceAccount", "serviceaccounts", true},
	{"", "v1", "Pod", "pods", true},
	{"apps", "v1", "Deployment", "deployments", true},
	{"batch", "v1", "Job", "jobs", true},
	{"policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true},
	{"autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true},
	{"networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true},
	{"monitoring.googleapis.com", "v1", "PodMonitoring", "podmonitorings", true},
	{"monitoring.googleapis.com", "v1", "Rules", "rules", true},
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, store: map[string]map[string]any{}, jobResult: "Complete", stuck: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, fmt.Sprintf(format, args...))
}

// Events is what kubectl (and the relayctl stand-in) asked, in order.
func (f *fakeAPI) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, what string) {
	writeJSON(w, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: "Failure", Reason: metav1.StatusReasonNotFound, Code: 404, Message: what + " not found"})
}

func gvPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.Trim(r.URL.Path, "/")
	switch {
	case p == "version":
		writeJSON(w, 200, map[string]string{"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
	case p == "api":
		writeJSON(w, 200, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case p == "apis":
		f.serveGroups(w)
	case p == "openapi/v3":
		f.serveOpenAPIRoot(w)
	case strings.HasPrefix(p, "openapi/v3/"):
		f.serveOpenAPIGroup(w, strings.TrimPrefix(p, "openapi/v3/"))
	case strings.HasPrefix(p, "relayctl/"):
		f.record("relayctl %s", strings.ReplaceAll(strings.TrimPrefix(p, "relayctl/"), "/", " "))
		writeJSON(w, 200, map[string]string{})
	default:
		for _, gv := range f.groupVersions() {
			if p == gvPath(gv[0], gv[1]) {
				f.serveResourceList(w, gv[0], gv[1])
				return
			}
		}
		f.serveREST(w, r, p)
	}
}

func (f *fakeAPI) groupVersions() [][2]string {
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, res := range fakeResources {
		gv := [2]string{res.group, res.version}
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

func (f *fakeAPI) serveGroups(w http.ResponseWriter) {
	list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, gv := range f.groupVersions() {
		if gv[0] == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv[0] + "/" + gv[1], Version: gv[1]}
		list.Groups = append(list.Groups, metav1.APIGroup{Name: gv[0], Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	writeJSON(w, 200, list)
}

func (f *fakeAPI) serveResourceList(w http.ResponseWriter, group, version string) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, res := range fakeResources {
		if res.group == group && res.version == version {
			r := metav1.APIResource{Name: res.resource, Kind: res.kind, Namespaced: res.namespaced,
				Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}}
			if res.kind == "Deployment" {
				r.ShortNames = []string{"deploy"} // kubectl rollout status deploy/<name>
			}
			list.APIResources = append(list.APIResources, r)
		}
	}
	writeJSON(w, 200, list)
}

// serveOpenAPIRoot lists one OpenAPI v3 document per group version.
func (f *fakeAPI) serveOpenAPIRoot(w http.ResponseWriter) {
	paths := map[string]any{}
	for _, gv := range f.groupVersions() {
		paths[gvPath(gv[0], gv[1])] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath(gv[0], gv[1]) + "?hash=fake"}
	}
	writeJSON(w, 200, map[string]any{"paths": paths})
}

// serveOpenAPIGroup declares, for each kind, a PATCH taking
// fieldValidation: kubectl then leaves validation to the server (it sends
// fieldValidation=Strict) instead of needing every schema. The fake does
// not validate; the strict decoding of deploy/check does (objects.go).
func (f *fakeAPI) serveOpenAPIGroup(w http.ResponseWriter, gv string) {
	paths := map[string]any{}
	for _, res := range fakeResources {
		if gvPath(res.group, res.version) != gv {
			continue
		}
		paths["/"+gv+"/namespaces/{namespace}/"+res.resource+"/{name}"] = map[string]any{"patch": map[string]any{
			"x-kubernetes-group-version-kind": map[string]string{"group": res.group, "version": res.version, "kind": res.kind},
			"parameters":                      []map[string]any{{"name": "fieldValidation", "in": "query", "schema": map[string]string{"type": "string"}}},
			"responses":                       map[string]any{},
		}}
	}
	writeJSON(w, 200, map[string]any{"openapi": "3.0.0", "info": map[string]string{"title": "fake", "version": "v1"}, "paths": paths})
}

// parseREST splits /api(s)/.../namespaces/<ns>/<resource>[/<name>].
func parseREST(p string) (res apiResource, ns, name string, ok bool) {
	for _, r := range fakeResources {
		prefix := gvPath(r.group, r.version) + "/"
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		rest := strings.Split(strings.TrimPrefix(p, prefix), "/")
		ns = ""
		if len(rest) >= 3 && rest[0] == "namespaces" {
			ns, rest = rest[1], rest[2:]
		}
		if rest[0] != r.resource || r.namespaced != (ns != "") {
			continue
		}
		if len(rest) > 1 {
			name = rest[1]
		}
		return r, ns, name, true
	}
	return apiResource{}, "", "", false
}

func (f *fakeAPI) serveREST(w http.ResponseWriter, r *http.Request, p string) {
	res, ns, name, ok := parseREST(p)
	if !ok {
		notFound(w, p)
		return
	}
	base := gvPath(res.group, res.version) + "/namespaces/" + ns + "/" + res.resource
	switch {
	case r.Method == http.MethodGet && name != "":
		f.mu.Lock()
		obj, found := f.store[base+"/"+name]
		f.mu.Unlock()
		if !found {
			notFound(w, res.kind+" "+name)
			return
		}
		writeJSON(w, 200, obj)
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		// Every object is created in its final state: nothing to stream.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case r.Method == http.MethodGet:
		f.serveList(w, r.URL.Query(), res, base)
	case r.Method == http.MethodPost && name == "":
		f.create(w, r, res, base)
	default:
		f.record("unexpected %s %s", r.Method, p)
		writeJSON(w, http.StatusMethodNotAllowed, metav1.Status{Status: "Failure", Code: 405, Message: "the fake API does not " + r.Method + " " + p})
	}
}

func (f *fakeAPI) serveList(w http.ResponseWriter, q url.Values, res apiResource, base string) {
	name := strings.TrimPrefix(q.Get("fieldSelector"), "metadata.name=")
	f.record("list %s/%s", res.kind, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	items := []any{}
	for k, obj := range f.store {
		if strings.HasPrefix(k, base+"/") && (name == "" || k == base+"/"+name) {
			items = append(items, obj)
		}
	}
	gv := res.version
	if res.group != "" {
		gv = res.group + "/" + res.version
	}
	writeJSON(w, 200, map[string]any{"apiVersion": gv, "kind": res.kind + "List",
		"metadata": map[string]any{"resourceVersion": fmt.Sprint(f.rv)}, "items": items})
}

// create stores the object as the controllers would leave it: a Job
// finished with jobResult, a Deployment rolled out (or past its progress
// deadline when stuck).
func (f *fakeAPI) create(w http.ResponseWriter, r *http.Request, res apiResource, base string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeJSON(w, 400, metav1.Status{Status: "Failure", Code: 400, Message: err.Error()})
		return
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		writeJSON(w, 400, metav1.Status{Status: "Failure", Code: 400, Message: err.Error()})
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, exists := f.store[base+"/"+name]; exists {
		writeJSON(w, 409, metav1.Status{Status: "Failure", Reason: metav1.StatusReasonAlreadyExists, Code: 409, Message: name + " exists"})
		return
	}
	f.rv++
	meta["resourceVersion"] = fmt.Sprint(f.rv)
	meta["uid"] = fmt.Sprintf("uid-%d", f.rv)
	meta["generation"] = 1
	switch res.kind {
	case "Job":
		obj["status"] = map[string]any{"conditions": []map[string]string{{"type": f.jobResult, "status": "True"}}}
	case "Deployment":
		n := 1.0 // the API server's default replicas
		if spec, _ := obj["spec"].(map[string]any); spec["replicas"] != nil {
			n, _ = spec["replicas"].(float64)
		}
		status := map[string]any{"observedGeneration": 1, "replicas": n, "updatedReplicas": n, "readyReplicas": n, "availableReplicas": n}
		if f.stuck[name] {
			status["updatedReplicas"], status["availableReplicas"] = 0, 0
			status["conditions"] = []map[string]string{{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}
		}
		obj["status"] = status
	}
	f.store[base+"/"+name] = obj
	f.events = append(f.events, fmt.Sprintf("create %s/%s", res.kind, name))
	writeJSON(w, 201, obj)
}

// Kubeconfig is a kubeconfig pointing at the fake.
func (f *fakeAPI) Kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: eventrelay}}]
current-context: fake
users: [{name: fake, user: {}}]
`, f.srv.URL)
}

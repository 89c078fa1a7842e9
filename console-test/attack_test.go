package consoletest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/chromedp/chromedp"

	"github.com/eventrelay/eventrelay/relaytest"
)

// rebindName and attackerName are other sites' names; the browser resolves
// both to 127.0.0.1 (--host-resolver-rules), where the console listens.
const (
	rebindName   = "rebind.attacker.test"
	attackerName = "www.attacker.test"
)

// attacker serves page at /attack, without any CSP, and forwards every
// other request to the console unchanged, its Host included: what a
// page's requests do once its name is rebound to the console's address.
func (f *fixture) attacker(page string) *httptest.Server {
	f.t.Helper()
	target, err := url.Parse(f.console.URL)
	if err != nil {
		f.t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/attack" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	f.t.Cleanup(srv.Close)
	return srv
}

func port(u string) string { return u[strings.LastIndex(u, ":")+1:] }

// TestBrowserDNSRebindingCannotActOnTheConsole: a page of another site
// whose name resolves to the console reads no page of it (no CSRF token)
// and its replay changes nothing; the console's answer names the Host.
func TestBrowserDNSRebindingCannotActOnTheConsole(t *testing.T) {
	f := newFixture(t)
	row := f.failRows("unavailable", 1)[0]
	f.do("open the console by the rebound name", chromedp.Navigate(fmt.Sprintf("http://%s:%s/failed", rebindName, port(f.console.URL))),
		chromedp.WaitReady(css("body")))
	if body := f.text("body"); !strings.Contains(body, "misdirected request") {
		t.Errorf("the console by another name answers %q", body)
	}
	page := fmt.Sprintf(`<!doctype html><title>cute cats</title><script>
window.result = (async () => {
  const out = {};
  const r = await fetch("/failed/replay?ids=%[1]d");
  out.read = r.status;
  const m = (await r.text()).match(/name="csrf" value="([0-9a-f]+)"/);
  out.token = !!m;
  const p = await fetch("/failed/replay", {method: "POST", body: new URLSearchParams({csrf: m ? m[1] : "", ids: "%[1]d", why: "rebound"})});
  out.post = p.status;
  return JSON.stringify(out);
})();
</script>`, row)
	evil := f.attacker(page)
	f.do("load the attacker's page", chromedp.Navigate(fmt.Sprintf("http://%s:%s/attack", rebindName, port(evil.URL))))
	got := get(f, "the attack's outcome", chromedp.Evaluate[string](`window.result`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	t.Logf("attack: %s", got)
	if got != `{"read":421,"token":false,"post":421}` {
		t.Errorf("a rebound page: %s; want the read and the POST refused (421) and no token", got)
	}
	var status string
	var replays int
	f.query(fmt.Sprintf(`SELECT status, (SELECT count(*) FROM outbox_replays) FROM outbox_events WHERE id = %d`, row), &status, &replays)
	if status != "failed" || replays != 0 {
		t.Errorf("after the attack the row is %s with %d replay(s); want failed, none", status, replays)
	}
}

// TestBrowserCrossSiteImagesConsumeNothing: a page of another site that
// points images at the console's dead-letter view, for a projection's
// live subscription and for its dead-letter one, more times than the
// subscription's max delivery attempts, moves and hides no message.
func TestBrowserCrossSiteImagesConsumeNothing(t *testing.T) {
	f := newFixture(t)
	p := f.ps.Client.Publisher("items.events")
	_, err := p.Publish(t.Context(), &pubsub.Message{Data: []byte("live event"), Attributes: map[string]string{"event_id": "live-1"}}).Get(t.Context())
	p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var imgs strings.Builder
	for i := 0; i < 12; i++ {
		for _, sub := range []string{"items.view", "items.events.dlq-view"} {
			fmt.Fprintf(&imgs, "%q,", fmt.Sprintf("%s/dlq?subscription=%s&n=%d", f.console.URL, sub, i))
		}
	}
	page := `<!doctype html><title>cute cats</title><script>
window.result = Promise.all([` + imgs.String() + `].map(src => new Promise(done => {
  const i = new Image(); i.onload = i.onerror = () => done(1); i.src = src;
}))).then(all => all.length);
</script>`
	evil := f.attacker(page)
	f.do("load the attacker's page", chromedp.Navigate(fmt.Sprintf("http://%s:%s/attack", attackerName, port(evil.URL))))
	if n := get(f, "loading the images", chromedp.Evaluate[int](`window.result`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise)); n != 24 {
		t.Fatalf("images loaded: %d, want 24", n)
	}
	// The live event is still on its subscription, on its first delivery,
	// and nothing reached the dead-letter topic.
	for _, c := range []struct {
		sub     string
		want    int
		attempt int32
	}{{"items.view", 1, 1}, {"items.events.dlq-view", 0, 0}} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		resp, err := f.ps.Client.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: "projects/" + relaytest.ProjectID + "/subscriptions/" + c.sub, MaxMessages: 10})
		cancel()
		if err != nil && c.want > 0 {
			t.Fatalf("pulling %s: %v", c.sub, err)
		}
		got := resp.GetReceivedMessages()
		if len(got) != c.want {
			t.Errorf("%s holds %d message(s) after the cross-site images, want %d", c.sub, len(got), c.want)
			continue
		}
		if c.want > 0 && got[0].GetDeliveryAttempt() != c.attempt {
			t.Errorf("%s: the live event is on delivery attempt %d, want %d (a GET pulled it)", c.sub, got[0].GetDeliveryAttempt(), c.attempt)
		}
	}
}

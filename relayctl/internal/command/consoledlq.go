package command

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// dlqPeekMax bounds how many dead letters one peek pulls.
const dlqPeekMax = 200

// dlqData is the Dead letters page.
type dlqData struct {
	Subs     []string
	Sub      string
	Peeked   bool
	Messages []dlqShown
	Note     string
}

type dlqShown struct {
	dlqMessage
	Attrs []string
	Body  string
}

// dlq is the Dead letters page: the declared dead-letter subscriptions
// and, for the chosen one, the peek form. It calls no Pub/Sub RPC:
// Pub/Sub has no read that leaves messages alone, so seeing them is an
// explicit POST (dlqPeek).
func (c *Console) dlq(w http.ResponseWriter, r *http.Request) {
	d, err := c.dlqChoice(r.URL.Query().Get("subscription"))
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.render(w, r, "dlq", "Dead letters", d, r.URL.Query().Get("flash"), msg)
}

// dlqChoice is the page's subscriptions (from the resources file) and sub,
// which must be one of them; "" picks the first.
func (c *Console) dlqChoice(sub string) (dlqData, error) {
	d := dlqData{Sub: sub}
	if c.cfg.PubSubFile == "" {
		return d, fmt.Errorf("no Pub/Sub resources file: start the console with -f configs/pubsub.yaml")
	}
	_, res, err := (&pubsubFlags{file: c.cfg.PubSubFile}).load(c.cli(io.Discard))
	if err != nil {
		return d, err
	}
	d.Subs = dlqSubscriptions(res)
	if d.Sub == "" && len(d.Subs) > 0 {
		d.Sub = d.Subs[0]
	}
	if d.Sub != "" && !slices.Contains(d.Subs, d.Sub) {
		bad := d.Sub
		d.Sub = ""
		return d, fmt.Errorf("%s is not a dead-letter subscription of %s: the console shows only those (%s)", bad, c.cfg.PubSubFile, strings.Join(d.Subs, ", "))
	}
	return d, nil
}

// dlqPeek pulls up to dlqPeekMax messages of a dead-letter subscription
// and releases them at once (ack deadline 0). It refuses anything but a
// dead-letter subscription (checkDeadLetter): there a nack moves nothing,
// and no live event is delayed.
func (c *Console) dlqPeek(w http.ResponseWriter, r *http.Request) {
	d, err := c.dlqChoice(r.PostForm.Get("subscription"))
	if err == nil && d.Sub == "" {
		err = fmt.Errorf("no dead-letter subscription in %s", c.cfg.PubSubFile)
	}
	if err != nil {
		c.render(w, r, "dlq", "Dead letters", d, "", err.Error())
		return
	}
	cl := c.cli(io.Discard)
	client, cfg, res, err := (&pubsubFlags{file: c.cfg.PubSubFile}).connect(r.Context(), cl)
	if err != nil {
		c.render(w, r, "dlq", "Dead letters", d, "", err.Error())
		return
	}
	defer client.Close()
	if err := checkDeadLetter(r.Context(), client, cfg, res, d.Sub); err != nil {
		c.render(w, r, "dlq", "Dead letters", d, "", err.Error())
		return
	}
	scan, err := pullAll(r.Context(), client, cfg.ProjectID, d.Sub, dlqPeekMax, nil)
	if err != nil {
		c.render(w, r, "dlq", "Dead letters", d, "", err.Error())
		return
	}
	defer func() { _ = scan.release(context.WithoutCancel(r.Context())) }()
	d.Peeked = true
	dec, _ := newBodyDecoder(cl, "", "")
	for _, m := range scan.selected(dlqFilter{}) {
		s := dlqShown{dlqMessage: m}
		for k, v := range m.Attributes {
			s.Attrs = append(s.Attrs, k+" = "+v)
		}
		sort.Strings(s.Attrs)
		if dec == nil {
			s.Body = printable(m.data)
		} else if j, err := dec.json(m.data, m.Attributes); err != nil {
			s.Body = "does not decode: " + err.Error() + "\n" + printable(m.data)
		} else {
			s.Body = prettyJSON(j)
		}
		d.Messages = append(d.Messages, s)
	}
	d.Note = scan.note(dlqPeekMax)
	c.render(w, r, "dlq", "Dead letters", d, "", "")
}

// dlqSubscriptions are the dead-letter subscriptions of the resources.
func dlqSubscriptions(res *gpubsub.Resources) []string {
	if res == nil {
		return nil
	}
	dlqTopics := map[string]bool{}
	for _, s := range res.Subscriptions {
		if s.DeadLetter != nil {
			dlqTopics[s.DeadLetter.Topic] = true
		}
	}
	var out []string
	for _, s := range res.Subscriptions {
		if dlqTopics[s.Topic] && s.DeadLetter == nil {
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// dlqDo runs relayctl dlq replay|purge itself, with the operator as --by:
// the same checks (a dead-letter subscription only), Pub/Sub calls and
// admin_audit row as the CLI. A purge is previewed first (the CLI's
// --dry-run) and acts only on the preview's confirmation.
func (c *Console) dlqDo(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who, _ := c.identity(r)
		sub := r.PostForm.Get("subscription")
		ids := strings.Join(r.PostForm["ids"], ",")
		why := r.PostForm.Get("why")
		args := []string{"--subscription", sub, "-f", c.cfg.PubSubFile, "--by", who, "--why", why}
		if ids == "" {
			c.render(w, r, "dlq", "Dead letters", dlqData{Sub: sub}, "", "dlq "+name+": choose the messages")
			return
		}
		args = append(args, "--ids", ids)
		preview := name == "purge" && r.PostForm.Get("confirm") == ""
		if preview {
			args = append(args, "--dry-run")
		}
		out, err := c.runCLI(r.Context(), func(ctx context.Context, cl *cli) error {
			return dlqRun(ctx, cl, name, args, map[string]func(context.Context, *cli, *dlqOpts, *dlqScan, *pubsub.Client, gpubsub.Config, *gpubsub.Resources) error{
				"replay": dlqReplay, "purge": dlqPurge}[name])
		})
		if err != nil {
			c.render(w, r, "dlq", "Dead letters", dlqData{Sub: sub}, "", err.Error()+"\n"+out)
			return
		}
		if preview {
			c.confirm(w, r, confirmData{Action: "/dlq/purge", Form: "confirm-purge", Button: "Purge (ack and drop) these message(s)", Why: why,
				Summary: lastLine(out), Output: out, Fields: []field{{"subscription", sub}, {"ids", ids}}})
			return
		}
		http.Redirect(w, r, "/dlq?subscription="+urlEscape(sub)+"&flash="+urlEscape(lastLine(out)), http.StatusSeeOther)
	}
}

// confirmData is a mutation's preview: what the dry run printed and the
// form that performs it.
type confirmData struct {
	Action, Form, Button string
	Summary, Output, Why string
	Fields               []field
}

type field struct{ Name, Value string }

func (c *Console) confirm(w http.ResponseWriter, r *http.Request, d confirmData) {
	c.render(w, r, "confirm", "Preview", d, "", "")
}

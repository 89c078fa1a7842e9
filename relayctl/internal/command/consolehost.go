package command

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// hostAllowList is the set of Host header values the console answers: a
// page of another origin whose name an attacker's DNS points at the
// console (DNS rebinding) sends its own name and is refused before any
// handler runs.
type hostAllowList struct {
	// exact are host:port entries; anyPort are hosts allowed on any port.
	exact, anyPort map[string]bool
}

// loopbackNames are the names of the local machine a browser sends as
// Host for a console bound to loopback.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// newHostAllowList reads entries "host" (any port) or "host:port"
// ("[::1]:8089" for IPv6). Empty: the loopback names on any port, the
// safe default of a console whose listener the library does not know.
func newHostAllowList(entries []string) (hostAllowList, error) {
	l := hostAllowList{exact: map[string]bool{}, anyPort: map[string]bool{}}
	if len(entries) == 0 {
		for _, n := range loopbackNames {
			l.anyPort[n] = true
		}
		return l, nil
	}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if strings.ContainsAny(e, "/@ ") {
			return l, usageErr("allowed host %q: want a host name or host:port", e)
		}
		if h, p, err := net.SplitHostPort(e); err == nil {
			l.exact[net.JoinHostPort(h, p)] = true
			continue
		}
		l.anyPort[strings.Trim(e, "[]")] = true
	}
	return l, nil
}

// ListenHosts are the Host values a browser sends to a console listening
// on addr: that address, and when it is loopback, localhost, 127.0.0.1 and
// [::1] with its port; an unspecified address (0.0.0.0) adds the
// machine's interface addresses.
func ListenHosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return []string{addr.String()}
	}
	port := fmt.Sprint(tcp.Port)
	out := []string{net.JoinHostPort(tcp.IP.String(), port)}
	if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
		for _, n := range loopbackNames {
			out = append(out, net.JoinHostPort(n, port))
		}
	}
	if tcp.IP.IsUnspecified() {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					out = append(out, net.JoinHostPort(ipn.IP.String(), port))
				}
			}
		}
	}
	return out
}

// allows reports whether hostport (a Host header, or an Origin's host) is
// on the list.
func (l hostAllowList) allows(hostport string) bool {
	hostport = strings.ToLower(hostport)
	if l.exact[hostport] {
		return true
	}
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	return l.anyPort[strings.Trim(h, "[]")]
}

// checkHost refuses a request whose Host is not the console's (421) or,
// for a request that changes something, whose Origin is another site's
// (403).
func (c *Console) checkHost(w http.ResponseWriter, r *http.Request) bool {
	if !c.hosts.allows(r.Host) {
		http.Error(w, fmt.Sprintf("misdirected request: Host %q is not one this console serves (relayctl ui --allowed-hosts lists them)", r.Host), http.StatusMisdirectedRequest)
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			http.Error(w, fmt.Sprintf("cross-origin request refused: Origin %q is not this console", o), http.StatusForbidden)
			return false
		}
	}
	return true
}

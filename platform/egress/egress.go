// Package egress is the one rule for every outbound connection to a URL a
// tenant named (a GEPA task model's api base today; model bases and
// webhooks tomorrow): such a URL never gets an operator credential unless
// the operator allowed its prefix, and a connection to it never reaches the
// operator's own network — loopback, link-local (cloud metadata at
// 169.254.169.254), private, CGNAT, unspecified or multicast addresses —
// unless the operator allowed it. Without this a tenant could make a worker
// send the operator's provider key to any host, or use the worker's
// network position to reach internal services.
//
// The address check runs on the IP actually dialed, after DNS resolution
// (a net.Dialer Control hook), so a name that resolves to a public address
// when validated and to 127.0.0.1 when dialed (DNS rebinding) is still
// refused, and redirects are not followed at all.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// EnvAllowedAPIBases is the operator's allow-list: comma-separated URL
// prefixes, each optionally followed by "=VAR", the variable holding the key
// sent to that base, e.g.
// "http://vllm.internal:8000/v1=VLLM_KEY,https://api.together.xyz/v1=TOGETHER_API_KEY".
const EnvAllowedAPIBases = "CRITIC_ALLOWED_API_BASES"

// Allowed is one prefix of the allow-list.
type Allowed struct {
	// Prefix is the URL prefix, without a trailing slash; a URL is covered
	// when it equals Prefix or continues it with "/" (so
	// http://vllm.internal:8000/v1 does not cover http://vllm.internal:8000/v10).
	Prefix string
	// KeyVar names the variable whose value is sent as the bearer key to
	// URLs under Prefix; empty sends none (unless the tenant supplied one).
	KeyVar string
}

// Policy is the parsed allow-list. The zero Policy allows nothing: every
// tenant URL must resolve to a public address and gets no operator key.
type Policy struct {
	allowed []Allowed
}

// Parse reads CRITIC_ALLOWED_API_BASES. An entry that is not an absolute
// http(s) URL, or names an invalid variable, is an error naming the entry.
func Parse(s string) (Policy, error) {
	var p Policy
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		prefix, keyVar, _ := strings.Cut(entry, "=")
		prefix, keyVar = strings.TrimRight(strings.TrimSpace(prefix), "/"), strings.TrimSpace(keyVar)
		if err := CheckURL(prefix); err != nil {
			return Policy{}, fmt.Errorf("%s: entry %q: %w", EnvAllowedAPIBases, entry, err)
		}
		if keyVar != "" && !validVar(keyVar) {
			return Policy{}, fmt.Errorf("%s: entry %q: %q is not a variable name (letters, digits and _)", EnvAllowedAPIBases, entry, keyVar)
		}
		p.allowed = append(p.allowed, Allowed{Prefix: prefix, KeyVar: keyVar})
	}
	return p, nil
}

func validVar(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// CheckURL is the syntactic check every tenant URL passes at request time:
// an absolute http or https URL with a host and no credentials in it (a key
// travels in its own field, never in a URL that is shown back).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New("must be an absolute http(s) URL such as http://gpu-box.internal:8000/v1")
	}
	if u.User != nil {
		return errors.New("must not carry credentials (user:password@); send a key in its own field")
	}
	return nil
}

// Covers returns the allow-list entry whose prefix covers raw (the longest
// when several do), compared on the URL with its scheme and host lower-cased.
func (p Policy) Covers(raw string) (Allowed, bool) {
	u := canonical(raw)
	var best Allowed
	found := false
	for _, a := range p.allowed {
		pre := canonical(a.Prefix)
		if (u == pre || strings.HasPrefix(u, pre+"/")) && len(pre) >= len(canonical(best.Prefix)) {
			best, found = a, true
		}
	}
	return best, found
}

// SameURL reports whether a and b name the same base (scheme and host
// compared case-insensitively, a trailing slash ignored).
func SameURL(a, b string) bool { return canonical(a) == canonical(b) }

// canonical lower-cases scheme and host and drops a trailing slash, so that
// HTTP://Host/v1/ and http://host/v1 compare equal; anything unparsable is
// compared as written (and then covers nothing unexpected).
func canonical(raw string) string {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil {
		return raw
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String()
}

// BlockedError is a connection the rule refused.
type BlockedError struct {
	Address string // the dialed ip:port
	Reason  string // e.g. "a loopback address"
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("refusing to connect to %s: %s, which a tenant-named URL may not reach (an operator can allow its URL prefix in %s)",
		e.Address, e.Reason, EnvAllowedAPIBases)
}

// CheckAddr says why a worker must not connect to ip on a tenant's behalf,
// or nil for a public unicast address. IPv4-mapped IPv6 addresses are
// judged as the IPv4 address they carry.
func CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap()
	reason := ""
	switch {
	case !ip.IsValid():
		reason = "not an IP address"
	case ip.IsUnspecified():
		reason = "an unspecified address"
	case ip.IsLoopback():
		reason = "a loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		reason = "a link-local address (cloud metadata lives there)"
	case ip.IsPrivate():
		reason = "a private address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		reason = "a multicast address"
	default:
		for _, b := range blocked {
			if b.pfx.Contains(ip) {
				reason = b.why
				break
			}
		}
	}
	if reason == "" {
		return nil
	}
	return &BlockedError{Address: ip.String(), Reason: reason}
}

// blocked are the ranges net/netip has no predicate for.
var blocked = []struct {
	pfx netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a 'this network' address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64 address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
}

// control is the net.Dialer hook: it runs for every connection attempt on
// the resolved address about to be dialed.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Address: address, Reason: "not an IP address"}
	}
	if err := CheckAddr(ap.Addr()); err != nil {
		if be, ok := errors.AsType[*BlockedError](err); ok {
			be.Address = address
		}
		return err
	}
	return nil
}

// Dialer is a net.Dialer that refuses every non-public address after
// resolution. Exposed for callers that dial without HTTP.
func Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: control}
}

// Client is the HTTP client for requests to the tenant-named base raw: for
// a base the allow-list covers, an ordinary client; otherwise one whose
// every dial is checked by CheckAddr and which goes direct (an environment
// proxy would dial the proxy, not the target, and so hide the address).
// Neither follows redirects: a model endpoint answers directly, and a
// redirect is how an allowed host would hand a request (and its key) to
// one that is not.
func (p Policy) Client(raw string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if _, ok := p.Covers(raw); !ok {
		t.Proxy = nil
		t.DialContext = Dialer().DialContext
	}
	return &http.Client{Transport: t, CheckRedirect: noRedirects}
}

func noRedirects(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("refusing to follow a redirect to %s: a tenant-named URL must answer directly", req.URL.Redacted())
}

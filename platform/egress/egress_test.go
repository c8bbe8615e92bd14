package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	refused := map[string]string{
		"127.0.0.1":              "loopback",
		"127.8.9.10":             "loopback",
		"::1":                    "loopback",
		"10.1.2.3":               "private",
		"172.16.0.1":             "private",
		"172.31.255.255":         "private",
		"192.168.1.1":            "private",
		"169.254.169.254":        "link-local",
		"fc00::1":                "private",
		"fd12:3456::1":           "private",
		"fe80::1":                "link-local",
		"100.64.0.1":             "carrier-grade NAT",
		"100.127.255.254":        "carrier-grade NAT",
		"0.0.0.0":                "unspecified",
		"::":                     "unspecified",
		"0.1.2.3":                "this network",
		"::ffff:127.0.0.1":       "loopback",
		"::ffff:10.0.0.1":        "private",
		"::ffff:169.254.169.254": "link-local",
		"239.1.2.3":              "multicast",
		"ff02::1":                "link-local",
	}
	for s, why := range refused {
		err := CheckAddr(netip.MustParseAddr(s))
		var be *BlockedError
		require.True(t, errors.As(err, &be), s)
		require.Contains(t, err.Error(), why, s)
		require.Contains(t, err.Error(), EnvAllowedAPIBases, s)
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"} {
		require.NoError(t, CheckAddr(netip.MustParseAddr(s)), s)
	}
}

func TestParseAndCovers(t *testing.T) {
	t.Parallel()
	p, err := Parse(" http://vllm.internal:8000/v1=VLLM_KEY, https://api.together.xyz/v1/ =TOGETHER_API_KEY,http://127.0.0.1:9000 ")
	require.NoError(t, err)
	a, ok := p.Covers("http://vllm.internal:8000/v1")
	require.True(t, ok)
	require.Equal(t, Allowed{Prefix: "http://vllm.internal:8000/v1", KeyVar: "VLLM_KEY"}, a)
	a, ok = p.Covers("HTTPS://API.Together.xyz/v1/chat")
	require.True(t, ok)
	require.Equal(t, "TOGETHER_API_KEY", a.KeyVar)
	a, ok = p.Covers("http://127.0.0.1:9000/anything")
	require.True(t, ok)
	require.Empty(t, a.KeyVar)
	for _, no := range []string{"http://vllm.internal:8000/v10", "http://vllm.internal:8001/v1", "https://vllm.internal:8000/v1",
		"http://vllm.internal:8000", "http://127.0.0.1:90000", "http://evil.example/http://vllm.internal:8000/v1"} {
		_, ok := p.Covers(no)
		require.False(t, ok, no)
	}
	_, ok = Policy{}.Covers("http://vllm.internal:8000/v1")
	require.False(t, ok)

	for _, bad := range []string{"ftp://x/v1", "vllm.internal:8000", "http://x/v1=1BAD", "http://u:p@x/v1", "http:///v1"} {
		_, err := Parse(bad)
		require.ErrorContains(t, err, EnvAllowedAPIBases, bad)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckURL("http://gpu-box.internal:8000/v1"))
	require.NoError(t, CheckURL("https://api.example.com/v1"))
	for _, bad := range []string{"", "file:///etc/passwd", "gopher://x", "//x/v1", "http://", "not a url", "http://user:pw@x/v1", "javascript:alert(1)"} {
		require.Error(t, CheckURL(bad), bad)
	}
}

// The client for a tenant URL refuses a loopback listener (so nothing
// reaches it), follows no redirect, and reaches an allowed prefix.
func TestClient(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://127.0.0.1:1/v1", http.StatusFound)
		}
	}))
	defer srv.Close()

	_, err := Policy{}.Client(srv.URL).Get(srv.URL + "/v1")
	var be *BlockedError
	require.True(t, errors.As(err, &be), "%v", err)
	require.Zero(t, hits.Load())

	// By name: "localhost" is no IP until resolved; the dial-time check sees
	// what it resolved to.
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, err = Policy{}.Client("http://localhost:" + port).Get("http://localhost:" + port + "/v1")
	require.True(t, errors.As(err, &be), "%v", err)
	require.Zero(t, hits.Load())

	p, err := Parse(srv.URL)
	require.NoError(t, err)
	resp, err := p.Client(srv.URL).Get(srv.URL + "/v1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, int32(1), hits.Load())

	_, err = p.Client(srv.URL).Get(srv.URL + "/redirect")
	require.ErrorContains(t, err, "refusing to follow a redirect")
}

// DNS rebinding: a name that first resolves to a public address and then
// to loopback. The check runs on the address each dial actually uses, so
// the second resolution is refused whatever an earlier check saw.
func TestDialChecksTheResolvedAddressEachTime(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	var queries atomic.Int32
	go serveDNS(pc, func() netip.Addr {
		if queries.Add(1) == 1 {
			return netip.MustParseAddr("192.0.2.1") // TEST-NET-1: public as far as the rule goes, unroutable
		}
		return netip.MustParseAddr("127.0.0.1")
	})
	d := Dialer()
	d.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", pc.LocalAddr().String())
	}}

	// First resolution: 192.0.2.1 passes the rule (the dial itself then
	// fails or times out: it is not a blocked error).
	ctx, cancel := context.WithTimeout(context.Background(), 200e6)
	defer cancel()
	_, err = d.DialContext(ctx, "tcp4", "rebind.test:80")
	var be *BlockedError
	require.False(t, errors.As(err, &be), "%v", err)

	_, err = d.DialContext(context.Background(), "tcp4", "rebind.test:80")
	require.True(t, errors.As(err, &be), "%v", err)
	require.Equal(t, "127.0.0.1:80", be.Address)
	require.GreaterOrEqual(t, queries.Load(), int32(2))
}

// serveDNS answers every A question with addr() (TTL 0).
func serveDNS(pc net.PacketConn, addr func() netip.Addr) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if q.Type == dnsmessage.TypeA {
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: addr().As4()})
		}
		out, err := b.Finish()
		if err == nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

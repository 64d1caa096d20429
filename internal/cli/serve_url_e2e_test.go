package cli_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// serveURL runs `meka serve url` and returns the link it prints.
func serveURL(t testing.TB, dir string, env []string, args ...string) *url.URL {
	t.Helper()
	cmd := exec.Command(mekaBinary(t), append([]string{"serve", "url"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("meka serve url: %v: %s", err, out)
	}
	u, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// exchangeLink posts a link's code the way the page does.
func exchangeLink(t *testing.T, client *http.Client, link *url.URL) *http.Response {
	t.Helper()
	frag, err := url.ParseQuery(link.Fragment)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"code": frag.Get("code")})
	origin := link.Scheme + "://" + link.Host
	req, _ := http.NewRequest("POST", origin+"/v1/login", strings.NewReader(string(b)))
	req.Header.Set("Origin", origin)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestServeURLPrintsAOneTimeLink(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	sc, _ := script.Parse([]byte(`{"rounds":[]}`))
	model := modeltest.NewServer(t, sc)
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	link := serveURL(t, work, env, "--session", rec.ID)
	su, _ := url.Parse(srv.url)
	if link.Scheme != "http" || link.Hostname() != "127.0.0.1" || link.Port() != su.Port() || link.Path != "/" || link.RawQuery != "" {
		t.Fatalf("link %s, server %s", link, srv.url)
	}
	frag, _ := url.ParseQuery(link.Fragment)
	if frag.Get("session") != rec.ID || len(frag.Get("code")) < 40 || strings.Contains(link.String(), srv.token) {
		t.Fatalf("link fragment %q", link.Fragment)
	}
	res := exchangeLink(t, http.DefaultClient, link)
	if res.StatusCode != 204 || len(res.Cookies()) != 1 || !res.Cookies()[0].HttpOnly {
		t.Fatalf("exchange: %d %v", res.StatusCode, res.Header["Set-Cookie"])
	}
	if res := exchangeLink(t, http.DefaultClient, link); res.StatusCode != 401 {
		t.Fatalf("reused link: %d", res.StatusCode)
	}
}

func TestServeBeyondLoopbackNeedsTLS(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "MEKA_DATA_DIR="+data)
	cmd := exec.Command(mekaBinary(t), "serve", "--listen", "0.0.0.0:0")
	cmd.Dir, cmd.Env = work, env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "tls_cert") {
		t.Fatalf("serve on 0.0.0.0 without TLS: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "serve.json")); err == nil {
		t.Fatal("a refused serve wrote serve.json")
	}
}

func TestServeOverTLS(t *testing.T) {
	work, data, cfgDir := t.TempDir(), t.TempDir(), t.TempDir()
	writeSelfSigned(t, filepath.Join(cfgDir, "cert.pem"), filepath.Join(cfgDir, "key.pem"))
	cfg := filepath.Join(cfgDir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[serve]\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, _ := script.Parse([]byte(`{"rounds":[]}`))
	model := modeltest.NewServer(t, sc)
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data, "MEKA_CONFIG="+cfg)
	srv := startServe(t, work, env)
	if !strings.HasPrefix(srv.url, "https://127.0.0.1:") {
		t.Fatalf("serve over TLS listens on %s", srv.url)
	}
	link := serveURL(t, work, env)
	if link.Scheme != "https" {
		t.Fatalf("link %s", link)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res := exchangeLink(t, client, link)
	if res.StatusCode != 204 || len(res.Cookies()) != 1 || !res.Cookies()[0].Secure {
		t.Fatalf("exchange over TLS: %d %v", res.StatusCode, res.Header["Set-Cookie"])
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key.
func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "meka test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

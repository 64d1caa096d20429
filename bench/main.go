// Command bench measures meka against a floor agent (bench/floor, the
// least a Go ACP agent can do) side by side, in one run, against a
// zero-latency model server on 127.0.0.1: spawn to initialize, session/new,
// a prompt's round trip, one-shot wall time, the CPU time (user and
// system) each process spent (which a loaded machine inflates less than
// wall time), peak RSS and anonymous memory, the first model request's
// size, and the binaries' sizes. Each figure is the median of -n runs (at
// least 9). It prints a table and writes JSON.
//
//	bench/run                   # or: go run ./bench -n 15 -o /tmp/b.json
//
// It is not part of the tests: .ci/run does not run it.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

func main() {
	n := flag.Int("n", 9, "runs per measurement (at least 9)")
	out := flag.String("o", filepath.Join("bench", "results.json"), "write the results as JSON here")
	flag.Parse()
	if err := run(max(*n, 9), *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// agent is one side of the comparison.
type agent struct {
	Name string   `json:"name"`
	bin  string   // the binary
	acp  []string // arguments that serve ACP on stdio
	one  []string // arguments that run one prompt and exit, before the prompt
}

// sample is one run of an agent.
type sample struct {
	initialize, sessionNew, prompt, oneshot time.Duration
	acpCPU, oneshotCPU                      time.Duration
	rssKB, privateKB, oneshotRSSKB          int64
	requestBytes                            int
}

// Result is an agent's medians.
type Result struct {
	Name           string  `json:"name"`
	InitializeMS   float64 `json:"initialize_ms"`
	SessionNewMS   float64 `json:"session_new_ms"`
	PromptMS       float64 `json:"prompt_ms"`
	OneshotMS      float64 `json:"oneshot_ms"`
	ACPCPUMS       float64 `json:"acp_cpu_ms"`
	OneshotCPUMS   float64 `json:"oneshot_cpu_ms"`
	PeakRSSKB      int64   `json:"peak_rss_kb"`
	PrivateKB      int64   `json:"anonymous_kb"`
	OneshotRSSKB   int64   `json:"oneshot_peak_rss_kb"`
	FirstRequestB  int     `json:"first_request_bytes"`
	BinaryBytes    int64   `json:"binary_bytes"`
	StrippedBinary int64   `json:"stripped_binary_bytes"`
}

// Report is what the JSON file holds.
type Report struct {
	Date   time.Time `json:"date"`
	Commit string    `json:"commit,omitempty"`
	Go     string    `json:"go"`
	OS     string    `json:"os"`
	CPUs   int       `json:"cpus"`
	Runs   int       `json:"runs"`
	Meka   Result    `json:"meka"`
	Floor  Result    `json:"floor"`
}

func run(n int, out string) error {
	tmp, err := os.MkdirTemp("", "meka-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	meka := agent{Name: "meka", bin: filepath.Join(tmp, "meka"), acp: []string{"acp"}, one: []string{"--oneshot"}}
	floor := agent{Name: "floor", bin: filepath.Join(tmp, "floor"), one: []string{"-oneshot"}}
	sizes := map[string][2]int64{}
	for _, b := range []struct {
		a   *agent
		pkg string
	}{{&meka, "./cmd/meka"}, {&floor, "./bench/floor"}} {
		// As go install builds it, and as a release would (no paths, no symbols).
		plain, err := build(b.a.bin, b.pkg)
		if err != nil {
			return err
		}
		stripped, err := build(b.a.bin+".stripped", b.pkg, "-trimpath", "-ldflags=-s -w")
		if err != nil {
			return err
		}
		sizes[b.a.Name] = [2]int64{plain, stripped}
	}

	// Every prompt gets one short reply; enough rounds for every run.
	var rounds []string
	for range 4*n + 8 {
		rounds = append(rounds, `{"text":"ok","usage":{"input_tokens":10,"output_tokens":1}}`)
	}
	s, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		return err
	}
	srv, err := modeltest.Start(s)
	if err != nil {
		return err
	}
	defer srv.Close()

	home := filepath.Join(tmp, "home")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"MEKA_DATA_DIR=" + filepath.Join(home, "data"), "OPENAI_API_KEY=bench", "OPENAI_BASE_URL=" + srv.URL + "/v1"}

	rep := Report{Date: time.Now().UTC(), Commit: commit(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Runs: n}
	// The two agents take turns, run by run, so that what else the machine
	// does at a moment weighs on both alike.
	agents := []agent{meka, floor}
	samples := make([][]sample, len(agents))
	for i := range n + 1 { // the first run warms the page cache and the database
		for j, a := range agents {
			sm, err := measure(a, env, work, srv)
			if err != nil {
				return fmt.Errorf("%s: %w", a.Name, err)
			}
			if i > 0 {
				samples[j] = append(samples[j], sm)
			}
		}
	}
	for j, a := range agents {
		r := medians(a.Name, samples[j])
		r.BinaryBytes, r.StrippedBinary = sizes[a.Name][0], sizes[a.Name][1]
		if a.Name == "meka" {
			rep.Meka = r
		} else {
			rep.Floor = r
		}
	}
	printTable(os.Stdout, rep)
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n", out)
	return nil
}

func build(dst, pkg string, flags ...string) (int64, error) {
	args := append(append([]string{"build", "-o", dst}, flags...), pkg)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// measure runs one ACP session (initialize, session/new, one prompt) and
// one one-shot prompt.
func measure(a agent, env []string, work string, srv *modeltest.Server) (sample, error) {
	var sm sample
	cmd := exec.Command(a.bin, a.acp...)
	cmd.Env, cmd.Dir = env, work
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return sm, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return sm, err
	}
	c := &client{w: stdin, r: bufio.NewReader(stdout)}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sm, err
	}
	fail := func(err error) (sample, error) {
		stdin.Close()
		cmd.Wait()
		return sm, fmt.Errorf("%w\nstderr: %s", err, stderr.String())
	}
	if _, err := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`); err != nil {
		return fail(err)
	}
	sm.initialize = time.Since(start)
	t := time.Now()
	res, err := c.call("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, work))
	if err != nil {
		return fail(err)
	}
	sm.sessionNew = time.Since(t)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &sess); err != nil {
		return fail(err)
	}
	before := len(srv.Requests())
	t = time.Now()
	if _, err := c.call("session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"say ok"}]}`, sess.SessionID)); err != nil {
		return fail(err)
	}
	sm.prompt = time.Since(t)
	reqs := srv.Requests()
	if len(reqs) <= before {
		return fail(errors.New("the prompt sent no model request"))
	}
	sm.requestBytes = len(reqs[before].Body)
	sm.privateKB = privateKB(cmd.Process.Pid)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return sm, fmt.Errorf("acp exit: %v\nstderr: %s", err, stderr.String())
	}
	sm.rssKB = maxRSSKB(cmd.ProcessState)
	sm.acpCPU = cpu(cmd.ProcessState)

	one := exec.Command(a.bin, append(a.one, "say ok")...)
	one.Env, one.Dir = env, work
	t = time.Now()
	if out, err := one.CombinedOutput(); err != nil {
		return sm, fmt.Errorf("one-shot: %v\n%s", err, out)
	}
	sm.oneshot = time.Since(t)
	sm.oneshotRSSKB = maxRSSKB(one.ProcessState)
	sm.oneshotCPU = cpu(one.ProcessState)
	return sm, nil
}

// cpu is the user and system time a process spent.
func cpu(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

// client is the least ACP client: one request at a time, notifications
// skipped.
type client struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

func (c *client) call(method, params string) (json.RawMessage, error) {
	c.next++
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.next, method, params); err != nil {
		return nil, err
	}
	for range 10000 {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" || *m.ID != c.next {
			continue // a notification, or a request the benchmark does not answer
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error)
		}
		return m.Result, nil
	}
	return nil, fmt.Errorf("%s: no response in 10000 lines", method)
}

// privateKB reads the process's anonymous memory (heap, stacks: what is
// not the binary or a file mapped in) from /proc; 0 where there is none.
func privateKB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	var kb int64
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Anonymous:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			kb += v
		}
	}
	return kb
}

func medians(name string, ss []sample) Result {
	dur := func(f func(sample) time.Duration) float64 {
		v := make([]time.Duration, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return float64(v[len(v)/2].Microseconds()) / 1000
	}
	num := func(f func(sample) int64) int64 {
		v := make([]int64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return Result{
		Name:          name,
		InitializeMS:  dur(func(s sample) time.Duration { return s.initialize }),
		SessionNewMS:  dur(func(s sample) time.Duration { return s.sessionNew }),
		PromptMS:      dur(func(s sample) time.Duration { return s.prompt }),
		OneshotMS:     dur(func(s sample) time.Duration { return s.oneshot }),
		ACPCPUMS:      dur(func(s sample) time.Duration { return s.acpCPU }),
		OneshotCPUMS:  dur(func(s sample) time.Duration { return s.oneshotCPU }),
		PeakRSSKB:     num(func(s sample) int64 { return s.rssKB }),
		PrivateKB:     num(func(s sample) int64 { return s.privateKB }),
		OneshotRSSKB:  num(func(s sample) int64 { return s.oneshotRSSKB }),
		FirstRequestB: int(num(func(s sample) int64 { return int64(s.requestBytes) })),
	}
}

func printTable(w io.Writer, r Report) {
	fmt.Fprintf(w, "meka %s vs floor: medians of %d runs, %s, %s, %d CPUs\n\n", r.Commit, r.Runs, r.Go, r.OS, r.CPUs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tmeka\tfloor\tmeka/floor\t")
	ms := func(label string, m, f float64) {
		fmt.Fprintf(tw, "%s\t%.1f ms\t%.1f ms\t%.1fx\t\n", label, m, f, m/f)
	}
	mb := func(label string, m, f int64) {
		fmt.Fprintf(tw, "%s\t%.1f MB\t%.1f MB\t%.1fx\t\n", label, float64(m)/1e6, float64(f)/1e6, float64(m)/float64(f))
	}
	ms("spawn to initialize", r.Meka.InitializeMS, r.Floor.InitializeMS)
	ms("session/new", r.Meka.SessionNewMS, r.Floor.SessionNewMS)
	ms("prompt (zero-latency model)", r.Meka.PromptMS, r.Floor.PromptMS)
	ms("one-shot wall time", r.Meka.OneshotMS, r.Floor.OneshotMS)
	ms("CPU, acp session (user+sys)", r.Meka.ACPCPUMS, r.Floor.ACPCPUMS)
	ms("CPU, one-shot (user+sys)", r.Meka.OneshotCPUMS, r.Floor.OneshotCPUMS)
	mb("peak RSS, acp session", r.Meka.PeakRSSKB*1000, r.Floor.PeakRSSKB*1000)
	mb("anonymous memory, acp session", r.Meka.PrivateKB*1000, r.Floor.PrivateKB*1000)
	mb("peak RSS, one-shot", r.Meka.OneshotRSSKB*1000, r.Floor.OneshotRSSKB*1000)
	fmt.Fprintf(tw, "first model request\t%.1f KB\t%.1f KB\t\t\n", float64(r.Meka.FirstRequestB)/1000, float64(r.Floor.FirstRequestB)/1000)
	mb("binary (go install)", r.Meka.BinaryBytes, r.Floor.BinaryBytes)
	mb("binary (-trimpath -s -w)", r.Meka.StrippedBinary, r.Floor.StrippedBinary)
	tw.Flush()
}

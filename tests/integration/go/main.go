// Command gopeer drives Apache's Go RocketMQ client (github.com/apache/rocketmq-client-go/v2) for the
// project's integration tests. It speaks the JSON-lines peer protocol of tests/integration/cpp_peer/peer.py
// (read that module's docstring): every line on stdout is one JSON object with an "event" key, nothing else
// is printed there; the Go client's own logs go to stderr.
//
// Usage: gopeer <command> --namesrv HOST:PORT[;HOST:PORT] [options] --timeout SECONDS
//
// Commands: send-sync, send-async, send-oneway, send-orderly, send-batch (messages from --spec - on stdin,
// or from --body/--tags/--keys/--property), push-consume, route, probe.
//
// Exit codes: 0 done; 2 bad arguments or message spec; 3 the peer's own deadline passed; 4 the client
// reported an error; 6 a consumer got fewer messages than --count; 7 the parent process went away; 1 an
// internal error of this program. (A panic inside the Go client ends the process with Go's exit code 2
// and a stack trace on stderr, without an "error" line: an exit 2 is a usage error only with its
// UsageError line.)
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

const (
	exitOK          = 0
	exitInternal    = 1
	exitUsage       = 2
	exitTimeout     = 3
	exitClientError = 4
	exitIncomplete  = 6
	exitOrphaned    = 7

	// clientModule is the Go client this program is built against (see go.mod).
	clientModule = "github.com/apache/rocketmq-client-go/v2"
	// parentPIDEnv is set by the runner to its own pid (the parent seen at start-up may already be a reaper).
	parentPIDEnv = "CPP_PEER_PARENT_PID"
)

// usageError is a bad argument or message spec: reported as an "error" line and exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// field is one key and value of an event, kept in order so that "event" comes first on every line.
type field struct {
	key   string
	value any
}

// F is shorthand for a field.
func F(key string, value any) field { return field{key, value} }

// output writes JSON lines to stdout from any goroutine (consumer callbacks run on the client's own).
type output struct {
	mu sync.Mutex
}

var out = &output{}

func encodeLine(event string, fields []field) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"event":`)
	writeJSON(&buf, event)
	for _, f := range fields {
		buf.WriteByte(',')
		writeJSON(&buf, f.key)
		buf.WriteByte(':')
		writeJSON(&buf, f.value)
	}
	buf.WriteString("}\n")
	return buf.Bytes()
}

func writeJSON(buf *bytes.Buffer, value any) {
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		enc.Encode(fmt.Sprintf("<unencodable %T: %v>", value, err)) //nolint:errcheck
	}
	buf.Write(bytes.TrimRight(one.Bytes(), "\n"))
}

func (o *output) emit(event string, fields ...field) {
	line := encodeLine(event, fields)
	o.mu.Lock()
	defer o.mu.Unlock()
	os.Stdout.Write(line) //nolint:errcheck
}

// tryEmit is emit that gives up after a second: the watchdog must exit even if stdout is stuck.
func (o *output) tryEmit(event string, fields ...field) {
	line := encodeLine(event, fields)
	done := make(chan struct{})
	go func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		os.Stdout.Write(line) //nolint:errcheck
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// progress is what the watchdog reports if it has to end the run.
type progress struct {
	mu    sync.Mutex
	stage string
	count int
	index *int
}

func (p *progress) set(stage string, index int) {
	p.mu.Lock()
	p.stage, p.index = stage, &index
	p.mu.Unlock()
}

func (p *progress) setStage(stage string) {
	p.mu.Lock()
	p.stage = stage
	p.mu.Unlock()
}

func (p *progress) add(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count += n
	return p.count
}

func (p *progress) snapshot() []field {
	p.mu.Lock()
	defer p.mu.Unlock()
	var index any
	if p.index != nil {
		index = *p.index
	}
	return []field{F("stage", p.stage), F("count", p.count), F("index", index)}
}

func (p *progress) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

// watchdog ends the process at its deadline, or as soon as its parent is gone.
type watchdog struct {
	mu       sync.Mutex
	seconds  float64
	deadline time.Time
	parent   int
	state    *progress
}

func startWatchdog(seconds float64, state *progress) *watchdog {
	parent := os.Getppid()
	if value, err := strconv.Atoi(os.Getenv(parentPIDEnv)); err == nil && value > 0 {
		parent = value
	}
	w := &watchdog{
		seconds:  seconds,
		deadline: time.Now().Add(time.Duration(seconds * float64(time.Second))),
		parent:   parent,
		state:    state,
	}
	go w.run()
	return w
}

// extend moves the deadline to at least seconds from now (the work is done; shutdown gets its time).
func (w *watchdog) extend(seconds float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	later := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	if later.After(w.deadline) {
		w.deadline = later
	}
}

func (w *watchdog) run() {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for range ticker.C {
		if os.Getppid() != w.parent {
			out.tryEmit("error", F("error_type", "Orphaned"), F("message", "parent process went away"))
			os.Exit(exitOrphaned)
		}
		w.mu.Lock()
		expired := !time.Now().Before(w.deadline)
		w.mu.Unlock()
		if expired {
			out.tryEmit("timeout", append([]field{F("after_s", w.seconds)}, w.state.snapshot()...)...)
			os.Exit(exitTimeout)
		}
	}
}

// clientVersion is the Go client's module version as built into this binary.
func clientVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == clientModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

func run(argv []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n%s", r, debug.Stack())
			out.tryEmit("error", F("error_type", "InternalPanic"), F("message", fmt.Sprint(r)))
			code = exitInternal
		}
	}()
	opts, err := parseArgs(argv)
	if err != nil {
		out.emit("error", F("error_type", "UsageError"), F("message", err.Error()))
		return exitUsage
	}
	state := &progress{stage: "starting"}
	// The push consumer times out gracefully on its own (hence the margin); the watchdog is the backstop
	// for a client call that never returns.
	margin := 0.0
	if opts.command == "push-consume" {
		margin = 2.0
	}
	dog := startWatchdog(opts.timeout+margin, state)
	if err := configureClient(opts); err != nil {
		out.emit("error", F("error_type", "UsageError"), F("message", err.Error()))
		return exitUsage
	}
	env := &runEnv{opts: opts, state: state, dog: dog, started: time.Now()}
	code, err = commands[opts.command](env)
	if err != nil {
		var usage *usageError
		if ok := asUsage(err, &usage); ok {
			out.emit("error", F("error_type", "UsageError"), F("message", usage.msg))
			return exitUsage
		}
		out.emit("error", F("error_type", "ClientError"), F("message", err.Error()))
		return exitClientError
	}
	return code
}

func asUsage(err error, target **usageError) bool {
	u, ok := err.(*usageError)
	if ok {
		*target = u
	}
	return ok
}

func main() {
	code := run(os.Args[1:])
	os.Stdout.Sync() //nolint:errcheck
	os.Stderr.Sync() //nolint:errcheck
	os.Exit(code)
}

func goVersion() string { return runtime.Version() }
